"""Tests of operations."""

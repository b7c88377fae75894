"""Tests of the call console."""

"""Tests of recording calls."""

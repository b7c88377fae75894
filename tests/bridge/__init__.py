"""Tests of the call bridge."""

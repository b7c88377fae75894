"""Tests of the agent side and the offline model."""

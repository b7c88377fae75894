"""Tests of replays and the demo."""

"""Moved to :mod:`tests.fakes.audio` (importable by benchmarks); re-exported for the tests."""

from tests.fakes.audio import (
    dominant_hz,
    frame_hz,
    pcm,
    rms_dbfs,
)

__all__ = [
    "dominant_hz",
    "frame_hz",
    "pcm",
    "rms_dbfs",
]

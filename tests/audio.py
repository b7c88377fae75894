"""Moved to :mod:`telephony.simulation.fakes.audio` (importable by benchmarks); re-exported for the tests."""

from telephony.simulation.fakes.audio import (
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

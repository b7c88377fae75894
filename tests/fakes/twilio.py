"""Moved to :mod:`telephony.simulation.fakes.twilio_call` (importable by benchmarks); re-exported for the tests."""

from telephony.simulation.fakes.twilio_call import (
    FRAME_BYTES,
    FRAME_SECONDS,
    ULAW_SILENCE,
    FakeTwilioCall,
    Heard,
    Received,
)

__all__ = [
    "FRAME_BYTES",
    "FRAME_SECONDS",
    "ULAW_SILENCE",
    "FakeTwilioCall",
    "Heard",
    "Received",
]

"""Moved to :mod:`telephony.simulation.fakes.twilio_calls` (importable by benchmarks); re-exported for the tests."""

from telephony.simulation.fakes.twilio_calls import (
    Conference,
    FakeCall,
    FakeTwilio,
    Participant,
    Person,
    new_sid,
)

__all__ = [
    "Conference",
    "FakeCall",
    "FakeTwilio",
    "Participant",
    "Person",
    "new_sid",
]

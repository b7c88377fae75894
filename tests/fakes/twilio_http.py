"""Moved to :mod:`telephony.simulation.fakes.twilio_http` (importable by benchmarks); re-exported for the tests."""

from telephony.simulation.fakes.twilio_http import (
    API,
    RecordingHttpClient,
    Reply,
    form_fields,
)

__all__ = [
    "API",
    "RecordingHttpClient",
    "Reply",
    "form_fields",
]

"""The fake Twilio: a caller that answers the bot's TwiML and speaks Media Streams, its scripts, its voice,
and Twilio's REST side of a simulated call (hang-ups and transfers written down).

``telephony.simulation.caller`` was one module; its names are re-exported here so old imports keep working.
"""

from .simulated_caller import (
    FIRST_TIMESTAMP_MS,
    FRAME_SECONDS,
    ULAW_SILENCE,
    AnswerError,
    Heard,
    Received,
    SimulatedCaller,
    StreamTarget,
    answer,
    parse_stream,
    twilio_signature,
)

__all__ = [
    "FIRST_TIMESTAMP_MS",
    "FRAME_SECONDS",
    "ULAW_SILENCE",
    "AnswerError",
    "Heard",
    "Received",
    "SimulatedCaller",
    "StreamTarget",
    "answer",
    "parse_stream",
    "twilio_signature",
]

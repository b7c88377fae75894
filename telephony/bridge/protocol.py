"""The earlier home of Twilio's Media Streams wire format: now :mod:`telephony.twilio.media_streams`.

Kept so old imports (``from telephony.bridge.protocol import parse_message``) keep working.
"""

from telephony.twilio.media_streams import (
    MAX_MESSAGE_BYTES,
    Connected,
    Dtmf,
    Mark,
    Media,
    MediaFormat,
    ProtocolError,
    Start,
    Stop,
    TwilioMessage,
    UnknownEvent,
    clear_message,
    mark_message,
    media_message,
    parse_message,
)

__all__ = [
    "MAX_MESSAGE_BYTES",
    "Connected",
    "Dtmf",
    "Mark",
    "Media",
    "MediaFormat",
    "ProtocolError",
    "Start",
    "Stop",
    "TwilioMessage",
    "UnknownEvent",
    "clear_message",
    "mark_message",
    "media_message",
    "parse_message",
]

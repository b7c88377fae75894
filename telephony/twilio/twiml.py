"""TwiML we generate: connect a call to our media stream, or hand it to a phone number / SIP URI.

Built with the SDK's TwiML builder, which escapes every value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from twilio.twiml.voice_response import Connect, Dial, Stream, VoiceResponse

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
"""Characters XML 1.0 cannot carry at all, escaped or not: the builder would emit a broken document."""


def xml_safe(value: str) -> str:
    """``value`` without characters XML cannot hold (webhook fields are caller-controlled)."""
    return _NOT_XML.sub("", value)


def connect_twiml(url: str, parameters: Mapping[str, str], status_callback: str | None = None) -> str:
    """Stream the call to ``url`` with ``parameters``. Nothing follows ``<Connect>``, so closing the
    socket ends the call."""
    response = VoiceResponse()
    connect = Connect()
    options = {"status_callback": status_callback, "status_callback_method": "POST"} if status_callback else {}
    stream = Stream(url=url, **options)
    for name, value in parameters.items():
        stream.parameter(name=xml_safe(name), value=xml_safe(value))
    connect.append(stream)
    response.append(connect)
    return str(response)


BUSY_MESSAGES = {
    "busy": "Sorry, all our lines are busy right now. Please call again in a few minutes. Goodbye.",
    "draining": "Sorry, we are restarting our phone service. Please call again in a minute. Goodbye.",
}


def busy_twiml(reason: str) -> str:
    """A polite spoken refusal, then hang up: what a caller beyond the limit hears."""
    response = VoiceResponse()
    response.say(BUSY_MESSAGES.get(reason, BUSY_MESSAGES["busy"]))
    response.hangup()
    return str(response)


def dial_twiml(destination: str) -> str:
    """Connect the caller to a phone number or a SIP URI (a transfer)."""
    response = VoiceResponse()
    dial = Dial()
    if destination.startswith("sip:"):
        dial.sip(destination)
    else:
        dial.number(destination)
    response.append(dial)
    return str(response)

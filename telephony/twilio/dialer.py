"""Placing outbound calls: Twilio dials the callee and streams the answered call to the bot.

The call carries its TwiML inline (``twiml=``), so an outbound call needs no ``/twiml`` webhook
round trip; per-call data travels as ``<Parameter>``s because Twilio drops query strings from
stream URLs.
"""

from __future__ import annotations

import re
from typing import Any

from twilio.rest import Client

from telephony.config import E164
from telephony.twilio.twiml import connect_twiml

MAX_TWIML_CHARS = 4000
"""Twilio rejects longer inline TwiML on ``calls.create``."""

CALL_STATUS_EVENTS = ("initiated", "ringing", "answered", "completed")
_CLIENT = re.compile(r"client:[^\s:]+")
_SIP = re.compile(r"sip:[^\s@]+@[^\s@]+")
_PARAMETER_NAME = re.compile(r"[A-Za-z0-9_-]+")


def _check_address(label: str, address: str) -> None:
    if not (E164.fullmatch(address) or _CLIENT.fullmatch(address) or _SIP.fullmatch(address)):
        raise ValueError(
            f"{label}={address!r} is not a phone number in E.164 form (+ then 8-15 digits, no spaces, "
            "e.g. +14155550123) nor a client:NAME or sip:USER@HOST address"
        )


def _check_parameter_name(name: str) -> None:
    if not _PARAMETER_NAME.fullmatch(name):
        raise ValueError(f"parameter name {name!r} may contain only letters, digits, _ and -")


def _check_stream_url(url: str) -> None:
    if not url.startswith("wss://"):
        raise ValueError(f"stream URL {url!r} must start with wss:// (Twilio streams only over TLS)")
    if "?" in url:
        raise ValueError(f"stream URL {url!r} has a query string, which Twilio drops: use parameters instead")


async def place_call(
    client: Client,
    *,
    to: str,
    from_: str,
    stream_url: str,
    parameters: dict[str, str],
    status_callback: str | None = None,
    machine_detection: bool = False,
    amd_callback: str | None = None,
) -> str:
    """Dial ``to`` from ``from_`` and stream the answered call to ``stream_url``; returns the Call SID.

    Answering-machine detection runs asynchronously (the stream starts at once; Twilio posts the
    verdict to ``amd_callback``) so the callee never hears seconds of silence while Twilio listens.
    """
    _check_address("to", to)
    _check_address("from_", from_)
    _check_stream_url(stream_url)
    for name in parameters:
        _check_parameter_name(name)
    if machine_detection and not amd_callback:
        raise ValueError("machine detection needs amd_callback: the URL Twilio posts the AMD result to")
    if amd_callback and not machine_detection:
        raise ValueError("amd_callback is only used with machine_detection=True")

    twiml = connect_twiml(stream_url, parameters)
    if len(twiml) > MAX_TWIML_CHARS:
        raise ValueError(
            f"the call's TwiML is {len(twiml)} characters but Twilio accepts at most {MAX_TWIML_CHARS}: "
            "pass fewer or shorter parameters"
        )

    options: dict[str, Any] = {}
    if status_callback:
        options.update(status_callback=status_callback, status_callback_event=list(CALL_STATUS_EVENTS))
    if machine_detection:
        options.update(machine_detection="Enable", async_amd="true", async_amd_status_callback=amd_callback)
    call = await client.calls.create_async(to=to, from_=from_, twiml=twiml, **options)
    if not call.sid:
        raise RuntimeError("Twilio created the call but returned no Call SID")
    return call.sid


def parse_params(pairs: list[str]) -> dict[str, str]:
    """``--param key=value`` pairs as a dict; the value may be empty or contain ``=``."""
    parameters: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--param {pair!r}: expected key=value")
        if not name:
            raise ValueError(f"--param {pair!r}: the key before '=' is empty")
        if not _PARAMETER_NAME.fullmatch(name):
            raise ValueError(f"--param {pair!r}: the key may contain only letters, digits, _ and -")
        if name in parameters:
            raise ValueError(f"--param {name!r} is given twice")
        parameters[name] = value
    return parameters

"""Our ``<Parameter>`` vocabulary: the names the app puts on a ``<Stream>`` for its own use.

Twilio drops query strings from ``<Stream url>``, so per-call data travels as ``<Parameter name value>`` and
comes back in ``start.customParameters``. Every name the app uses for itself starts with ``voicebot``; those
are internal (tokens, routing marks) and never reach the agent, the recording's public parameters or a
replay. Parameters a user adds to their own TwiML pass through untouched.
"""

from __future__ import annotations

from collections.abc import Mapping

PREFIX = "voicebot"
"""What every internal parameter name starts with."""

TOKEN = "voicebotToken"
"""The call token minted by ``/twiml`` (or by ``voicebot call``) that the media stream must present."""
CONSOLE = "voicebotConsole"
"""Marks a call placed from the browser console: its token is a console token."""
WARM = "voicebotWarm"
"""Added when the webhook pre-warmed an agent: the worker or replica that holds it."""
DIAL = "voicebotDial"
"""An outbound call (``voicebot call``, a transfer's person): its token is bound to ``dial:<id>``."""
BRIEFING = "voicebotBriefing"
"""On the person's stream in a warm transfer: the id of the transfer it briefs for."""
RETURN = "voicebotReturn"
"""On a caller's stream after a warm transfer that did not go through: that transfer's id."""

TRANSFER_OF = "transferOf"
"""Public, on the person's stream: the caller's call SID (kept in the briefing leg's recording)."""


def is_internal(name: str) -> bool:
    return name.startswith(PREFIX)


def public_only(parameters: Mapping[str, str]) -> dict[str, str]:
    """The parameters without our internal ones: what the agent, recordings and replays may see."""
    return {name: value for name, value in parameters.items() if not is_internal(name)}


__all__ = [
    "BRIEFING",
    "CONSOLE",
    "DIAL",
    "PREFIX",
    "RETURN",
    "TOKEN",
    "TRANSFER_OF",
    "WARM",
    "is_internal",
    "public_only",
]

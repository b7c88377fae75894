"""What an agent factory learns about the call it is built for."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

current_call_sid: ContextVar[str | None] = ContextVar("voicebot_call_sid", default=None)
"""The call SID of the call the running task serves, if any: set where a call's tasks begin (its session, its
pre-warmed agent) and inherited by every task they start, so code that holds no call (a model adapter) can still key
its log lines by call."""


@dataclass(frozen=True, slots=True)
class CallInfo:
    """One phone call, as known when its media stream starts.

    ``parameters`` holds every ``<Parameter>`` of the TwiML ``<Stream>`` (Twilio's
    ``start.customParameters``), including the ones we add ourselves (From, To, CallSid), but not
    our internal ``voicebot*`` ones (see ``telephony.twilio.media_streams.Start.call_info``).
    """

    call_sid: str
    stream_sid: str
    account_sid: str = ""
    from_number: str = ""
    to_number: str = ""
    parameters: dict[str, str] = field(default_factory=dict)
    history: tuple[dict[str, Any], ...] = ()
    """The conversation so far (Strands messages, text only) when a caller comes back from a warm transfer
    that did not go through; pass it to ``BidiAgent(messages=list(call.history))``. Empty otherwise."""
    transfer: TransferBrief | None = None
    """Set on the second leg of a warm transfer (the call to the person being briefed), else None."""


@dataclass(frozen=True, slots=True)
class TransferBrief:
    """What a briefing agent knows about the caller it is handing over (built from the caller's call).

    ``transcript`` is the caller's conversation with the bot so far, as ``(speaker, text)`` pairs where
    the speaker is ``"caller"`` or ``"bot"``; ``summary`` is the bot's own note for the colleague (the
    ``transfer_call`` tool asks for one), ``reason`` why it transferred.
    """

    caller_number: str
    destination: str
    reason: str = ""
    summary: str = ""
    transcript: tuple[tuple[str, str], ...] = ()

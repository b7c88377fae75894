"""What a warm transfer is: its states, its record, and what it needs from a call's session.

These are the shared types of the transfer package (and of the session, which hands calls off through
:class:`HandOff`); everything else in the package acts on a :class:`WarmTransfer`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from telephony.bridge.observer import Observers
from telephony.call_info import CallInfo, TransferBrief
from telephony.operations.logs import CallLog

TRANSCRIPT_LINES = 200
"""Most recent transcript lines a transfer keeps (and a session collects) for the briefing."""


class State(StrEnum):
    HOLDING = "holding"
    DIALLING = "dialling"
    RINGING = "ringing"
    BRIEFING = "briefing"
    JOINING = "joining"
    CONNECTED = "connected"
    RETURNING = "returning"
    RETURNED = "returned"
    ENDED = "ended"


SETTLED = {State.CONNECTED, State.RETURNED, State.ENDED}
WAITING = {State.DIALLING, State.RINGING, State.BRIEFING}
"""The caller is on hold and nobody has decided anything yet."""


@dataclass(frozen=True)
class HandOff:
    """What a session does once a hand-off action has run (see ``telephony.bridge.hand_offs.CallLeg.hand_off``)."""

    reason: str
    hang_up: bool = False
    """True: end the call (REST hang-up). False: the call has left this stream (moved elsewhere): just close."""


HandOffAction = Callable[[], Awaitable[HandOff | None]]
"""Runs once the bot's last words have been heard; None means the call goes on with the agent."""


class Leg(Protocol):
    """What a transfer needs from a call (``CallLeg`` in ``telephony.bridge.hand_offs``), without importing it."""

    call: CallInfo | None

    def tell_agent(self, text: str) -> None: ...

    def end_call(self, reason: str) -> None: ...

    def hand_off(self, reason: str, action: HandOffAction, now: bool = False) -> None: ...


class CallerTimeline:
    """The caller's recording and console feed while the transfer runs.

    The caller's session hands its observers over (:meth:`adopt`) only once it has ended; notes made before
    that are held and replayed, so the timeline reads in order."""

    def __init__(self) -> None:
        self._observers: Observers | None = None
        self._held: list[tuple[str, str]] = []

    @property
    def adopted(self) -> bool:
        return self._observers is not None

    def note(self, kind: str, detail: str) -> None:
        if self._observers is None:
            self._held.append((kind, detail))
        else:
            self._observers.notify("note", kind, detail)

    def adopt(self, observers: Observers) -> None:
        self._observers = observers
        for kind, detail in self._held:
            observers.notify("note", kind, detail)
        self._held.clear()

    async def close(self, reason: str, ended_by: str) -> None:
        """End the caller's recording and feed (once: later calls find nothing to close)."""
        observers, self._observers = self._observers, None
        if observers is not None:
            await observers.close(reason, ended_by)


@dataclass
class WarmTransfer:
    """One warm transfer: both legs, the conference, where it stands, and when things happened."""

    id: str
    caller: CallInfo
    brief: TransferBrief
    """What the person is told about the caller (destination, reason, the bot's summary, the transcript)."""
    history: tuple[dict[str, Any], ...]
    conference: str
    log: CallLog
    requested_at: float = field(default_factory=time.monotonic)
    state: State = State.HOLDING
    person_sid: str | None = None
    person_status: str = ""
    briefing: Leg | None = None
    answered_at: float | None = None
    briefing_heard_at: float | None = None
    outcome: str = ""
    what_happened: str = ""
    """In a few words, why the caller is back (what the returning agent is told)."""
    end_reason: str = ""
    """How the transfer ended, for the caller's recording and feed."""
    returned_stream: bool = False
    timers: list[asyncio.TimerHandle] = field(default_factory=list)
    timeline: CallerTimeline = field(default_factory=CallerTimeline)

    @property
    def destination(self) -> str:
        return self.brief.destination

    @property
    def reason(self) -> str:
        return self.brief.reason

    @property
    def summary(self) -> str:
        return self.brief.summary

    @property
    def transcript(self) -> tuple[tuple[str, str], ...]:
        return self.brief.transcript

    @property
    def settled(self) -> bool:
        return self.state in SETTLED

    @property
    def over_or_returning(self) -> bool:
        """Settled, or on its way back: nothing may start another return or end."""
        return self.state in SETTLED or self.state is State.RETURNING

    def note(self, kind: str, detail: str) -> None:
        """A line on the caller's timeline (recording, console feed)."""
        self.timeline.note(kind, detail)

    def elapsed(self) -> float:
        return time.monotonic() - self.requested_at

    def cancel_timers(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()

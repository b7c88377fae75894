"""What the fake Twilio keeps: the person dialled, calls, conferences and their participants, and new SIDs."""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field

from telephony.simulation.caller.simulated_caller import SimulatedCaller

_SIDS = itertools.count(1)


def new_sid(prefix: str) -> str:
    return f"{prefix}{next(_SIDS):032x}"


@dataclass
class Person:
    """How the dialled party behaves: answers after ``ring_s``, or gives Twilio's verdict ``outcome``."""

    ring_s: float = 0.0
    outcome: str = "answer"
    """``answer``, ``no-answer``, ``busy`` or ``failed``."""


@dataclass
class FakeCall:
    sid: str
    to: str
    from_: str
    status: str = "queued"
    status_callback: str | None = None
    events: tuple[str, ...] = ()
    answered_at: float | None = None
    """When it was answered (monotonic), for the ``CallDuration`` of its last callback."""
    streams: list[SimulatedCaller] = field(default_factory=list)
    conference: str | None = None
    hearing: str = ""
    """What the party hears now: ``bot``, ``hold:<wait url>``, ``conference``, ``dial:<whom>`` (a cold transfer),
    ``ringing`` or ``nothing``."""
    heard: list[tuple[float, str]] = field(default_factory=list)
    """Every change of ``hearing`` with when (monotonic)."""
    said: list[str] = field(default_factory=list)
    twimls: list[str] = field(default_factory=list)
    voice: bytearray = field(default_factory=bytearray)
    """What the party has said that the line has not sent yet (μ-law, whole frames)."""

    def __post_init__(self) -> None:
        self.over = asyncio.Event()

    @property
    def stream(self) -> SimulatedCaller:
        return self.streams[-1]

    def hear(self, what: str) -> None:
        self.hearing = what
        self.heard.append((time.monotonic(), what))


@dataclass
class Participant:
    call: FakeCall
    starts: bool
    ends: bool
    wait_url: str | None
    label: str
    callback: str | None


@dataclass
class Conference:
    name: str
    sid: str = field(default_factory=lambda: new_sid("CF"))
    participants: dict[str, Participant] = field(default_factory=dict)
    started: bool = False
    ended: bool = False
    callbacks: list[str] = field(default_factory=list)
    sequence: int = 0
    """The ``SequenceNumber`` of its last event."""

"""Time limits for one call: every call ends, whatever the caller, Twilio or the model do.

(An agent that stops answering is the dead-air guard's: telephony.bridge.dead_air.)

Pure bookkeeping (no I/O, no tasks): the session feeds it what happens and asks, a few times a
second, whether some limit has been reached. Each verdict is returned once.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Verdict(Enum):
    WARN = "the call is near its time limit"
    WRAP_UP = "the call must wrap up now"
    FORCE_END = "the call did not wrap up in time"
    STREAM_GONE = "no audio from Twilio: the stream is gone"


@dataclass(frozen=True)
class Limits:
    max_call_s: float = 3600.0
    warning_s: float = 60.0
    """How long before ``max_call_s`` the agent is told to start wrapping up."""
    caller_silence_s: float = 15.0
    """Twilio sends a frame every 20 ms even when nobody speaks; none for this long means the stream died."""
    wrap_up_s: float = 20.0
    """Time the agent gets to say goodbye (and have it heard) once told to wrap up."""


class CallClock:
    def __init__(self, limits: Limits, now: float) -> None:
        self.limits = limits
        self.started_at = now
        self._last_media = now
        self._wrap_up_deadline: float | None = None
        self._given: set[Verdict] = set()

    def media(self, now: float) -> None:
        self._last_media = now

    def wrap_up(self, now: float) -> None:
        """Start the wrap-up period now (e.g. the server is shutting down)."""
        if self._wrap_up_deadline is None:
            self._wrap_up_deadline = now + self.limits.wrap_up_s
            self._given.update({Verdict.WARN, Verdict.WRAP_UP})

    def check(self, now: float) -> Verdict | None:
        """The most urgent limit reached and not yet reported, or None."""
        for verdict in self._reached(now):
            if verdict not in self._given:
                self._given.add(verdict)
                if verdict is Verdict.WRAP_UP:
                    self.wrap_up(now)
                return verdict
        return None

    def _reached(self, now: float) -> list[Verdict]:
        limits, elapsed = self.limits, now - self.started_at
        reached = []
        if now - self._last_media >= limits.caller_silence_s:
            reached.append(Verdict.STREAM_GONE)
        if self._wrap_up_deadline is not None and now >= self._wrap_up_deadline:
            reached.append(Verdict.FORCE_END)
        if elapsed >= limits.max_call_s:
            reached.append(Verdict.WRAP_UP)
        if elapsed >= limits.max_call_s - limits.warning_s:
            reached.append(Verdict.WARN)
        return reached

"""Gemini Live's connection limit and refusals, reproducible in seconds.

A Live connection lasts about 10 minutes: some time before the end the service sends ``goAway`` with the time
left, then closes. Times are multiplied by ``time_scale`` so a test lives through it in a second or two.
Faults are queued and taken by new connections in order. Refusals are answered the way the service answers a bad
key, a used-up quota or an unknown model: it accepts the WebSocket, reads the ``setup`` and closes with a code.
A connection can also be told to go away sooner than its limit (the service sends ``goAway`` whenever it is about
to drop a connection, not only at the limit), or go quiet: never answer at all, or stop (or close with 1011)
part-way through an answer's audio (local Nova's ``MidAnswer``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

from telephony.simulation.local_nova.faults import MidAnswer

__all__ = ["Fault", "FaultQueue", "TimeLimits"]


@dataclass(frozen=True)
class TimeLimits:
    """The connection limit and when ``goAway`` comes before it, in service seconds; real = these x ``time_scale``."""

    connection_limit_s: float = 600.0
    go_away_notice_s: float = 50.0
    time_scale: float = 1.0

    @property
    def connection_limit(self) -> float:
        return self.connection_limit_s * self.time_scale

    @property
    def go_away_at(self) -> float:
        return max(0.0, self.connection_limit_s - self.go_away_notice_s) * self.time_scale


@dataclass(frozen=True)
class Fault:
    """What goes wrong with one connection: a close at set-up, a refused resumption, a close mid-call, a
    ``goAway`` sooner than the limit's, or silence. With ``answer`` (1 or more) a ``close`` or ``stall`` strikes
    once that spoken answer has sent ``audio_s`` of its audio; a ``stall`` without one, right after set-up."""

    kind: Literal["reject", "refuse_resume", "close", "go_away", "stall"]
    code: int = 1011
    reason: str = ""
    after_s: float = 0.0
    answer: int = 0
    audio_s: float = 0.0

    @classmethod
    def bad_key(cls) -> Fault:
        return cls("reject", 1007, "API key not valid. Please pass a valid API key.")

    @classmethod
    def rate_limited(cls) -> Fault:
        return cls("reject", 1011, "You exceeded your current quota, please check your plan and billing details.")

    @classmethod
    def throttled_open(cls) -> Fault:
        """The service's refusal of a connection over quota or rate: :meth:`rate_limited` (1011 at set-up)."""
        return cls.rate_limited()

    @classmethod
    def model_not_found(cls, model: str) -> Fault:
        return cls(
            "reject",
            1008,
            f"models/{model} is not found for API version v1beta, or is not supported for bidiGenerateContent.",
        )

    @classmethod
    def refuse_resume(cls) -> Fault:
        """The next connection that asks to resume a session is refused, as for a handle that expired."""
        return cls("refuse_resume", 1008, "Session not found or expired.")

    @classmethod
    def close(cls, after_s: float, code: int = 1011, reason: str = "Internal error encountered.") -> Fault:
        """The connection is closed mid-call with ``code``."""
        return cls("close", code, reason, after_s)

    @classmethod
    def go_away(cls, after_s: float) -> Fault:
        """``goAway`` comes ``after_s`` after the connection is set up (if the limit's does not come first)."""
        return cls("go_away", after_s=after_s)

    @classmethod
    def never_answers(cls) -> Fault:
        """``setupComplete`` (and the first resumption handle) as usual, then not one more message: no answer to
        text or audio (input is still read), as a connection whose model hangs from the start."""
        return cls("stall")

    @classmethod
    def stall_mid_answer(cls, answer: int = 1, audio_s: float = 0.5) -> Fault:
        """The ``answer``-th spoken answer of the connection (1-based) sends its first ``audio_s`` seconds of audio,
        then no server message ever again (no ``turnComplete``; input still read, the socket stays open), as a
        connection whose model hangs mid-answer."""
        return cls("stall", answer=MidAnswer.counted(answer), audio_s=audio_s)

    @classmethod
    def close_mid_answer(
        cls, answer: int = 1, audio_s: float = 0.5, code: int = 1011, reason: str = "Internal error encountered."
    ) -> Fault:
        """Like :meth:`stall_mid_answer`, then the close with ``code``: the service dropping a connection mid-answer
        on an internal error."""
        return cls("close", code, reason, answer=MidAnswer.counted(answer), audio_s=audio_s)


class FaultQueue:
    """Faults waiting for the next connections (a resumption refusal waits for a connection that resumes)."""

    def __init__(self) -> None:
        self._faults: deque[Fault] = deque()

    def push(self, *faults: Fault) -> None:
        self._faults.extend(faults)

    def take(self, resuming: bool) -> Fault | None:
        for fault in self._faults:
            if resuming or fault.kind != "refuse_resume":
                self._faults.remove(fault)
                return fault
        return None

    def __len__(self) -> int:
        return len(self._faults)

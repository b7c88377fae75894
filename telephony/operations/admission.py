"""How many calls the server takes at once, and whether it takes new ones at all.

A call is counted from its webhook (``POST /twiml``), about a second before its stream connects,
so a burst of calls cannot overshoot the limit while their streams are still connecting. The
reservation ends when the stream starts, or after ``reservation_s`` if it never does.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Admission:
    def __init__(
        self,
        max_calls: int,
        active: Callable[[], int],
        reservation_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_calls = max_calls
        self._active = active
        self._reservation_s = reservation_s
        self._clock = clock
        self._reserved: dict[str, float] = {}
        self.draining = False

    def reserve(self, call_sid: str) -> str | None:
        """Hold a line for ``call_sid``; returns why not ("busy" or "draining") when it cannot."""
        if self.draining:
            return "draining"
        self._expire()
        if call_sid in self._reserved:
            return None
        if self._active() + len(self._reserved) >= self.max_calls:
            return "busy"
        self._reserved[call_sid] = self._clock() + self._reservation_s
        return None

    def started(self, call_sid: str) -> None:
        """The call's stream has started: it now counts as active instead."""
        self._reserved.pop(call_sid, None)

    def stream_allowed(self) -> bool:
        """A stream may connect unless we are draining or already at the hard limit."""
        return not self.draining and self._active() < self.max_calls

    @property
    def reserved(self) -> int:
        self._expire()
        return len(self._reserved)

    def _expire(self) -> None:
        now = self._clock()
        for call_sid in [sid for sid, deadline in self._reserved.items() if deadline <= now]:
            del self._reserved[call_sid]

"""How many calls the server takes at once, and whether it takes new ones at all.

A call is counted from its webhook (``POST /twiml``), about a second before its stream connects,
so a burst of calls cannot overshoot the limit while their streams are still connecting. The
reservation ends when the stream starts (on any worker), when Twilio reports the call over, or after
``reservation_s`` if neither happens. The count is the whole server's (``telephony.operations.lines``).
"""

from __future__ import annotations

from telephony.operations.lines import Lines


class Admission:
    def __init__(self, max_calls: int, lines: Lines | None = None, reservation_s: float = 30.0) -> None:
        self.max_calls = max_calls
        self.lines = lines or Lines()
        self._reservation_s = reservation_s
        self.draining = False
        """Set by graceful shutdown: this worker takes no new calls."""

    def reserve(self, call_sid: str) -> str | None:
        """Hold a line for ``call_sid``; returns why not ("busy" or "draining") when it cannot."""
        if self.draining:
            return "draining"
        if not self.lines.reserve(call_sid, self.max_calls, self._reservation_s):
            return "busy"
        return None

    def open_stream(self) -> tuple[str | None, str | None]:
        """A stream asks to connect: ``(its line's key, None)``, or ``(None, why not)`` when draining or full."""
        if self.draining:
            return None, "draining"
        key = self.lines.open_stream(self.max_calls)
        return (key, None) if key is not None else (None, "at the call limit")

    def started(self, key: str, call_sid: str) -> int | None:
        """The stream ``key`` carries ``call_sid``: its reservation ends. Returns the other worker that held it."""
        return self.lines.start(key, call_sid)

    def stream_ended(self, key: str) -> None:
        self.lines.close_stream(key)

    def call_over(self, call_sid: str) -> int | None:
        """Twilio says the call ended (it may never have streamed): its reservation ends; returns its worker."""
        return self.lines.release(call_sid)

    @property
    def reserved(self) -> int:
        return self.lines.reserved

    @property
    def in_progress(self) -> int:
        """Streams open on the whole server (every worker's)."""
        return self.lines.streams

"""The call's watchdog task: a few times a second, ask the clock (telephony.bridge.watchdog) for a verdict
and act on it (tell the agent to wrap up, or hang up)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from telephony.bridge.ending import CallEnding
from telephony.bridge.observer import Observers
from telephony.bridge.watchdog import CallClock, Limits, Verdict
from telephony.config import Settings
from telephony.operations.logs import CallLog

WATCHDOG_INTERVAL_S = 0.25


class TimeLimits:
    """Applies one call's time limits."""

    def __init__(
        self,
        clock: CallClock,
        ending: CallEnding,
        tell_agent: Callable[[str], None],
        count_error: Callable[[str], None],
        observers: Observers,
        call_log: CallLog,
    ) -> None:
        self.clock = clock
        self._ending = ending
        self._tell_agent = tell_agent
        self._count_error = count_error
        self._observers = observers
        self._log = call_log
        self.timed_out: str | None = None
        """Why a limit hung up on the call (the call's outcome is a timeout), if one did."""
        self.wrapped_up: str | None = None
        """Why the server asked the agent to say goodbye (a shutdown), if it did: the server ended the call."""

    async def run(self) -> None:
        while True:
            await asyncio.sleep(WATCHDOG_INTERVAL_S)
            verdict = self.clock.check(time.monotonic())
            if verdict is not None:
                self._log.warning("%s", verdict.value)
                self._observers.notify("note", "limit", verdict.name.lower())
                await self._enforce(verdict)

    def wrap_up(self, reason: str) -> None:
        """Ask the agent to say goodbye now; the call is ended for it if it has not within the wrap-up time."""
        self._log.info("wrapping up: %s", reason)
        self.wrapped_up = self.wrapped_up or reason
        self._observers.notify("note", "wrap_up", reason)
        self.clock.wrap_up(time.monotonic())
        self._tell_agent(f"{reason} Say a short goodbye to the caller now, then end the call.")

    async def _enforce(self, verdict: Verdict) -> None:
        if verdict is Verdict.WARN:
            self._tell_agent(
                f"Note for you, not to read out: this call ends automatically in about "
                f"{self.clock.limits.warning_s:.0f} seconds. Start wrapping up."
            )
        elif verdict is Verdict.WRAP_UP:
            self._tell_agent("The call has reached its time limit. Say a short goodbye now, then end the call.")
        elif verdict is Verdict.FORCE_END:
            self._count_error("time_limit")
            await self._hang_up("the call did not wrap up in time")
        elif verdict is Verdict.STREAM_GONE:
            self._count_error("stream_gone")
            await self._hang_up("no audio from Twilio: the stream is gone")

    async def _hang_up(self, reason: str) -> None:
        self.timed_out = self.timed_out or reason
        await self._ending.hang_up(reason, by="server")


def limits_from(settings: Settings) -> Limits:
    return Limits(
        max_call_s=settings.max_call_s,
        warning_s=settings.call_warning_s,
        caller_silence_s=settings.caller_silence_timeout_s,
        wrap_up_s=settings.wrap_up_s,
    )


__all__ = ["WATCHDOG_INTERVAL_S", "TimeLimits", "limits_from"]

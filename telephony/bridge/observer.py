"""Watching a call from outside the bridge: recorders, metrics, latency probes.

The session calls these hooks synchronously, on the event loop, in the order things happen. A hook
must return at once (queue the work, never do I/O inline): the session's audio path runs through
them. Exceptions raised by a hook are logged and the observer is dropped for the rest of the call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from telephony.bridge.caller_speech import SpeechSpan
from telephony.call_info import CallInfo
from telephony.operations.logs import CallLog

CLOSE_TIMEOUT_S = 10.0
"""How long one observer may take to finish after the call (a recorder writing its WAVs)."""


class CallObserver(Protocol):
    def model_audio(self, input_rate: int, output_rate: int) -> None:
        """The agent is built; its audio rates are known (never called if it cannot be built)."""

    def twilio_received(self, text: str) -> None:
        """A text frame from Twilio, raw (including the ``connected`` and ``start`` before the call began)."""

    def twilio_sent(self, text: str) -> None:
        """A message we sent to Twilio, raw, once the socket has taken it."""

    def agent_event(self, event: Any) -> None:
        """An event from ``agent.receive()`` (audio, transcripts, tool use and results, barge-in, ...)."""

    def agent_input(self, item: bytes | str) -> None:
        """Input handed to ``agent.send()``: caller PCM at the model's input rate, or text."""

    def note(self, kind: str, detail: str) -> None:
        """Something the bridge decided or suffered: ``error``, ``hangup``, ``transfer``, ``barge_in``..."""

    async def call_ended(self, reason: str, ended_by: str) -> None:
        """The call is over; finish writing (the session awaits this, with a bound)."""


class QuietObserver:
    """A :class:`CallObserver` that ignores everything: subclass it and override only the hooks you need."""

    def model_audio(self, input_rate: int, output_rate: int) -> None:
        return None

    def twilio_received(self, text: str) -> None:
        return None

    def twilio_sent(self, text: str) -> None:
        return None

    def agent_event(self, event: Any) -> None:
        return None

    def agent_input(self, item: bytes | str) -> None:
        return None

    def note(self, kind: str, detail: str) -> None:
        return None

    async def call_ended(self, reason: str, ended_by: str) -> None:
        return None


class OptionalHooks(Protocol):
    """Hooks an observer may also have; the session skips observers without them (older observers keep working)."""

    def agent_info(self, info: dict[str, str]) -> None:
        """The agent is built: ``name``, ``model`` (its class) and ``model_id``, for the calls page."""

    def caller_speech(self, span: SpeechSpan) -> None:
        """A stretch of caller speech has ended (timed on the stream's clock, see telephony.bridge.caller_speech)."""

    def response_latency(self, seconds: float) -> None:
        """The bot's answer went out this long after the caller's speech ended."""


ObserverFactory = Callable[[CallInfo], CallObserver | None]
"""Makes one observer per call, once the stream's ``start`` has arrived (None: not this call)."""


class Observers:
    """One call's observers: built when the call is known, told everything, isolated from the call.

    Messages Twilio sends before ``start`` (``connected``, ``start`` itself) are held until the
    observers exist, so a recording begins with them.
    """

    def __init__(self, factories: Sequence[ObserverFactory], log: CallLog) -> None:
        self._factories = factories
        self._log = log
        self._observers: list[CallObserver] = []
        self._started = False
        self._early: list[str] = []

    def start(self, call: CallInfo, log: CallLog) -> None:
        """Build the call's observers (``log`` now knows the call SID) and hand them what came early."""
        self._log = log
        for factory in self._factories:
            try:
                observer = factory(call)
            except Exception as error:  # noqa: BLE001 - an observer never takes a call down
                self._log.warning("observer %r failed to start: %r", factory, error)
                continue
            if observer is not None:
                self._observers.append(observer)
        self._started = True
        for text in self._early:
            self.notify("twilio_received", text)
        self._early.clear()

    def received_early(self, text: str) -> None:
        """A Twilio message from before ``start``: held for the observers to come."""
        if not self._started:
            self._early.append(text)

    def notify(self, hook: str, *args: Any) -> None:
        """Call ``hook`` on every observer that has it; one that raises is logged and dropped."""
        for observer in list(self._observers):
            method = getattr(observer, hook, None)
            if method is None:
                continue  # an optional hook (OptionalHooks) this observer does not take
            try:
                method(*args)
            except Exception as error:  # noqa: BLE001 - an observer never takes a call down
                self._log.warning("observer %s dropped: %s raised %r", type(observer).__name__, hook, error)
                self._observers.remove(observer)

    async def close(self, reason: str, ended_by: str) -> None:
        """Let each observer finish (bounded by ``CLOSE_TIMEOUT_S``); failures are logged, not raised."""
        for observer in self._observers:
            try:
                await asyncio.wait_for(observer.call_ended(reason, ended_by), CLOSE_TIMEOUT_S)
            except Exception as error:  # noqa: BLE001 - shutdown goes on regardless
                self._log.warning("observer %s did not finish: %r", type(observer).__name__, error)
        self._observers.clear()

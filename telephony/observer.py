"""Watching a call from outside the bridge: recorders, metrics, latency probes.

The session calls these hooks synchronously, on the event loop, in the order things happen. A hook
must return at once (queue the work, never do I/O inline): the session's audio path runs through
them. Exceptions raised by a hook are logged and the observer is dropped for the rest of the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .call_info import CallInfo


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


ObserverFactory = Callable[[CallInfo], CallObserver | None]
"""Makes one observer per call, once the stream's ``start`` has arrived (None: not this call)."""

"""One phone call: the Twilio media stream on one side, a Strands ``BidiAgent`` on the other.

``CallSession`` composes the call's parts and owns its tasks, all cancelled here when the call ends:

- the Twilio side (telephony.bridge.twilio_stream): the *reader* and the *writer* of the WebSocket;
- the agent side (telephony.bridge.agent_link): the *agent* task (build, then receive) and its *sender*;
  it feeds the call's answer state (telephony.bridge.answer), which the ending and continuity read;
- the *watchdog* (telephony.bridge.time_limits) applying the call's time limits;
- how the call ends (telephony.bridge.ending): *goodbye* and *apology* tasks, hand-offs to a person
  (telephony.bridge.hand_offs) run once the bot's last words have been heard.

The agent's tools and the warm-transfer desk reach the call through its ``CallLeg`` (hand_offs), continuity
through the agent link; the session itself is the host of the parts and of the ending.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Coroutine, Sequence
from typing import Any

from starlette.websockets import WebSocket
from strands.bidi import BidiAgent

from telephony.bridge.agent_factory import AgentFactory
from telephony.bridge.agent_link import AGENT_STOP_TIMEOUT_S as AGENT_STOP_TIMEOUT_S  # moved there
from telephony.bridge.agent_link import AgentLink, model_rates
from telephony.bridge.answer import AnswerState
from telephony.bridge.ending import CallEnding, load_apology
from telephony.bridge.hand_offs import CallLeg, HandOffs
from telephony.bridge.observer import ObserverFactory, Observers
from telephony.bridge.playback import FRAME_SECONDS, Playback
from telephony.bridge.prewarm import WARM_PARAMETER, Prewarmer
from telephony.bridge.services import CallServices
from telephony.bridge.stats import CallStats
from telephony.bridge.tasks import OwnedTasks
from telephony.bridge.time_limits import TimeLimits, limits_from
from telephony.bridge.transfer import StreamRole, WarmTransfers
from telephony.bridge.twilio_stream import DIAL_PARAMETER as DIAL_PARAMETER  # moved there; `voicebot call` uses it
from telephony.bridge.twilio_stream import TwilioStream, admit
from telephony.bridge.watchdog import CallClock
from telephony.call_info import CallInfo, current_call_sid
from telephony.call_outcome import CallOutcome, decide
from telephony.config import Settings
from telephony.operations.latency import LatencySamples
from telephony.operations.logs import CallLog
from telephony.operations.metrics import Metrics
from telephony.twilio.calls_api import CallsApi
from telephony.twilio.media_streams import Media, Start
from telephony.twilio.security import CallTokens

log = logging.getLogger(__name__)


class CallSession:
    """Runs one Media Streams WebSocket from ``connected`` to hang-up.

    Built from ``services`` (server-wide dependencies), or, as before, from keyword arguments naming them."""

    def __init__(
        self,
        websocket: WebSocket,
        settings: Settings | None = None,
        agent_factory: AgentFactory | None = None,
        call_control: CallsApi | None = None,
        apology: bytes | None = None,
        tokens: CallTokens | None = None,
        console_tokens: CallTokens | None = None,
        observers: Sequence[ObserverFactory] = (),
        metrics: Metrics | None = None,
        latency_book: LatencySamples | None = None,
        prewarmer: Prewarmer | None = None,
        transfers: WarmTransfers | None = None,
        *,
        services: CallServices | None = None,
    ) -> None:
        if services is None:
            if settings is None or agent_factory is None:
                raise TypeError("CallSession needs services, or settings and agent_factory")
            services = CallServices(
                settings=settings,
                agent_factory=agent_factory,
                call_control=call_control,
                apology=apology,
                tokens=tokens,
                console_tokens=console_tokens,
                observers=tuple(observers),
                metrics=metrics,
                latency_book=latency_book,
                prewarmer=prewarmer,
                transfers=transfers,
            )
        self._services = services
        self._log = CallLog(log)
        self.observers = Observers(services.observers, self._log)
        self.latency = LatencySamples()
        self.stats = CallStats()
        self.call: CallInfo | None = None
        self.role = StreamRole()
        """This stream's part in a warm transfer (a briefing leg, a caller coming back), if any."""
        self.clock: CallClock | None = None
        apology_clip = services.apology if services.apology is not None else load_apology()
        self.ending = CallEnding(self, services.settings, self.observers, services.call_control, apology_clip)
        self._stream = TwilioStream(websocket, services.settings, self, self.stats, self.observers, self.latency)
        self._link = AgentLink(services, self)
        self._leg = CallLeg(self.ending, self.tell_agent)
        self._hand_offs = HandOffs(services, self, self._leg)
        if services.settings.transfer_to:  # cold: a warm transfer's briefing needs the model that just failed
            self.ending.to_a_person = functools.partial(
                self._hand_offs.cold, services.settings.transfer_to, "the agent could not go on"
            )
        self._limits: TimeLimits | None = None
        self._tasks = OwnedTasks(self._task_crashed)
        self._ended = asyncio.Event()
        self._crashed: str | None = None
        """The internal error that ended the call, if one did (its outcome is "crashed")."""

    # --- lifecycle ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the call until it ends; always leaves no task running and the agent stopped."""
        try:
            start = await self._stream.wait_for_start()
            if start is None or not admit(start, self._services.tokens, self._services.console_tokens):
                return
            if not self._take_role(start):
                return
            self._begin(start)
            self.spawn(self._stream.write_loop(), "writer")
            self.spawn(self._stream.read_loop(), "reader")
            self.spawn(self._link.run(), "agent")
            if self._limits is not None:
                self.spawn(self._limits.run(), "watchdog")
            await self._ended.wait()
        finally:
            await self._shutdown()

    def _take_role(self, start: Start) -> bool:
        """A briefing leg or a caller back from a transfer is served differently; a stale briefing leg is refused."""
        transfers = self._services.transfers
        if transfers is None:
            return True
        role = transfers.role_for(start.custom_parameters, start.call_sid)
        if role is not None and role.refusal:
            log.warning("call=%s | %s", start.call_sid, role.refusal)
            return False
        self.role = role or self.role
        return True

    def _begin(self, start: Start) -> None:
        current_call_sid.set(start.call_sid)  # the call's tasks, and the model's, start from here: they log by call
        self.call = self.role.call_info(start.call_info())
        self._leg.bind(self.call, asyncio.get_running_loop(), self._hand_offs)
        self._link.warmed_on = start.custom_parameters.get(WARM_PARAMETER)
        self._log = CallLog(log, start.call_sid)
        self._stream.open(start)
        self.clock = CallClock(limits_from(self._services.settings), time.monotonic())
        self._limits = TimeLimits(self.clock, self.ending, self.tell_agent, self.count_error, self.observers, self._log)
        self._log.info(
            "call started | stream=%s from=%s to=%s", start.stream_sid, self.call.from_number, self.call.to_number
        )
        self.observers.start(self.call, self._log)
        self.role.started(self._leg)

    def spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Run a task this call owns: cancelled when the call ends; a crash ends the call."""
        return self._tasks.spawn(coroutine, f"{name}:{self.call.call_sid if self.call else '-'}")

    def _task_crashed(self, task: asyncio.Task[Any], error: BaseException) -> None:
        self._log.error("task %s crashed: %r", task.get_name(), error, exc_info=error)
        self.count_error("internal")
        self._crashed = self._crashed or f"internal error in {task.get_name()}: {error!r}"
        self.finish(f"internal error in {task.get_name()}", by="server")

    def count_error(self, kind: str) -> None:
        self._services.count_error(kind)

    def finish(self, reason: str, by: str) -> None:
        if not self._ended.is_set():
            self.stats.end_reason, self.stats.ended_by = reason, by
            self.stats.ended_at = time.monotonic()
            self._ended.set()

    async def _shutdown(self) -> None:
        self._link.abandon_swap()  # first: a swap may run in one of our tasks, cancelled next
        await self._tasks.cancel_all()
        await self._stream.close()  # first: the line is free at once, whatever the agent's teardown takes
        handed_to = await self._hand_offs.handed_to()
        if handed_to is not None:
            self.stats.end_reason, self.stats.ended_by = f"on hold: warm transfer to {handed_to.destination}", "agent"
        await self._link.stop()
        self._link.dead_air.finish(time.monotonic())
        outcome = self.outcome(handed_to.destination if handed_to is not None else None)
        if self.call is not None:
            self._log_summary(outcome)
            self._record_metrics(outcome)
        if (span := self._link.speech.finish()) is not None:
            self.observers.notify("caller_speech", span)
        if self.call is not None:
            self.observers.notify("note", "outcome", outcome.note_detail())
        self.role.ended(self.stats.end_reason or "unknown")
        if handed_to is not None and self._services.transfers is not None:
            self._services.transfers.adopt(handed_to, self.observers)  # the recording goes on until it settles
            return
        await self.observers.close(self.stats.end_reason or "unknown", self.stats.ended_by or "unknown")

    def outcome(self, warm_transfer_to: str | None = None) -> CallOutcome:
        """How the call ended, from what its parts saw (telephony.call_outcome); final once it has ended."""
        return decide(
            self.stats.ended_by,
            self.stats.end_reason,
            failure=self.ending.failure,
            timed_out=self._limits.timed_out if self._limits is not None else None,
            wrapped_up=self._limits.wrapped_up if self._limits is not None else None,
            transferred_to=warm_transfer_to or self._hand_offs.transferred_to,
            crashed=self._crashed,
        )

    def _record_metrics(self, outcome: CallOutcome) -> None:
        if self._services.latency_book is not None:
            self._services.latency_book.extend(self.latency)
        if self._services.metrics is not None:
            playback = self.playback
            dropped_frames = playback.frames_dropped if playback else 0
            self._services.metrics.record_call(self.stats, self._link.dropped_chunks, dropped_frames)
            self._services.metrics.record_dead_air(self._link.dead_air.longest_s, self._link.dead_air.steps)
            self._services.metrics.call_outcome(outcome.code)

    def _log_summary(self, outcome: CallOutcome) -> None:
        playback = self.playback
        self._log.info(
            "call ended | outcome=%s by=%s reason=%s duration=%.1fs turns=%d barge_ins=%d frames_in=%d frames_out=%d "
            "caller_audio_dropped_chunks=%d bad_messages=%d model_restarts=%d dead_air_max=%.1fs%s latency(p50/p99) %s",
            outcome.code.value,
            self.stats.ended_by or "unknown",
            self.stats.end_reason or "unknown",
            self.stats.duration,
            self.stats.turns,
            self.stats.barge_ins,
            self.stats.frames_in,
            playback.frames_sent if playback else 0,
            self._link.dropped_chunks,
            self.stats.bad_messages,
            self._link.restarts,
            self._link.dead_air.longest_s,
            "".join(f" {name}={count}" for name, count in sorted(self._link.dead_air.steps.items())),
            self.latency.brief() or "-",
        )

    # --- what the parts and the server reach ---------------------------------------------------------

    @property
    def log(self) -> CallLog:
        return self._log

    @property
    def playback(self) -> Playback | None:
        return self._stream.playback

    @property
    def agent(self) -> BidiAgent | None:
        return self._link.agent

    @property
    def answer(self) -> AnswerState:
        """What the model is saying now and what of it was cut (the one owner of it)."""
        return self._link.answer

    @property
    def responding(self) -> bool:
        return self._link.answer.responding

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    @property
    def transcript(self) -> Sequence[tuple[str, str]]:
        return self._link.transcript

    def conversation(self) -> tuple[Sequence[tuple[str, str]], Sequence[Any]]:
        agent = self._link.agent
        return list(self._link.transcript), list(agent.messages) if agent is not None else []

    def control(self) -> CallLeg:
        return self._leg

    def cut_off(self) -> int:
        """Silence the bot mid-sentence (the reply is over everywhere); returns the frames dropped."""
        return self._link.cut_off()

    def note_bad(self, why: str) -> None:
        self._stream.note_bad(why)

    def caller_audio(self, media: Media) -> None:
        self._link.caller_audio(media)

    def keypress(self, digit: str) -> None:
        self._link.dead_air.keypress()
        if not self.role.on_dtmf(self._leg, digit):
            self.tell_agent(f"The caller pressed {digit} on their keypad.")

    # --- what the server asks ------------------------------------------------------------------------

    def wrap_up(self, reason: str) -> None:
        """Ask the agent to say goodbye now; the call is ended for it if it has not within the wrap-up time."""
        if self._limits is None or self._ended.is_set():
            return
        self._limits.wrap_up(reason)

    def tell_agent(self, text: str) -> None:
        """Give the agent a piece of text about the call (a keypress, answering-machine detection)."""
        self._link.tell_agent(text)


__all__ = ["FRAME_SECONDS", "CallSession", "CallStats", "model_rates"]

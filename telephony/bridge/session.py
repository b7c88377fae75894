"""One phone call: the Twilio media stream on one side, a Strands ``BidiAgent`` on the other.

This is the only module that knows both sides. Its tasks, all owned and cancelled here:

- reader:   WebSocket -> parse -> caller μ-law -> ``InboundBuffer`` (never waits)
- sender:   ``InboundBuffer`` -> ``SendChunks`` of μ-law -> ``InboundAudio`` -> ``agent.send()`` (may block
            during a model reconnect; the buffer absorbs it)
- receiver: ``agent.receive()`` -> ``OutboundAudio`` -> ``Playback`` (never waits on the network)
- writer:   ``Playback`` -> WebSocket (media, mark, clear)
- goodbye / apology: short-lived tasks of ``CallEnding`` (telephony.bridge.ending) that end the call once
  the last words have been heard.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import time
from collections import deque
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from starlette.websockets import WebSocket, WebSocketState
from strands.bidi import BidiAgent
from strands.bidi.types import (
    AudioDelta,
    BidiAudioDeltaEvent,
    BidiAudioStopEvent,
    BidiBargeInEvent,
    BidiConnectionStartEvent,
    BidiConnectionStopEvent,
    BidiToolUseBlocksEvent,
    BidiTranscriptBlockEvent,
)

from telephony.bridge.agent_factory import AgentFactory, agent_info, build_agent
from telephony.bridge.answer import AnswerState
from telephony.bridge.caller_speech import CallerSpeech
from telephony.bridge.continuity import Continuity
from telephony.bridge.ending import CallEnding, load_apology
from telephony.bridge.failure import error_summary
from telephony.bridge.inbound import InboundBuffer, SendChunks
from telephony.bridge.model_guard import guard_model_stream
from telephony.bridge.observer import ObserverFactory, Observers
from telephony.bridge.playback import FRAME_SECONDS, MarkState, Playback, Stamp
from telephony.bridge.prewarm import WARM_PARAMETER, Prewarmer, WarmAgent, claim_warm
from telephony.bridge.protocol import (
    MAX_MESSAGE_BYTES,
    Connected,
    Dtmf,
    Mark,
    Media,
    ProtocolError,
    Start,
    Stop,
    UnknownEvent,
    parse_message,
)
from telephony.bridge.tasks import OwnedTasks
from telephony.bridge.transfer import (
    TRANSCRIPT_LINES,
    HandOff,
    HandOffAction,
    StreamRole,
    WarmTransfer,
    WarmTransfers,
)
from telephony.bridge.watchdog import CallClock, Limits, Verdict
from telephony.call_info import CallInfo
from telephony.codec import TWILIO_RATE, InboundAudio, OutboundAudio, ulaw_level_dbfs
from telephony.config import Settings
from telephony.controls import CALL_CONTROL_KEY
from telephony.operations.latency import LatencySamples
from telephony.operations.logs import CallLog
from telephony.operations.metrics import Metrics
from telephony.twilio.call_control import REST_TIMEOUT_S, CallControlClient
from telephony.twilio.security import CONSOLE_PARAMETER, PARAMETER_NAME, CallTokens, TokenError, console_subject
from telephony.twilio.stream_route import instance_name
from telephony.twilio.twiml import dial_twiml

log = logging.getLogger(__name__)

DIAL_PARAMETER = "voicebotDial"
"""``<Parameter>`` naming an outbound call placed by ``voicebot call``: its token is bound to it."""
DEFAULT_MODEL_RATE = 16000
AGENT_STOP_TIMEOUT_S = 5.0
WATCHDOG_INTERVAL_S = 0.25
VOICE_LEVEL_DBFS = -40.0
"""Caller frames louder than this count as speech for the agent-unresponsive watchdog."""


@dataclass
class CallStats:
    """Counters for the call summary line and the metrics."""

    started_at: float = field(default_factory=time.monotonic)
    frames_in: int = 0
    turns: int = 0
    turn_latencies: list[float] = field(default_factory=list)
    """Seconds from the end of the caller's speech (as the bridge heard it) to the bot's first audio sent."""
    barge_ins: int = 0
    bad_messages: int = 0
    foreign_messages: int = 0
    agent_audio_dropped: int = 0
    end_reason: str = ""
    ended_by: str = ""
    ended_at: float | None = None

    @property
    def duration(self) -> float:
        return (self.ended_at or time.monotonic()) - self.started_at


class CallSession:
    """Runs one Media Streams WebSocket from ``connected`` to hang-up."""

    def __init__(
        self,
        websocket: WebSocket,
        settings: Settings,
        agent_factory: AgentFactory,
        call_control: CallControlClient | None = None,
        apology: bytes | None = None,
        tokens: CallTokens | None = None,
        console_tokens: CallTokens | None = None,
        observers: Sequence[ObserverFactory] = (),
        metrics: Metrics | None = None,
        latency_book: LatencySamples | None = None,
        prewarmer: Prewarmer | None = None,
        transfers: WarmTransfers | None = None,
    ) -> None:
        self._ws = websocket
        self._settings = settings
        self._agent_factory = agent_factory
        self._rest = call_control
        self._tokens = tokens
        self._console_tokens = console_tokens
        self._metrics = metrics
        self._latency_book = latency_book
        self._prewarmer = prewarmer
        self._warm: WarmAgent | None = None
        self._transfers = transfers
        self._role = StreamRole()
        """This stream's part in a warm transfer (a briefing leg, a caller coming back), if any."""
        self._handing_to: asyncio.Task[WarmTransfer | None] | None = None
        """The warm transfer taking this caller to hold: once it has, it inherits the recording and the feed."""
        self.transcript: deque[tuple[str, str]] = deque(maxlen=TRANSCRIPT_LINES)
        self._warmed_on: str | None = None
        self.latency = LatencySamples()
        self.stats = CallStats()
        self.call: CallInfo | None = None
        self.agent: BidiAgent | None = None
        self.playback: Playback | None = None
        self._inbound_audio: InboundAudio | None = None
        self._outbound_audio: OutboundAudio | None = None
        self._inbound: InboundBuffer | None = None
        self._chunks: SendChunks | None = None
        self._continuity: Continuity | None = None
        self._tasks = OwnedTasks(self._task_crashed)
        self._ended = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._log = CallLog(log)
        self._observers = Observers(observers, self._log)
        self.answer = AnswerState()
        """What the model is saying now and what of it was cut: fed here once per event, read everywhere."""
        apology = apology if apology is not None else load_apology()
        self.ending = CallEnding(self, settings, self._observers, call_control, apology)
        self._close_code = 1000
        self._clock: CallClock | None = None
        self._speech = CallerSpeech()

    # --- lifecycle ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the call until it ends; always leaves no task running and the agent stopped."""
        self._loop = asyncio.get_running_loop()
        try:
            start = await self._wait_for_start()
            if start is None or not self._admit(start) or not self._take_role(start):
                return
            self._begin(start)
            self.spawn(self._write_loop(), "writer")
            self.spawn(self._read_loop(), "reader")
            self.spawn(self._run_agent(), "agent")
            self.spawn(self._watch(), "watchdog")
            await self._ended.wait()
        finally:
            await self._shutdown()

    def end_call(self, reason: str) -> None:
        """``CallControl`` for tools: hang up after what has been said is heard. Thread-safe."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.ending.arm_goodbye, reason)

    def transfer_call(self, destination: str, reason: str, summary: str = "") -> None:
        """``CallControl`` for tools: move the call to ``destination`` once the hand-off line is heard.

        Warm (VOICEBOT_TRANSFER_MODE=warm, a Twilio call): the caller goes on hold while the person is briefed."""
        warm = self._transfers is not None and self._settings.transfer_mode == "warm" and self._rest is not None
        if warm:
            asked_at = time.monotonic()  # the briefing delay is counted from here, hand-off line included
            action: HandOffAction = functools.partial(self._warm_transfer, destination, reason, summary, asked_at)
        else:
            action = functools.partial(self._transfer, destination, reason)
        self.hand_off(f"transfer to {destination}: {reason}", action)

    def hand_off(self, reason: str, action: HandOffAction, now: bool = False) -> None:
        """Run ``action`` once the bot's last words have been heard (``now``: cut them off first). Thread-safe.

        The action returns a ``HandOff`` (the call leaves this stream, or is hung up) or None (the call goes on)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.ending.arm_goodbye, reason, action, now)

    def wrap_up(self, reason: str) -> None:
        """Ask the agent to say goodbye now; the call is ended for it if it has not within the wrap-up time."""
        if self._clock is None or self._ended.is_set():
            return
        self._log.info("wrapping up: %s", reason)
        self._clock.wrap_up(time.monotonic())
        self.tell_agent(f"{reason} Say a short goodbye to the caller now, then end the call.")

    def tell_agent(self, text: str) -> None:
        """Give the agent a piece of text about the call (a keypress, answering-machine detection)."""
        if self._inbound is not None:
            self._inbound.put_text(text)

    @property
    def log(self) -> CallLog:
        return self._log

    @property
    def responding(self) -> bool:
        return self.answer.responding

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    def spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Run a task this call owns: cancelled when the call ends; a crash ends the call."""
        return self._tasks.spawn(coroutine, f"{name}:{self.call.call_sid if self.call else '-'}")

    def _task_crashed(self, task: asyncio.Task[Any], error: BaseException) -> None:
        self._log.error("task %s crashed: %r", task.get_name(), error, exc_info=error)
        self.count_error("internal")
        self.finish(f"internal error in {task.get_name()}", by="server")

    def count_error(self, kind: str) -> None:
        if self._metrics is not None:
            self._metrics.errors.labels(kind=kind).inc()

    def finish(self, reason: str, by: str) -> None:
        if not self._ended.is_set():
            self.stats.end_reason, self.stats.ended_by = reason, by
            self.stats.ended_at = time.monotonic()
            self._ended.set()

    async def _shutdown(self) -> None:
        if self._continuity is not None:
            self._continuity.abandon_swap()  # first: a swap may run in one of our tasks, cancelled next
        await self._tasks.cancel_all()
        await self._close_socket()  # first: the line is free at once, whatever the agent's teardown takes
        handed_to = await self._handed_to()
        if self._warm is not None and self._warm.task is not None:
            self._warm.task.cancel()  # still connecting when the call ended
            await asyncio.gather(self._warm.task, return_exceptions=True)
        if self._continuity is not None:
            await self._continuity.swap_abandoned()
        if self.agent is not None:
            try:
                await asyncio.wait_for(self.agent.stop(), AGENT_STOP_TIMEOUT_S)
            except Exception as error:  # noqa: BLE001 - shutdown must finish whatever the agent does
                self._log.warning("agent did not stop cleanly: %r", error)
        if self.call is not None:
            self._log_summary()
            if self._latency_book is not None:
                self._latency_book.extend(self.latency)
            if self._metrics is not None:
                self._metrics.record_call(
                    self.stats,
                    self._inbound.dropped_chunks if self._inbound else 0,
                    self.playback.frames_dropped if self.playback else 0,
                )
        if (span := self._speech.finish()) is not None:
            self._observers.notify("caller_speech", span)
        self._role.ended(self.stats.end_reason or "unknown")
        if handed_to is not None and self._transfers is not None:
            self._transfers.adopt(handed_to, self._observers)  # the caller's recording goes on until it settles
            return
        await self._observers.close(self.stats.end_reason or "unknown", self.stats.ended_by or "unknown")

    async def _close_socket(self) -> None:
        if self._ws.application_state is WebSocketState.CONNECTED:
            try:
                await self._ws.close(code=self._close_code)
            except Exception:  # noqa: BLE001 - the peer may already be gone
                pass

    def _log_summary(self) -> None:
        playback = self.playback
        inbound = self._inbound
        self._log.info(
            "call ended | by=%s reason=%s duration=%.1fs turns=%d barge_ins=%d frames_in=%d frames_out=%d "
            "caller_audio_dropped_chunks=%d bad_messages=%d model_restarts=%d latency(p50/p99) %s",
            self.stats.ended_by or "unknown",
            self.stats.end_reason or "unknown",
            self.stats.duration,
            self.stats.turns,
            self.stats.barge_ins,
            self.stats.frames_in,
            playback.frames_sent if playback else 0,
            inbound.dropped_chunks if inbound else 0,
            self.stats.bad_messages,
            self._continuity.stats.restarts if self._continuity else 0,
            self.latency.brief() or "-",
        )

    # --- Twilio side -------------------------------------------------------------------------------

    async def _wait_for_start(self) -> Start | None:
        """Read ``connected`` and then ``start``; anything else before ``start`` is ignored."""
        try:
            async with asyncio.timeout(self._settings.start_timeout_s):
                while True:
                    text = await self._receive_text()
                    if text is None:
                        return None
                    self._observers.received_early(text[:MAX_MESSAGE_BYTES])
                    message = self._parse(text)
                    if isinstance(message, Connected):
                        log.info("stream connected | protocol=%s version=%s", message.protocol, message.version)
                    elif isinstance(message, Start):
                        return message
                    elif isinstance(message, Stop):
                        return None
                    elif message is not None:
                        self.stats.foreign_messages += 1
                        log.debug("ignoring %s before start", type(message).__name__)
        except TimeoutError:
            log.warning("no 'start' within %.0fs: closing the socket", self._settings.start_timeout_s)
            return None

    def _admit(self, start: Start) -> bool:
        """Check the call token minted by ``/twiml``: a replayed or forged stream is closed here."""
        params = start.custom_parameters
        if CONSOLE_PARAMETER in params:
            return self._admit_console(start)
        if self._tokens is None:
            return True
        dial_id = params.get(DIAL_PARAMETER)
        subject = f"dial:{dial_id}" if dial_id else start.call_sid
        try:
            self._tokens.verify(params.get(PARAMETER_NAME), subject)
        except TokenError as error:
            log.warning("call=%s | stream refused: call token %s", start.call_sid, error.reason)
            return False
        return True

    def _take_role(self, start: Start) -> bool:
        """A briefing leg or a caller back from a transfer is served differently; a stale briefing leg is refused."""
        if self._transfers is None:
            return True
        role = self._transfers.role_for(start.custom_parameters, start.call_sid)
        if role is not None and role.refusal:
            log.warning("call=%s | %s", start.call_sid, role.refusal)
            return False
        self._role = role or self._role
        return True

    def _admit_console(self, start: Start) -> bool:
        """A call from the browser console: its token is a console token, never a Twilio call token."""
        if self._console_tokens is None:
            log.warning("call=%s | stream refused: a console call on a stream the console did not open", start.call_sid)
            return False
        try:
            self._console_tokens.verify(start.custom_parameters.get(PARAMETER_NAME), console_subject(start.call_sid))
        except TokenError as error:
            log.warning("call=%s | stream refused: console token %s", start.call_sid, error.reason)
            return False
        return True

    def _begin(self, start: Start) -> None:
        self.call = self._role.call_info(start.call_info())
        self._warmed_on = start.custom_parameters.get(WARM_PARAMETER)
        self._log = CallLog(log, start.call_sid)
        if start.media_format.encoding != "audio/x-mulaw" or start.media_format.sample_rate != 8000:
            self._log.warning("unexpected media format %s; treating audio as μ-law 8 kHz", start.media_format)
        self.playback = Playback(
            start.stream_sid,
            mark_interval_s=self._settings.mark_interval_ms / 1000,
            pace_lead_s=self._settings.pace_lead_ms / 1000 or None,
        )
        self._clock = CallClock(limits_from(self._settings), time.monotonic())
        self._log.info(
            "call started | stream=%s from=%s to=%s", start.stream_sid, self.call.from_number, self.call.to_number
        )
        self._observers.start(self.call, self._log)
        self._role.started(self)

    async def _receive_text(self) -> str | None:
        """Next text frame, or None once the socket is closed. Binary frames are not protocol."""
        while True:
            try:
                message = await self._ws.receive()
            except (RuntimeError, OSError):
                return None
            if message["type"] == "websocket.disconnect":
                return None
            text = message.get("text")
            if text is not None:
                return str(text)
            self._note_bad("binary frame (Media Streams uses text frames only)")

    def _parse(self, text: str) -> Any:
        try:
            return parse_message(text, self._settings.max_message_bytes)
        except ProtocolError as error:
            self._note_bad(str(error))
            return None

    def _note_bad(self, why: str) -> None:
        """Log malformed input, but never let a flood of it flood the log."""
        self.stats.bad_messages += 1
        count = self.stats.bad_messages
        if count <= 5 or count % 100 == 0:
            self._log.warning("ignoring malformed message #%d: %s", count, why)
        if count >= self._settings.max_bad_messages and self.call is not None:
            self._log.warning("closing the stream: %d malformed messages", count)
            self._close_code = 1008  # policy violation
            self.count_error("malformed_flood")
            self.finish(f"too many malformed messages ({count})", by="server")

    async def _read_loop(self) -> None:
        while True:
            text = await self._receive_text()
            if text is None:
                self.finish("socket closed by Twilio", by="caller")
                return
            self._observers.notify("twilio_received", text)
            message = self._parse(text)
            if message is None:
                continue
            if isinstance(message, Stop):
                self.finish("stream stopped (caller hung up or call ended)", by="caller")
                return
            self._dispatch(message)

    def _dispatch(self, message: Any) -> None:
        assert self.call is not None and self.playback is not None
        stream_sid = getattr(message, "stream_sid", None)
        if stream_sid is not None and stream_sid != self.call.stream_sid and not isinstance(message, UnknownEvent):
            self.stats.foreign_messages += 1
            self._note_bad(f"{type(message).__name__} for stream {stream_sid!r}, not this call's")
            return
        if isinstance(message, Media):
            self._on_caller_audio(message)
        elif isinstance(message, Mark):
            self._on_mark(message.name)
        elif isinstance(message, Dtmf):
            self._log.info("caller pressed %s", message.digit)
            if self._role.on_dtmf(self, message.digit):
                return
            self.tell_agent(f"The caller pressed {message.digit} on their keypad.")
        elif isinstance(message, UnknownEvent):
            self._log.info("ignoring unknown event %r", message.event)
        elif isinstance(message, (Start, Connected)):
            self._note_bad(f"unexpected second '{type(message).__name__.lower()}'")

    def _on_caller_audio(self, media: Media) -> None:
        if media.track not in ("inbound", "inbound_track"):
            return
        self.stats.frames_in += 1
        if (span := self._speech.frame(media.payload, media.timestamp, time.monotonic())) is not None:
            self._observers.notify("caller_speech", span)
        if self._clock is not None:
            # The watchdog needs only a coarse "has the caller spoken": look at one frame in five.
            voiced = self.stats.frames_in % 5 == 0 and ulaw_level_dbfs(media.payload) > VOICE_LEVEL_DBFS
            self._clock.media(time.monotonic(), voiced=voiced)
        if self._inbound is None:
            return  # the agent is not built yet, so its input rate is unknown (a few ms at most)
        self._inbound.put_audio(media.payload)  # converted a chunk at a time, in the sender

    def _on_mark(self, name: str) -> None:
        assert self.playback is not None
        record = self.playback.on_echo(name)
        if record is None:
            self._log.debug("echo of unknown mark %r", name)
            return
        if record.final and record.utterance and record.state is MarkState.PLAYED:
            utterance = self.playback.utterances[record.utterance]
            self._log.info("bot utterance heard in full (%.2fs)", utterance.heard_seconds)

    async def _write_loop(self) -> None:
        assert self.playback is not None
        while True:
            message = await self.playback.next_message()
            try:
                await self._ws.send_text(message.text)
            except Exception as error:  # noqa: BLE001 - any send failure means the socket is gone
                self._log.info("socket closed while sending: %r", error)
                self.finish("socket closed while sending", by="caller")
                return
            if message.stamps:
                self._record_latency(message.stamps)
            self._observers.notify("twilio_sent", message.text)

    def _record_latency(self, stamps: tuple[Stamp, ...]) -> None:
        now = time.monotonic()
        for measure, since in stamps:
            self.latency.add(measure, now - since)
            if measure == "turn":
                self.stats.turn_latencies.append(now - since)
                self._observers.notify("response_latency", now - since)

    # --- agent side --------------------------------------------------------------------------------

    async def _run_agent(self) -> None:
        """Build and start the agent, then feed it and drain it until the call ends."""
        assert self.call is not None
        try:
            async with asyncio.timeout(self._settings.agent_start_timeout_s):
                agent = await self._start_agent(self.call)
        except Exception as error:  # noqa: BLE001 - any start failure gets the apology
            reason = "timed out" if isinstance(error, TimeoutError) else error_summary(error)
            self.ending.fail(f"agent failed to start: {reason}", error, kind="agent_start")
            return
        self._log.info(
            "agent started | model=%s%s", getattr(agent.model, "model_id", "?"), " (pre-warmed)" if self._warm else ""
        )
        if self._clock is not None:
            self._clock.agent_started(time.monotonic())
        if self._inbound is not None:
            self._inbound.release()  # held while the first connection was set up
        greeting = self._settings.greeting if self._role.greeting is None else self._role.greeting
        if greeting and self._inbound is not None:
            self._inbound.put_text(greeting)
            if self._clock is not None:
                self._clock.agent_prompted(time.monotonic())
        self.spawn(self._send_loop(agent), "sender")
        await self._receive_loop(agent)

    async def _start_agent(self, call: CallInfo) -> BidiAgent:
        """The agent pre-warmed at the webhook if there is one, else one built and connected now."""
        here = instance_name(self._settings)
        warm = self._role.take_warm() or claim_warm(
            self._prewarmer, call.call_sid, self._warmed_on, here, self._count_prewarm, self._log
        )
        control = self._role.control(self)
        if warm is None:
            self.agent = await build_agent(self._role.factory or self._agent_factory, call)
            guard_model_stream(self.agent.model)
            self._open_audio_paths(self.agent)  # caller audio is buffered while the model connects
            await self.agent.start(invocation_state={CALL_CONTROL_KEY: control, "call": call})
            return self.agent
        self._warm = warm
        warm.invocation_state["call"] = call  # now with its stream SID
        warm.control.bind(control)
        self.agent = await asyncio.shield(warm.built)
        self._open_audio_paths(self.agent)
        return await warm.started()

    def _open_audio_paths(self, agent: BidiAgent) -> None:
        input_rate, output_rate = model_rates(agent)
        self._log.info("model audio | input=%d Hz output=%d Hz", input_rate, output_rate)
        self._observers.notify("agent_info", agent_info(agent))
        self._observers.notify("model_audio", input_rate, output_rate)
        self._inbound_audio = InboundAudio(input_rate)
        self._outbound_audio = OutboundAudio(output_rate)
        ulaw_per_ms = TWILIO_RATE // 1000  # the buffer holds caller μ-law, one byte a sample
        self._inbound = InboundBuffer(max_audio_bytes=self._settings.inbound_buffer_ms * ulaw_per_ms)
        self._chunks = SendChunks(
            quiet_bytes=self._settings.send_chunk_ms * ulaw_per_ms,
            speaking_bytes=self._settings.send_chunk_speaking_ms * ulaw_per_ms,
            bot_speaking=self._bot_heard,
        )
        hold = self._settings.restart_hold_ms * ulaw_per_ms
        self._continuity = Continuity(
            agent,
            self._inbound,
            self,
            self._log,
            answer=self.answer,
            sample_rate=input_rate,
            hold_bytes=hold,
            held_bytes_per_s=TWILIO_RATE,
        )
        self._continuity.attach()
        self._inbound.hold(hold)  # the first connection's set-up loses no caller audio either

    def _bot_heard(self) -> bool:
        """The bot is answering, or the caller is still hearing it: a barge-in may come any moment."""
        return self.answer.responding or (self.playback is not None and self.playback.playout_end > time.monotonic())

    def _count_prewarm(self, outcome: str) -> None:
        if self._metrics is not None:
            self._metrics.prewarm_outcome(outcome)

    async def _send_loop(self, agent: BidiAgent) -> None:
        assert self._inbound is not None and self._inbound_audio is not None and self._chunks is not None
        assert self._continuity is not None
        while True:
            item, received_at, newest_at = await self._inbound.get(self._chunks)
            if isinstance(item, bytes):
                item = self._inbound_audio.convert(item)
            self._observers.notify("agent_input", item)
            try:
                await self._send(agent, item)
            except Exception as error:  # noqa: BLE001 - a failing model gets the apology
                if not await self._continuity.forgive_send_error(error):
                    self.ending.fail(f"agent rejected input: {error_summary(error)}", error, kind="agent_input")
                    return
                try:
                    await self._send(agent, item)  # once more, on the connection that replaced the old one
                except Exception as again:  # noqa: BLE001
                    self.ending.fail(f"agent rejected input: {error_summary(again)}", again, kind="agent_input")
                    return
            if isinstance(item, bytes):
                sent = time.monotonic()
                self.latency.add("frame_to_send", sent - newest_at)
                self.latency.add("caller_audio_to_model", sent - received_at)

    async def _send(self, agent: BidiAgent, item: bytes | str) -> None:
        assert self._continuity is not None
        if isinstance(item, str):
            await agent.send(item)
            return
        await agent.send(AudioDelta(format="pcm", source={"bytes": item}))
        self._continuity.audio_sent(item)

    async def _receive_loop(self, agent: BidiAgent) -> None:
        try:
            async for event in agent.receive():
                self._observers.notify("agent_event", event)
                self._on_agent_event(event)
        except Exception as error:  # noqa: BLE001 - a failing model gets the apology
            self.ending.fail(f"agent failed mid-call: {error_summary(error)}", error, kind="agent_stream")
            return
        self._log.info("agent ended the conversation")
        self.ending.arm_goodbye("agent stopped")

    def _on_agent_event(self, event: Any) -> None:
        """Dispatch one agent event. Never awaits: the agent's queue holds a single event."""
        if self._clock is not None and not isinstance(event, BidiConnectionStartEvent):  # not an answer
            self._clock.agent_event(time.monotonic())
        self.answer.observe(event)
        if self._continuity is not None:
            self._continuity.agent_event(event)
        if isinstance(event, BidiAudioDeltaEvent):
            self._on_bot_audio(event)
        elif isinstance(event, BidiAudioStopEvent):
            self._on_bot_audio_stop(event.content_id)
        elif isinstance(event, BidiBargeInEvent):
            self._on_barge_in()
        elif isinstance(event, BidiTranscriptBlockEvent):
            speaker = "caller" if event.role == "user" else "bot"
            self._log.info("%s said: %s", speaker, event.transcript)
            self.transcript.append((speaker, event.transcript))
        elif isinstance(event, BidiToolUseBlocksEvent):
            self._log.info("tool calls: %s", ", ".join(use["name"] for use in event.tool_uses))
        elif isinstance(event, BidiConnectionStopEvent):
            self._log.info("model connection stopped (%s)", event.reason)

    def _on_bot_audio(self, event: BidiAudioDeltaEvent) -> None:
        assert self.playback is not None
        if self.answer.is_cut(event.content_id) or self.ending.failing:
            self.stats.agent_audio_dropped += 1
            return
        if event.format != "pcm":
            self.stats.agent_audio_dropped += 1
            self._note_bad(f"agent audio in format {event.format!r}; only raw PCM is supported")
            return
        pcm = base64.b64decode(event.audio)
        if event.channels == 2:
            pcm = downmix_stereo(pcm)
        outbound = self._outbound_for(event.sample_rate)
        stamps: list[Stamp] = [("audio_to_frame", time.monotonic())]
        if self.answer.new_utterance:
            self.stats.turns += 1
            if self.stats.turns == 1:
                stamps.append(("start_to_first_audio", self.stats.started_at))
                self._role.audio_sent()
            if (speech_ended := self._speech.answered(time.monotonic())) is not None:
                stamps.append(("turn", speech_ended))
        self.playback.play(outbound.convert(pcm), utterance=event.content_id, stamps=tuple(stamps))

    def _outbound_for(self, sample_rate: int) -> OutboundAudio:
        """The converter for this rate; a model may change rate between utterances."""
        assert self.playback is not None
        current = self._outbound_audio
        if current is not None and current.model_rate == sample_rate:
            return current
        if current is not None:
            self.playback.play(current.flush(), utterance=self.answer.last_audio)
            self._log.info("agent audio rate changed %d -> %d Hz", current.model_rate, sample_rate)
        self._outbound_audio = OutboundAudio(sample_rate)
        return self._outbound_audio

    def _on_bot_audio_stop(self, content_id: str) -> None:
        assert self.playback is not None
        if self.answer.is_cut(content_id) or self.ending.failing or self._outbound_audio is None:
            return
        self.playback.play(self._outbound_audio.flush(), utterance=content_id)
        self.playback.end_utterance(content_id)

    def _on_barge_in(self) -> None:
        """The caller spoke over the bot: silence it now and forget the rest of what it was saying.

        Only a barge-in if the caller lost bot audio (some was playing or queued); after the bot has been
        heard in full, the model's report is a note and nothing is cleared."""
        assert self.playback is not None
        if self.ending.failing:
            return
        unheard = self.playback.unheard_seconds
        if unheard == 0:
            self._drop_current_utterance()
            self._log.info("the model reported a barge-in with nothing playing: nothing to clear")
            self._observers.notify("note", "caller_spoke", "the model reported a barge-in; nothing was playing")
            return
        self.stats.barge_ins += 1
        dropped = self.cut_off(stamps=(("barge_in_to_clear", time.monotonic()),))
        self._log.info("barge-in: clear sent, about %.2f s of bot audio unheard (%d frames unsent)", unheard, dropped)
        self._observers.notify("note", "barge_in", f"about {unheard:.2f} s of bot audio unheard")
        if self.ending.cancel_goodbye():
            self._log.info("caller spoke over the goodbye: the call goes on")

    def cut_off(self, stamps: tuple[Stamp, ...] = ()) -> int:
        """Stop the bot mid-sentence: Twilio's buffer cleared, the rest of the utterance dropped. Frames dropped."""
        assert self.playback is not None
        self._drop_current_utterance()
        return self.playback.interrupt(stamps=stamps)

    def _drop_current_utterance(self) -> None:
        """Whatever the model still sends of the reply it was speaking is not played, and the reply is over."""
        self.answer.cut()
        if self._outbound_audio is not None:
            self._outbound_audio.reset()

    # --- continuity across model connections (telephony.bridge.continuity) --------------------------

    def close_cut_answer(self, content_id: str | None) -> None:
        """The model's connection went mid-answer (the answer state is closed): what arrived plays out."""
        if content_id is not None:
            self._on_bot_audio_stop(content_id)

    def goodbye_armed(self) -> bool:
        return self.ending.goodbye_armed

    def note(self, kind: str, detail: str) -> None:
        self._observers.notify("note", kind, detail)

    # --- hand-offs (run by CallEnding once the hand-off line is heard) -------------------------------

    async def _transfer(self, destination: str, reason: str) -> HandOff | None:
        """Replace our stream with a ``<Dial>``; if Twilio refuses, the agent hears why and goes on."""
        assert self.call is not None
        if self._rest is None:
            self.tell_agent("The transfer failed: this server has no Twilio credentials. Tell the caller.")
            return None
        try:
            await asyncio.wait_for(self._rest.redirect(self.call.call_sid, dial_twiml(destination)), REST_TIMEOUT_S)
        except Exception as error:  # noqa: BLE001 - the call goes on with the agent
            self._log.warning("transfer to %s failed: %r", destination, error)
            self.tell_agent("The transfer failed and the caller is still with you. Apologise and offer other help.")
            return None
        self._log.info("call transferred to %s (%s)", destination, reason)
        self._observers.notify("note", "transfer", destination)
        if self._metrics is not None:
            self._metrics.transfers.labels(mode="cold", outcome="dialled").inc()
        return HandOff(f"transferred to {destination}")

    async def _warm_transfer(self, destination: str, reason: str, summary: str, asked_at: float) -> HandOff | None:
        """Put the caller on hold and brief ``destination`` (telephony.bridge.transfer); None if they stay here."""
        assert self._transfers is not None and self.call is not None
        messages = list(self.agent.messages) if self.agent is not None else []
        self._handing_to = self._transfers.start(
            self, destination, reason, summary, list(self.transcript), messages, asked_at
        )
        transfer = await asyncio.shield(self._handing_to)
        return None if transfer is None else HandOff(f"on hold: warm transfer to {destination}")

    async def _handed_to(self) -> WarmTransfer | None:
        """The warm transfer that took this caller to hold, if any (Twilio may stop the stream before it says so)."""
        if self._handing_to is None:
            return None
        try:
            transfer = await asyncio.wait_for(asyncio.shield(self._handing_to), REST_TIMEOUT_S + 1)
        except Exception:  # noqa: BLE001 - no transfer then: the recording ends here
            return None
        if transfer is not None:
            self.stats.end_reason, self.stats.ended_by = f"on hold: warm transfer to {transfer.destination}", "agent"
        return transfer

    async def _watch(self) -> None:
        """Apply the call's time limits (see telephony.bridge.watchdog)."""
        assert self._clock is not None
        while True:
            await asyncio.sleep(WATCHDOG_INTERVAL_S)
            verdict = self._clock.check(time.monotonic())
            if verdict is not None:
                self._log.warning("%s", verdict.value)
                self._observers.notify("note", "limit", verdict.name.lower())
                await self._enforce(verdict)

    async def _enforce(self, verdict: Verdict) -> None:
        limits = self._clock.limits if self._clock else None
        if verdict is Verdict.WARN and limits is not None:
            self.tell_agent(
                f"Note for you, not to read out: this call ends automatically in about {limits.warning_s:.0f} "
                "seconds. Start wrapping up."
            )
        elif verdict is Verdict.WRAP_UP:
            self.tell_agent("The call has reached its time limit. Say a short goodbye now, then end the call.")
        elif verdict is Verdict.FORCE_END:
            self.count_error("time_limit")
            await self.ending.hang_up("the call did not wrap up in time", by="server")
        elif verdict is Verdict.STREAM_GONE:
            self.count_error("stream_gone")
            await self.ending.hang_up("no audio from Twilio: the stream is gone", by="server")
        elif verdict is Verdict.AGENT_UNRESPONSIVE:
            reason = "agent unresponsive: the caller spoke and the agent produced nothing"
            self.ending.fail(reason, kind="agent_unresponsive")


def limits_from(settings: Settings) -> Limits:
    return Limits(
        max_call_s=settings.max_call_s,
        warning_s=settings.call_warning_s,
        caller_silence_s=settings.caller_silence_timeout_s,
        agent_silence_s=settings.agent_silence_timeout_s,
        wrap_up_s=settings.wrap_up_s,
    )


def model_rates(agent: BidiAgent) -> tuple[int, int]:
    """The model's declared input and output rates (16 kHz if it declares none)."""
    get_config = getattr(agent.model, "get_audio_config", None)
    if get_config is None:
        return DEFAULT_MODEL_RATE, DEFAULT_MODEL_RATE
    config = get_config()
    return int(config["input"]["sample_rate"]), int(config["output"]["sample_rate"])


def downmix_stereo(pcm: bytes) -> bytes:
    """Interleaved 16-bit stereo to mono (average of both channels)."""
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 4], dtype="<i2").reshape(-1, 2).astype(np.int32)
    return (samples.sum(axis=1) // 2).astype("<i2").tobytes()


__all__ = ["FRAME_SECONDS", "CallSession", "CallStats", "model_rates"]

"""The agent side of one call: the Strands ``BidiAgent`` built, fed and drained.

Two tasks of the call run here, both owned by the session:

- sender:   ``InboundBuffer`` -> ``SpeechChunks`` of μ-law -> ``InboundAudio`` -> ``agent.send()`` (may block
            during a model reconnect; the buffer absorbs it)
- receiver: ``agent.receive()`` -> the answer state (telephony.bridge.answer), continuity, then
            ``OutboundAudio`` -> ``Playback`` (never waits on the network)

Every agent event is fed once to the call's :class:`AnswerState`; this module plays what it says may be played,
and cuts the bot off (a barge-in, a hand-off) through it, so the cut is over for the ending and continuity too.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections import deque
from collections.abc import Coroutine
from typing import Any, Protocol

import numpy as np
from strands.bidi import BidiAgent
from strands.bidi.types import (
    AudioDelta,
    BidiAudioDeltaEvent,
    BidiAudioStopEvent,
    BidiBargeInEvent,
    BidiConnectionStopEvent,
    BidiResponseStartEvent,
    BidiToolUseBlocksEvent,
    BidiTranscriptBlockEvent,
    BidiTranscriptDeltaEvent,
    BidiTranscriptStartEvent,
)

from telephony.bridge.agent_factory import agent_info, build_agent
from telephony.bridge.answer import AnswerState
from telephony.bridge.barge_in import BargeIns
from telephony.bridge.caller_speech import CallerSpeech
from telephony.bridge.continuity import Continuity
from telephony.bridge.dead_air import DeadAir
from telephony.bridge.ending import CallEnding
from telephony.bridge.failure import error_summary
from telephony.bridge.hold_sound import HoldSound, load_hold_sound
from telephony.bridge.inbound import InboundBuffer
from telephony.bridge.model_guard import ModelGuard, guard_model_stream
from telephony.bridge.observer import Observers
from telephony.bridge.playback import Playback, Stamp
from telephony.bridge.prewarm import WarmAgent, claim_warm
from telephony.bridge.protocol import Media
from telephony.bridge.services import CallServices
from telephony.bridge.speech_chunks import SpeechChunks
from telephony.bridge.stats import CallStats
from telephony.bridge.transfer import TRANSCRIPT_LINES, StreamRole
from telephony.bridge.watchdog import CallClock
from telephony.call_info import CallInfo
from telephony.codec import TWILIO_RATE, InboundAudio, OutboundAudio
from telephony.controls import CALL_CONTROL_KEY
from telephony.operations.latency import LatencySamples
from telephony.operations.logs import CallLog
from telephony.twilio.stream_route import instance_name

log = logging.getLogger(__name__)

DEFAULT_MODEL_RATE = 16000
AGENT_STOP_TIMEOUT_S = 5.0


class LinkHost(Protocol):
    """What the agent link needs from its call (``CallSession`` implements it)."""

    call: CallInfo | None
    ending: CallEnding
    stats: CallStats
    latency: LatencySamples
    role: StreamRole
    clock: CallClock | None
    observers: Observers

    @property
    def log(self) -> CallLog: ...

    @property
    def playback(self) -> Playback | None:
        """What we send to Twilio (None until the stream has started)."""

    def control(self) -> Any:
        """What the agent's tools act through (the call's ``CallControl``)."""

    def spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Run a task the call owns (cancelled when it ends; a crash ends the call)."""

    def note_bad(self, why: str) -> None:
        """Count (and log, sparingly) something malformed; a flood of it ends the call."""


class AgentLink:
    """One call's agent: built (or taken pre-warmed), fed the caller, played to the caller. Implements
    continuity's ``CallSide``."""

    def __init__(self, services: CallServices, host: LinkHost) -> None:
        self._services = services
        self._host = host
        self.answer = AnswerState()
        """What the model is saying now and what of it was cut: fed here once per event, read everywhere."""
        self.agent: BidiAgent | None = None
        self.guard: ModelGuard | None = None
        """The bridge's hold on the model's event stream (telephony.bridge.model_guard)."""
        self.transcript: deque[tuple[str, str]] = deque(maxlen=TRANSCRIPT_LINES)
        self.warmed_on: str | None = None
        """The instance the webhook pre-warmed an agent on (``WARM_PARAMETER``), if any."""
        self._warm: WarmAgent | None = None
        self._inbound_audio: InboundAudio | None = None
        self._outbound_audio: OutboundAudio | None = None
        self.inbound: InboundBuffer | None = None
        self._chunks: SpeechChunks | None = None
        self.continuity: Continuity | None = None
        self.speech = CallerSpeech()
        self.barge_ins = BargeIns(
            host, self.answer, self.speech, self.cut_off, self._drop_current_utterance, lambda: self.model
        )
        """The caller talking over the bot: one clear per interruption, on the model's earliest sign of it."""
        settings = services.settings
        self.dead_air = DeadAir(
            settings,
            answer=self.answer,
            speech=self.speech,
            ending=host.ending,
            playback=lambda: host.playback,
            swaps=lambda: self.continuity,
            guard=lambda: self.guard,
            tell_agent=self.tell_agent,
            hold=HoldSound(load_hold_sound(settings.hold_sound)),
            observers=host.observers,
            call_log=lambda: host.log,
        )
        """What the caller is owed and how long they wait for it; rescues a quiet agent, checks on a quiet caller."""

    @property
    def model(self) -> Any:
        """The agent's model, once the agent is built."""
        return self.agent.model if self.agent is not None else None

    # --- start ---------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Build and start the agent, then feed it and drain it until the call ends."""
        host, settings = self._host, self._services.settings
        assert host.call is not None
        try:
            async with asyncio.timeout(settings.agent_start_timeout_s):
                agent = await self._start_agent(host.call)
        except Exception as error:  # noqa: BLE001 - any start failure gets the apology
            reason = "timed out" if isinstance(error, TimeoutError) else error_summary(error)
            host.ending.fail(f"agent failed to start: {reason}", error, kind="agent_start")
            return
        host.log.info(
            "agent started | model=%s%s", getattr(agent.model, "model_id", "?"), " (pre-warmed)" if self._warm else ""
        )
        if self.inbound is not None:
            self.inbound.release()  # held while the first connection was set up
        greeting = settings.greeting if host.role.greeting is None else host.role.greeting
        if greeting and self.inbound is not None:
            self.inbound.put_text(greeting)
            self.dead_air.prompted("greeting")  # a model that connects but never answers is caught from here
        self.dead_air.checks_in = host.role.checks_in
        host.spawn(self._send_loop(agent), "sender")
        host.spawn(self.dead_air.run(), "dead-air")
        await self._receive_loop(agent)

    async def _start_agent(self, call: CallInfo) -> BidiAgent:
        """The agent pre-warmed at the webhook if there is one, else one built and connected now."""
        host, services = self._host, self._services
        here = instance_name(services.settings)
        warm = host.role.take_warm() or claim_warm(
            services.prewarmer, call.call_sid, self.warmed_on, here, self._count_prewarm, host.log
        )
        control = host.role.control(host.control())
        if warm is None:
            self.agent = await build_agent(host.role.factory or services.agent_factory, call)
            self.guard = guard_model_stream(self.agent.model)
            self._open_audio_paths(self.agent)  # caller audio is buffered while the model connects
            await self.agent.start(invocation_state={CALL_CONTROL_KEY: control, "call": call})
            return self.agent
        self._warm = warm
        warm.invocation_state["call"] = call  # now with its stream SID
        warm.control.bind(control)
        self.agent = await asyncio.shield(warm.built)
        self.guard = guard_model_stream(self.agent.model)  # the one the pre-warmer installed
        self._open_audio_paths(self.agent)
        return await warm.started()

    def _open_audio_paths(self, agent: BidiAgent) -> None:
        settings, host = self._services.settings, self._host
        input_rate, output_rate = model_rates(agent)
        host.log.info("model audio | input=%d Hz output=%d Hz", input_rate, output_rate)
        host.observers.notify("agent_info", agent_info(agent))
        host.observers.notify("model_audio", input_rate, output_rate)
        self._inbound_audio = InboundAudio(input_rate)
        self._outbound_audio = OutboundAudio(output_rate)
        ulaw_per_ms = TWILIO_RATE // 1000  # the buffer holds caller μ-law, one byte a sample
        self.inbound = InboundBuffer(max_audio_bytes=settings.inbound_buffer_ms * ulaw_per_ms)
        self._chunks = SpeechChunks(
            quiet_bytes=settings.send_chunk_ms * ulaw_per_ms,
            speaking_bytes=settings.send_chunk_speaking_ms * ulaw_per_ms,
            silence_bytes=settings.send_chunk_silence_ms * ulaw_per_ms,
            window_s=settings.speech_window_ms / 1000,
            bot_window_s=settings.speech_window_bot_ms / 1000,
            bot_speaking=self._bot_heard,
            last_voiced_at=lambda: self.speech.last_voiced_at,
        )
        hold = settings.restart_hold_ms * ulaw_per_ms
        self.continuity = Continuity(
            agent,
            self.inbound,
            self,
            host.log,
            answer=self.answer,
            sample_rate=input_rate,
            hold_bytes=hold,
            held_bytes_per_s=TWILIO_RATE,
        )
        self.continuity.attach()
        self.inbound.hold(hold)  # the first connection's set-up loses no caller audio either

    def _bot_heard(self) -> bool:
        """The bot is answering, or the caller is still hearing it: a barge-in may come any moment."""
        playback = self._host.playback
        return self.answer.responding or (playback is not None and playback.playout_end > time.monotonic())

    def _count_prewarm(self, outcome: str) -> None:
        if self._services.metrics is not None:
            self._services.metrics.prewarm_outcome(outcome)

    # --- caller -> agent -----------------------------------------------------------------------------

    def caller_audio(self, media: Media) -> None:
        """A frame of the caller's audio: for the watchdog, the speech spans, and the model (never waits)."""
        host = self._host
        host.stats.frames_in += 1
        now = time.monotonic()
        if (span := self.speech.frame(media.payload, media.timestamp, now)) is not None:
            host.observers.notify("caller_speech", span)
            self.dead_air.caller_turn(span)
        elif self.dead_air.hold.playing and self.speech.last_voiced_at == now:
            self.dead_air.caller_spoke()
        if host.clock is not None:
            host.clock.media(now)
        if self.inbound is None:
            return  # the agent is not built yet, so its input rate is unknown (a few ms at most)
        self.inbound.put_audio(media.payload)  # converted a chunk at a time, in the sender

    def tell_agent(self, text: str) -> None:
        """Give the agent a piece of text about the call (a keypress, answering-machine detection)."""
        if self.inbound is not None:
            self.inbound.put_text(text)

    async def _send_loop(self, agent: BidiAgent) -> None:
        assert self.inbound is not None and self._inbound_audio is not None and self._chunks is not None
        assert self.continuity is not None
        host = self._host
        while True:
            item, received_at, newest_at = await self.inbound.get(self._chunks)
            around_speech, onset_flush = self._chunks.around_speech, self._chunks.onset_flush
            if isinstance(item, bytes):
                item = self._inbound_audio.convert(item)
            host.observers.notify("agent_input", item)
            try:
                await self._send(agent, item)
            except Exception as error:  # noqa: BLE001 - a failing model gets the apology
                if not await self.continuity.forgive_send_error(error):
                    host.ending.fail(f"agent rejected input: {error_summary(error)}", error, kind="agent_input")
                    return
                try:
                    await self._send(agent, item)  # once more, on the connection that replaced the old one
                except Exception as again:  # noqa: BLE001
                    host.ending.fail(f"agent rejected input: {error_summary(again)}", again, kind="agent_input")
                    return
            if isinstance(item, bytes):
                sent = time.monotonic()
                host.latency.add("frame_to_send", sent - newest_at)
                host.latency.add("caller_audio_to_model", sent - received_at)
                if around_speech:  # the onset's flush: its speech is the newest frame, behind held silence
                    host.latency.add("speech_audio_to_model", sent - (newest_at if onset_flush else received_at))

    async def _send(self, agent: BidiAgent, item: bytes | str) -> None:
        assert self.continuity is not None
        if isinstance(item, str):
            await agent.send(item)
            return
        await agent.send(AudioDelta(format="pcm", source={"bytes": item}))
        self.continuity.audio_sent(item)

    # --- agent -> caller -----------------------------------------------------------------------------

    async def _receive_loop(self, agent: BidiAgent) -> None:
        host = self._host
        try:
            async for event in agent.receive():
                host.observers.notify("agent_event", event)
                self._on_agent_event(event)
        except Exception as error:  # noqa: BLE001 - a failing model gets the apology
            if self.dead_air.model_answered:
                host.ending.fail(f"agent failed mid-call: {error_summary(error)}", error, kind="agent_stream")
            else:  # refused or dropped before it ever answered (Nova's 403/429/503 come here, not from start())
                host.ending.fail(f"agent failed to start: {error_summary(error)}", error, kind="agent_start")
            return
        host.log.info("agent ended the conversation")
        host.ending.arm_goodbye("agent stopped")

    def _on_agent_event(self, event: Any) -> None:
        """Dispatch one agent event. Never awaits: the agent's queue holds a single event."""
        host = self._host
        self.answer.observe(event)  # first: everything below reads it
        if self.continuity is not None:
            self.continuity.agent_event(event)
        if isinstance(event, BidiAudioDeltaEvent):
            self._on_bot_audio(event)
        elif isinstance(event, BidiAudioStopEvent):
            self._on_bot_audio_stop(event.content_id)
        elif isinstance(event, BidiBargeInEvent):
            self.barge_ins.model_barge_in()
        elif isinstance(event, BidiTranscriptStartEvent) and event.role == "user":
            self.barge_ins.caller_transcript()
        elif isinstance(event, BidiTranscriptBlockEvent):
            speaker = "caller" if event.role == "user" else "bot"
            host.log.info("%s said: %s", speaker, event.transcript)
            self.transcript.append((speaker, event.transcript))
        elif isinstance(event, BidiToolUseBlocksEvent):
            host.log.info("tool calls: %s", ", ".join(use["name"] for use in event.tool_uses))
            self.dead_air.tool_started()
        elif isinstance(event, (BidiResponseStartEvent, BidiTranscriptDeltaEvent)):
            self.dead_air.model_event()
        elif isinstance(event, dict) and event.get("type") == "tool_result" and not self.answer.tools_pending:
            self.dead_air.tool_finished()
        elif isinstance(event, BidiConnectionStopEvent):
            host.log.info("model connection stopped (%s)", event.reason)

    def _on_bot_audio(self, event: BidiAudioDeltaEvent) -> None:
        host = self._host
        assert host.playback is not None
        if self.answer.is_cut(event.content_id) or host.ending.failing:
            host.stats.agent_audio_dropped += 1
            return
        if event.format != "pcm":
            host.stats.agent_audio_dropped += 1
            host.note_bad(f"agent audio in format {event.format!r}; only raw PCM is supported")
            return
        pcm = base64.b64decode(event.audio)
        if event.channels == 2:
            pcm = downmix_stereo(pcm)
        outbound = self._outbound_for(event.sample_rate)
        stamps: list[Stamp] = [("audio_to_frame", time.monotonic())]
        self.dead_air.bot_audio()  # first: a hold sound still playing is cleared before the answer
        self.barge_ins.audio_played(stamps[0][1])
        if self.answer.new_utterance:
            host.stats.turns += 1
            if host.stats.turns == 1:
                stamps.append(("start_to_first_audio", host.stats.started_at))
                host.role.audio_sent()
            if (speech_ended := self.speech.answered(time.monotonic())) is not None:
                stamps.append(("turn", speech_ended))
        host.playback.play(outbound.convert(pcm), utterance=event.content_id, stamps=tuple(stamps))

    def _outbound_for(self, sample_rate: int) -> OutboundAudio:
        """The converter for this rate; a model may change rate between utterances."""
        playback = self._host.playback
        assert playback is not None
        current = self._outbound_audio
        if current is not None and current.model_rate == sample_rate:
            return current
        if current is not None:
            playback.play(current.flush(), utterance=self.answer.last_audio)
            self._host.log.info("agent audio rate changed %d -> %d Hz", current.model_rate, sample_rate)
        self._outbound_audio = OutboundAudio(sample_rate)
        return self._outbound_audio

    def _on_bot_audio_stop(self, content_id: str) -> None:
        playback = self._host.playback
        assert playback is not None
        if self.answer.is_cut(content_id) or self._host.ending.failing or self._outbound_audio is None:
            return
        playback.play(self._outbound_audio.flush(), utterance=content_id)
        playback.end_utterance(content_id)

    def cut_off(self, stamps: tuple[Stamp, ...] = ()) -> int:
        """Stop the bot mid-sentence: Twilio's buffer cleared, the rest of the reply dropped. Frames dropped."""
        assert self._host.playback is not None
        self._drop_current_utterance()
        return self._host.playback.interrupt(stamps=stamps)

    def _drop_current_utterance(self) -> None:
        """Whatever the model still sends of the reply it was speaking is not played, and the reply is over."""
        self.answer.cut()
        if self._outbound_audio is not None:
            self._outbound_audio.reset()

    # --- continuity's CallSide -----------------------------------------------------------------------

    def close_cut_answer(self, content_id: str | None) -> None:
        """The model's connection went mid-answer (the answer state is closed): what arrived plays out."""
        if content_id is not None:
            self._on_bot_audio_stop(content_id)

    def goodbye_armed(self) -> bool:
        return self._host.ending.goodbye_armed

    def note(self, kind: str, detail: str) -> None:
        self._host.observers.notify("note", kind, detail)

    # --- the end -------------------------------------------------------------------------------------

    def abandon_swap(self) -> None:
        """First in teardown: a connection swap may run in one of the call's tasks, cancelled next."""
        if self.continuity is not None:
            self.continuity.abandon_swap()

    async def stop(self) -> None:
        """Stop the agent (and a pre-warmed one still connecting), bounded: the line is already free."""
        if self._warm is not None and self._warm.task is not None:
            self._warm.task.cancel()  # still connecting when the call ended
            await asyncio.gather(self._warm.task, return_exceptions=True)
        if self.continuity is not None:
            await self.continuity.swap_abandoned()
        if self.agent is not None:
            try:
                await asyncio.wait_for(self.agent.stop(), AGENT_STOP_TIMEOUT_S)
            except Exception as error:  # noqa: BLE001 - shutdown must finish whatever the agent does
                self._host.log.warning("agent did not stop cleanly: %r", error)

    @property
    def dropped_chunks(self) -> int:
        return self.inbound.dropped_chunks if self.inbound is not None else 0

    @property
    def restarts(self) -> int:
        return self.continuity.stats.restarts if self.continuity is not None else 0


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


__all__ = ["AGENT_STOP_TIMEOUT_S", "AgentLink", "LinkHost", "downmix_stereo", "model_rates"]

"""The turn engine: when the caller has spoken, what Nova streams back, and barge-in.

Caller speech is found by level (RMS over 20 ms frames above a threshold) and ends after a hangover
of silence, as Nova's own end-pointing does, so callers must keep streaming (silence included) for a
turn to end. Replies stream the way Nova does: the USER transcript of what was heard, ASSISTANT
SPECULATIVE text, audio at the declared output rate faster than real time, then ``END_TURN``, the
FINAL text and usage. The engine tracks how long the sent audio keeps playing at the caller: caller
speech within that time is a barge-in, answered with the interrupted marker and ``INTERRUPTED``.

Events are handed to ``emit`` synchronously (it queues them), and the only suspension points inside a
reply are the brain and the pauses between audio chunks, so cancelling a reply never leaves a content
half-written.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .replies import Brain, CallerTurn, Reply, render_audio

__all__ = ["INTERRUPTED_MARKER", "LevelDetector", "Pacing", "SpeechEnded", "SpeechStarted", "TurnEngine"]

log = logging.getLogger(__name__)

INTERRUPTED_MARKER = '{ "interrupted" : true }'
"""The text Nova sends, as assistant text output, when the caller talks over it."""

Emit = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class SpeechStarted:
    """The caller started talking."""


@dataclass(frozen=True)
class SpeechEnded:
    """The caller finished a turn: its audio, from onset to the end of the hangover."""

    pcm: bytes


class LevelDetector:
    """Energy end-pointing on PCM16 mono: onset after ``onset_s`` of loud frames, end after ``hangover_s`` quiet."""

    def __init__(
        self,
        sample_rate: int,
        threshold_rms: float = 300.0,
        onset_s: float = 0.06,
        hangover_s: float = 0.6,
        frame_s: float = 0.02,
    ) -> None:
        self._frame_bytes = int(sample_rate * frame_s) * 2
        self._threshold = threshold_rms
        self._onset_frames = max(1, round(onset_s / frame_s))
        self._hangover_frames = max(1, round(hangover_s / frame_s))
        self._pending = b""
        self._loud_run = 0
        self._quiet_run = 0
        self._speech: list[bytes] | None = None
        self._onset: list[bytes] = []

    @property
    def in_speech(self) -> bool:
        return self._speech is not None

    def feed(self, pcm: bytes) -> list[SpeechStarted | SpeechEnded]:
        self._pending += pcm
        events: list[SpeechStarted | SpeechEnded] = []
        while len(self._pending) >= self._frame_bytes:
            frame, self._pending = self._pending[: self._frame_bytes], self._pending[self._frame_bytes :]
            event = self._frame(frame)
            if event is not None:
                events.append(event)
        return events

    def _frame(self, frame: bytes) -> SpeechStarted | SpeechEnded | None:
        samples = np.frombuffer(frame, dtype="<i2").astype(np.float64)
        loud = float(np.sqrt(np.mean(samples * samples))) >= self._threshold
        if self._speech is None:
            if not loud:
                self._loud_run, self._onset = 0, []
                return None
            self._loud_run += 1
            self._onset.append(frame)
            if self._loud_run < self._onset_frames:
                return None
            self._speech, self._onset, self._quiet_run = self._onset, [], 0
            return SpeechStarted()
        self._speech.append(frame)
        self._quiet_run = 0 if loud else self._quiet_run + 1
        if self._quiet_run < self._hangover_frames:
            return None
        pcm = b"".join(self._speech)
        self._speech, self._loud_run = None, 0
        return SpeechEnded(pcm)


@dataclass(frozen=True)
class Pacing:
    """How replies stream: ``chunk_s`` of audio per ``audioOutput``, sent ``speedup`` times faster than real time."""

    chunk_s: float = 0.04
    speedup: float = 4.0


@dataclass
class _Playing:
    """A reply in flight: its task and the audio content it has open."""

    task: asyncio.Task[None]
    audio_content_id: str | None = None


class TurnEngine:
    """One stream's conversation. Feed it caller input; it emits Nova output events through ``emit``."""

    def __init__(
        self,
        brain: Brain,
        emit: Emit,
        *,
        session_id: str,
        prompt_name: str,
        output_rate: int,
        pacing: Pacing,
        on_tool_use: Callable[[str], None],
        detector_options: dict[str, Any] | None = None,
    ) -> None:
        self._brain = brain
        self._emit = emit
        self._session_id = session_id
        self._prompt_name = prompt_name
        self._output_rate = output_rate
        self._pacing = pacing
        self._on_tool_use = on_tool_use
        self._detector_options = detector_options or {}
        self._detector: LevelDetector | None = None
        self._completion_id: str | None = None
        self._playing: _Playing | None = None
        self._queue: list[asyncio.Task[None]] = []
        self._tool_names: dict[str, str] = {}
        self._audible_until = 0.0
        self.last_activity = time.monotonic()
        self.barge_ins = 0

    # -- caller input ------------------------------------------------------------------------------

    def caller_audio(self, pcm: bytes, sample_rate: int) -> None:
        """Caller PCM16 from an ``audioInput``: may start a barge-in or finish a turn."""
        if self._detector is None:
            self._detector = LevelDetector(sample_rate, **self._detector_options)
        for event in self._detector.feed(pcm):
            self.last_activity = time.monotonic()
            if isinstance(event, SpeechStarted):
                if time.monotonic() < self._audible_until:
                    self._barge_in()
            else:
                turn = CallerTurn(event.pcm, sample_rate)
                self._respond(functools.partial(self._brain.on_caller_turn, turn), input_s=turn.seconds)

    def audio_ended(self) -> None:
        """The caller's AUDIO content closed; a half-heard utterance is dropped with the detector."""
        self._detector = None

    def text_input(self, text: str) -> None:
        """An interactive USER text content finished."""
        self.last_activity = time.monotonic()
        self._respond(lambda: self._brain.on_text(text))

    def tool_result(self, tool_use_id: str, result: Any) -> None:
        """A TOOL content finished: the client answered one of our tool uses."""
        self.last_activity = time.monotonic()
        name = self._tool_names.get(tool_use_id, "")
        self._respond(lambda: self._brain.on_tool_result(tool_use_id, name, result))

    async def close(self) -> None:
        """Cancel every reply in flight or waiting."""
        tasks = [*self._queue, *([self._playing.task] if self._playing else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._queue.clear()
        self._playing = None

    def finish(self) -> None:
        """The client ended its prompt: close the completion if one started."""
        if self._completion_id is not None:
            self._send("completionEnd", {"stopReason": "END_TURN"})
            self._completion_id = None

    # -- replies -----------------------------------------------------------------------------------

    def _respond(self, decide: Callable[[], Any], input_s: float = 0.0) -> None:
        """Queue a reply behind any in flight: Nova answers turns in order."""
        previous = self._queue[-1] if self._queue else (self._playing.task if self._playing else None)
        task = asyncio.create_task(self._reply(decide, previous, input_s))
        self._queue.append(task)
        task.add_done_callback(self._reply_done)

    def _reply_done(self, task: asyncio.Task[None]) -> None:
        if task in self._queue:
            self._queue.remove(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("local nova reply failed", exc_info=task.exception())

    async def _reply(self, decide: Callable[[], Any], previous: asyncio.Task[None] | None, input_s: float) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        reply: Reply | None = await decide()
        if reply is None:
            return
        current = asyncio.current_task()
        assert current is not None
        self._playing = _Playing(current)
        try:
            await self._stream(reply, input_s)
        finally:
            if self._playing is not None and self._playing.task is current:
                self._playing = None
            self.last_activity = time.monotonic()

    async def _stream(self, reply: Reply, input_s: float) -> None:
        if self._completion_id is None:
            self._completion_id = str(uuid.uuid4())
            self._send("completionStart", {})
        if reply.heard is not None:
            self._text_content("USER", "FINAL", reply.heard, "PARTIAL_TURN")
        audio_s = 0.0
        if reply.speaks:
            self._text_content("ASSISTANT", "SPECULATIVE", reply.text, "PARTIAL_TURN")
            pcm = render_audio(reply.audio, reply.text, self._output_rate)
            audio_s = len(pcm) / 2 / self._output_rate
            await self._stream_audio(pcm)
            if reply.text:
                self._text_content("ASSISTANT", "FINAL", reply.text, "END_TURN")
        for request in reply.tool_uses:
            self._tool_use(request.name, request.input, request.tool_use_id or f"tooluse_{uuid.uuid4().hex[:20]}")
        self._usage(input_s, reply.text, audio_s)

    async def _stream_audio(self, pcm: bytes) -> None:
        assert self._playing is not None
        content_id = str(uuid.uuid4())
        self._send(
            "contentStart",
            {
                "contentId": content_id,
                "type": "AUDIO",
                "role": "ASSISTANT",
                "additionalModelFields": json.dumps({"generationStage": "FINAL"}),
                "audioOutputConfiguration": {
                    "mediaType": "audio/lpcm",
                    "sampleRateHertz": self._output_rate,
                    "sampleSizeBits": 16,
                    "channelCount": 1,
                    "encoding": "base64",
                    "audioType": "SPEECH",
                },
            },
        )
        self._playing.audio_content_id = content_id
        chunk_bytes = max(2, int(self._pacing.chunk_s * self._output_rate) * 2)
        started = time.monotonic()
        sent_s = 0.0
        for offset in range(0, len(pcm), chunk_bytes):
            chunk = pcm[offset : offset + chunk_bytes]
            now = time.monotonic()
            self._audible_until = max(self._audible_until, now) + len(chunk) / 2 / self._output_rate
            self._send("audioOutput", {"contentId": content_id, "content": base64.b64encode(chunk).decode("ascii")})
            sent_s += len(chunk) / 2 / self._output_rate
            delay = started + sent_s / self._pacing.speedup - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        self._playing.audio_content_id = None
        self._send("contentEnd", {"contentId": content_id, "type": "AUDIO", "stopReason": "END_TURN"})

    def _barge_in(self) -> None:
        """The caller talks over audio still playing at their end: stop it and say so, as Nova does."""
        self.barge_ins += 1
        self._audible_until = 0.0
        playing, self._playing = self._playing, None
        if playing is not None:
            playing.task.cancel()
            if playing.audio_content_id is not None:
                self._send(
                    "contentEnd",
                    {"contentId": playing.audio_content_id, "type": "AUDIO", "stopReason": "INTERRUPTED"},
                )
        self._text_content("ASSISTANT", "SPECULATIVE", INTERRUPTED_MARKER, "INTERRUPTED")

    def _text_content(self, role: str, stage: str, text: str, stop_reason: str) -> None:
        content_id = str(uuid.uuid4())
        self._send(
            "contentStart",
            {
                "contentId": content_id,
                "type": "TEXT",
                "role": role,
                "additionalModelFields": json.dumps({"generationStage": stage}),
                "textOutputConfiguration": {"mediaType": "text/plain"},
            },
        )
        self._send("textOutput", {"contentId": content_id, "role": role, "content": text})
        self._send("contentEnd", {"contentId": content_id, "type": "TEXT", "stopReason": stop_reason})

    def _tool_use(self, name: str, tool_input: dict[str, Any], tool_use_id: str) -> None:
        self._tool_names[tool_use_id] = name
        self._on_tool_use(tool_use_id)
        content_id = str(uuid.uuid4())
        self._send(
            "contentStart",
            {
                "contentId": content_id,
                "type": "TOOL",
                "role": "TOOL",
                "toolUseOutputConfiguration": {"mediaType": "application/json"},
            },
        )
        self._send(
            "toolUse",
            {"contentId": content_id, "toolName": name, "toolUseId": tool_use_id, "content": json.dumps(tool_input)},
        )
        self._send("contentEnd", {"contentId": content_id, "type": "TOOL", "stopReason": "TOOL_USE"})

    def _usage(self, input_s: float, text: str, audio_s: float) -> None:
        delta_in = {"speechTokens": round(input_s * 25), "textTokens": 0}
        delta_out = {"speechTokens": round(audio_s * 25), "textTokens": len(text) // 4}
        total_in = sum(delta_in.values())
        total_out = sum(delta_out.values())
        self._send(
            "usageEvent",
            {
                "details": {"delta": {"input": delta_in, "output": delta_out}},
                "totalInputTokens": total_in,
                "totalOutputTokens": total_out,
                "totalTokens": total_in + total_out,
            },
        )

    def _send(self, name: str, body: dict[str, Any]) -> None:
        ids: dict[str, Any] = {"sessionId": self._session_id, "promptName": self._prompt_name}
        if self._completion_id is not None:
            ids["completionId"] = self._completion_id
        self._emit(name, {**ids, **body})

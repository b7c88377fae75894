"""The turn engine: when the caller has spoken, what Gemini streams back, and barge-in.

Caller speech is found by level (local Nova's ``LevelDetector``) and answered through a ``Brain``. A reply
streams as Gemini's does: the input transcription of what was heard, the output transcription, the audio as
``modelTurn`` inline data at 24 kHz faster than real time, ``generationComplete``, any ``toolCall``, usage, then
``turnComplete`` (after a tool call, the turn stays open until the reply to its result). The engine tracks how
long the sent audio keeps playing at the caller: caller speech within that time is a barge-in, answered with
``interrupted`` and the end of the turn.

Messages go to ``emit`` synchronously; the only suspension points inside a reply are the brain and the pauses
between audio chunks, so a cancelled reply never leaves half a message.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from telephony.simulation.local_nova.replies import Brain, CallerTurn, Reply, render_audio
from telephony.simulation.local_nova.turns import LevelDetector, SpeechStarted

__all__ = ["OUTPUT_RATE", "GeminiTurns", "Pacing"]

log = logging.getLogger(__name__)

OUTPUT_RATE = 24000
"""Gemini Live speaks PCM16 at 24 kHz, always."""

Emit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Pacing:
    """How replies stream: ``chunk_s`` of audio per message, sent ``speedup`` times faster than real time."""

    chunk_s: float = 0.04
    speedup: float = 4.0


class GeminiTurns:
    """One connection's conversation. Feed it caller input; it emits Live API server messages through ``emit``."""

    def __init__(
        self,
        brain: Brain,
        emit: Emit,
        pacing: Pacing,
        on_turn_complete: Callable[[], None],
        interrupted_at: list[float] | None = None,
    ) -> None:
        self._brain = brain
        self._emit = emit
        self._pacing = pacing
        self._on_turn_complete = on_turn_complete
        self._detector: LevelDetector | None = None
        self._playing: asyncio.Task[None] | None = None
        self._queue: list[asyncio.Task[None]] = []
        self._audible_until = 0.0
        self._turn_open = False
        self.tool_calls: dict[str, str] = {}
        self.interrupted_at = interrupted_at if interrupted_at is not None else []
        """When each barge-in's ``interrupted`` was emitted (monotonic)."""

    def caller_audio(self, pcm: bytes, sample_rate: int) -> None:
        """Caller PCM16 from a ``realtimeInput``: may start a barge-in or finish a turn."""
        if self._detector is None:
            self._detector = LevelDetector(sample_rate)
        for event in self._detector.feed(pcm):
            if isinstance(event, SpeechStarted):
                if time.monotonic() < self._audible_until:
                    self._barge_in()
            else:
                turn = CallerTurn(event.pcm, sample_rate)
                self._respond(partial(self._brain.on_caller_turn, turn), input_s=turn.seconds)

    def text_input(self, text: str) -> None:
        """A ``clientContent`` user turn that completes: the model answers it."""
        self._respond(lambda: self._brain.on_text(text))

    def tool_result(self, call_id: str, name: str, result: Any) -> None:
        """A ``toolResponse`` for one of our calls: the model carries on (or closes the turn)."""
        self.tool_calls.pop(call_id, None)
        self._respond(lambda: self._brain.on_tool_result(call_id, name, result), closes_silently=True)

    async def close(self) -> None:
        """Cancel every reply in flight or waiting."""
        tasks = [*self._queue, *([self._playing] if self._playing else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._queue.clear()
        self._playing = None

    # -- replies -----------------------------------------------------------------------------------

    def _respond(
        self, decide: Callable[[], Awaitable[Reply | None]], input_s: float = 0.0, closes_silently: bool = False
    ) -> None:
        """Queue a reply behind any in flight: turns are answered in order."""
        previous = self._queue[-1] if self._queue else self._playing
        task = asyncio.create_task(self._reply(decide, previous, input_s, closes_silently))
        self._queue.append(task)
        task.add_done_callback(self._reply_done)

    def _reply_done(self, task: asyncio.Task[None]) -> None:
        if task in self._queue:
            self._queue.remove(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("local gemini reply failed", exc_info=task.exception())

    async def _reply(
        self,
        decide: Callable[[], Awaitable[Reply | None]],
        previous: asyncio.Task[None] | None,
        input_s: float,
        closes_silently: bool,
    ) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        reply = await decide()
        if reply is None:
            if closes_silently and self._turn_open:
                self._complete_turn(input_s, "", 0.0)
            return
        self._playing = asyncio.current_task()
        try:
            await self._stream(reply, input_s)
        finally:
            if self._playing is asyncio.current_task():
                self._playing = None

    async def _stream(self, reply: Reply, input_s: float) -> None:
        self._turn_open = True
        if reply.heard is not None:
            self._emit({"serverContent": {"inputTranscription": {"text": reply.heard}}})
        audio_s = 0.0
        if reply.speaks:
            if reply.text:
                self._emit({"serverContent": {"outputTranscription": {"text": reply.text}}})
            pcm = render_audio(reply.audio, reply.text, OUTPUT_RATE)
            audio_s = len(pcm) / 2 / OUTPUT_RATE
            await self._stream_audio(pcm)
        self._emit({"serverContent": {"generationComplete": True}})
        if reply.tool_uses:
            calls = []
            for request in reply.tool_uses:
                call_id = request.tool_use_id or f"function-call-{uuid.uuid4().int % 10**19}"
                self.tool_calls[call_id] = request.name
                calls.append({"id": call_id, "name": request.name, "args": request.input})
            self._emit({"toolCall": {"functionCalls": calls}})
            self._usage(input_s, reply.text, audio_s)
            return  # the turn goes on once the results are in
        self._complete_turn(input_s, reply.text, audio_s)

    async def _stream_audio(self, pcm: bytes) -> None:
        chunk_bytes = max(2, int(self._pacing.chunk_s * OUTPUT_RATE) * 2)
        started = time.monotonic()
        sent_s = 0.0
        for offset in range(0, len(pcm), chunk_bytes):
            chunk = pcm[offset : offset + chunk_bytes]
            seconds = len(chunk) / 2 / OUTPUT_RATE
            self._audible_until = max(self._audible_until, time.monotonic()) + seconds
            data = base64.b64encode(chunk).decode("ascii")
            blob = {"mimeType": f"audio/pcm;rate={OUTPUT_RATE}", "data": data}
            self._emit({"serverContent": {"modelTurn": {"parts": [{"inlineData": blob}]}}})
            sent_s += seconds
            delay = started + sent_s / self._pacing.speedup - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)

    def _complete_turn(self, input_s: float, text: str, audio_s: float) -> None:
        self._usage(input_s, text, audio_s)
        self._emit({"serverContent": {"turnComplete": True}})
        self._turn_open = False
        self._on_turn_complete()

    def _barge_in(self) -> None:
        """The caller talks over audio still playing at their end: the generation is dropped, as Gemini does."""
        self.interrupted_at.append(time.monotonic())
        self._audible_until = 0.0
        playing, self._playing = self._playing, None
        if playing is not None:
            playing.cancel()
        self._emit({"serverContent": {"interrupted": True}})
        self._emit({"serverContent": {"turnComplete": True}})
        self._turn_open = False
        self._on_turn_complete()

    def _usage(self, input_s: float, text: str, audio_s: float) -> None:
        prompt, response = round(input_s * 32), round(audio_s * 32) + len(text) // 4
        self._emit(
            {
                "usageMetadata": {
                    "promptTokenCount": prompt,
                    "responseTokenCount": response,
                    "totalTokenCount": prompt + response,
                    "promptTokensDetails": [{"modality": "AUDIO", "tokenCount": prompt}],
                    "responseTokensDetails": [{"modality": "AUDIO", "tokenCount": response}],
                }
            }
        )

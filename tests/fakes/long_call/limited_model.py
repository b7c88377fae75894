"""``LimitedModel``: a ``BidiModel`` with short, seeded connection limits (proactive restarts, timeouts) and a
seeded set-up time per connection, answering through a :class:`ToneConversation`.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import itertools
import time
import uuid
from collections.abc import Callable
from typing import Any

from strands.bidi.models import BidiModel, ConnectionTimeoutError
from strands.bidi.models.configs import AudioConfig, AudioStreamConfig
from strands.bidi.types import (
    AudioDelta,
    BidiAudioDeltaEvent,
    BidiAudioStartEvent,
    BidiAudioStopEvent,
    BidiBargeInEvent,
    BidiConnectionStartEvent,
    BidiMessage,
    BidiResponseStartEvent,
    BidiResponseStopEvent,
    BidiToolUseBlocksEvent,
    BidiTranscriptDeltaEvent,
    BidiTranscriptStartEvent,
    BidiTranscriptStopEvent,
)
from strands.types.content import TextBlock
from strands.types.tools import ToolResultBlock, ToolUse

from telephony.simulation.local_nova.replies import CallerTurn, Reply, render_audio
from telephony.simulation.local_nova.turns import LevelDetector, SpeechEnded, SpeechStarted
from tests.fakes.long_call.conversation import RATE, SPEECH_RMS, ToneConversation

Seconds = float | Callable[[], float] | None


def _draw(value: Seconds) -> float | None:
    return value() if callable(value) else value


class _Connection:
    """One connection of :class:`LimitedModel`: its own event outbox, hearing and replies."""

    def __init__(self, model: LimitedModel, index: int) -> None:
        self.model = model
        self.index = index
        self.outbox: asyncio.Queue[Any] = asyncio.Queue()
        self.detector = LevelDetector(model.rate, threshold_rms=SPEECH_RMS, hangover_s=model.endpoint_s)
        self.replies: list[asyncio.Task[None]] = []
        self.playing: asyncio.Task[None] | None = None
        self.audible_until = 0.0
        self.timers: list[asyncio.TimerHandle] = []
        self.closed = False
        self.speech_bytes = 0
        self.barged = False
        self._ids = itertools.count(1)

    def trigger(self, moment: str) -> None:
        """Time out here if the test asked for a restart at this moment (once per moment per model)."""
        model = self.model
        if moment in model.cut_at and moment not in model.cuts_done and not self.closed:
            model.cuts_done.append(moment)
            self.emit(ConnectionTimeoutError(f"connection {self.index} timed out during {moment}"))

    def emit(self, event: Any) -> None:
        if not self.closed:
            self.outbox.put_nowait(event)

    def hear(self, pcm: bytes) -> None:
        for event in self.detector.feed(pcm):
            if isinstance(event, SpeechStarted):
                self.speech_bytes = 0
                if time.monotonic() < self.audible_until:
                    self._barge_in()
            elif isinstance(event, SpeechEnded):
                self.barged = False
                turn = CallerTurn(event.pcm, self.model.rate)
                self.respond(functools.partial(self.model.brain.on_caller_turn, turn))
        if self.detector.in_speech:
            self.speech_bytes += len(pcm)
            if self.speech_bytes >= 0.4 * self.model.rate * 2:
                self.trigger("barge-in" if self.barged else "utterance")

    def respond(self, decide: Callable[[], Any]) -> None:
        previous = self.replies[-1] if self.replies else None
        task = asyncio.create_task(self._reply(decide, previous))
        self.replies.append(task)

    async def _reply(self, decide: Callable[[], Any], previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        reply: Reply | None = await decide()
        if reply is None or self.closed:
            return
        self.playing = asyncio.current_task()
        try:
            await self._speak(reply)
        finally:
            self.playing = None

    async def _speak(self, reply: Reply) -> None:
        response_id = f"response-{self.index}-{next(self._ids)}"
        self.emit(BidiResponseStartEvent(response_id=response_id))
        late = self.model.late_transcripts
        if reply.heard is not None and not late:
            self._transcript(reply.heard, "user")
        try:
            if reply.speaks:
                self._transcript(reply.text, "assistant")
                content_id = f"audio-{self.index}-{next(self._ids)}"
                self.emit(BidiAudioStartEvent(content_id=content_id))
                goodbye = any(request.name == "end_conversation" for request in reply.tool_uses)
                pcm = render_audio(reply.audio, reply.text, self.model.rate)
                await self._audio(content_id, pcm, "goodbye" if goodbye else "answer")
                self.emit(BidiAudioStopEvent(content_id=content_id))
        finally:  # transcribed beside the answer: a barge-in does not lose it, a connection that went does
            if reply.heard is not None and late:
                self._transcript(reply.heard, "user")
        for request in reply.tool_uses:
            use_id = request.tool_use_id or f"tooluse_{uuid.uuid4().hex[:16]}"
            use = ToolUse(toolUseId=use_id, name=request.name, input=request.input)
            self.emit(BidiToolUseBlocksEvent(tool_uses=[use]))
            if request.name == "lookup":
                self.trigger("tool call")
        self.emit(BidiResponseStopEvent(response_id=response_id))
        if reply.heard is not None:
            self.model.answers += 1
        if (
            reply.heard is not None
            and self.model.after_answer_s is not None
            and self.model.answers >= self.model.after_answer_n
        ):
            loop = asyncio.get_running_loop()
            self.timers.append(loop.call_later(self.model.after_answer_s, self.trigger, "after answer"))

    async def _audio(self, content_id: str, pcm: bytes, moment: str) -> None:
        rate, speedup = self.model.rate, self.model.speedup
        chunk = int(0.04 * rate) * 2
        started = time.monotonic()
        for offset in range(0, len(pcm), chunk):
            if offset >= len(pcm) // 3:
                self.trigger(moment)
            piece = pcm[offset : offset + chunk]
            self.audible_until = max(self.audible_until, time.monotonic()) + len(piece) / 2 / rate
            self.emit(
                BidiAudioDeltaEvent(
                    audio=base64.b64encode(piece).decode(),
                    format="pcm",
                    sample_rate=rate,  # type: ignore[arg-type]
                    channels=1,
                    content_id=content_id,
                )
            )
            due = started + (offset + len(piece)) / 2 / rate / speedup
            await asyncio.sleep(max(0.0, due - time.monotonic()))

    def _transcript(self, text: str, role: str) -> None:
        content_id = f"transcript-{self.index}-{next(self._ids)}"
        self.emit(BidiTranscriptStartEvent(role=role, content_id=content_id))  # type: ignore[arg-type]
        self.emit(BidiTranscriptDeltaEvent(delta=text, role=role, content_id=content_id))  # type: ignore[arg-type]
        self.emit(BidiTranscriptStopEvent(role=role, content_id=content_id))  # type: ignore[arg-type]

    def _barge_in(self) -> None:
        self.audible_until = 0.0
        self.barged = True
        if self.playing is not None:
            self.playing.cancel()
        self.emit(BidiBargeInEvent())

    async def close(self) -> None:
        self.closed = True  # nothing more reaches the reader: a reply being cancelled says nothing more
        for timer in self.timers:
            timer.cancel()
        tasks = [task for task in self.replies if not task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.outbox.put_nowait(None)


class LimitedModel(BidiModel):
    """A model with short connection limits and slow set-ups (see the module docstring).

    ``restart_after_s``: declared in the connection config (strands restarts proactively); drawn again each
    time strands reads it. ``timeout_after_s``: a connection raises ``ConnectionTimeoutError`` this long
    after it opens (strands restarts reactively). ``cut_at``: moments at which a connection times out
    instead (mid-utterance, mid-answer, ..., or ``after answer``: ``after_answer_s`` after an answer to the
    caller ended, from the ``after_answer_n``-th on). ``setup_s``: how long ``start()`` takes. ``endpoint_s``:
    the quiet after which a connection takes the caller's turn (the bridge's is 0.5 s; a model's may differ).
    ``late_transcripts``: the caller's transcript comes after the answer's audio, not before it.
    """

    def __init__(
        self,
        brain: ToneConversation,
        *,
        rate: int = RATE,
        restart_after_s: Seconds = None,
        timeout_after_s: Seconds = None,
        setup_s: Seconds = 0.0,
        speedup: float = 4.0,
        cut_at: set[str] | frozenset[str] = frozenset(),
        endpoint_s: float = 0.6,
        after_answer_s: float | None = None,
        after_answer_n: int = 1,
        late_transcripts: bool = False,
    ) -> None:
        self._config: dict[str, Any] = {"model_id": "limited"}
        self.brain = brain
        self.rate = rate
        self.restart_after_s = restart_after_s
        self.timeout_after_s = timeout_after_s
        self.setup_s = setup_s
        self.speedup = speedup
        self.cut_at = set(cut_at)
        """Moments to time out at, once each: utterance, answer, tool call, goodbye, barge-in, after answer."""
        self.endpoint_s = endpoint_s
        self.after_answer_s = after_answer_s
        self.after_answer_n = after_answer_n
        """``after answer`` counts from the n-th answer to the caller (of all connections)."""
        self.late_transcripts = late_transcripts
        self.answers = 0
        self.cuts_done: list[str] = []
        self.connections: list[_Connection] = []
        self.setups: list[float] = []
        self.audio_received = 0
        self.started = False
        self.stopped = False
        self._current: _Connection | None = None

    def get_connection_config(self) -> Any:
        after = _draw(self.restart_after_s)
        return {"restart_after_s": after} if after else {}

    def get_config(self) -> Any:
        return self._config

    def update_config(self, **model_config: Any) -> None:
        self._config.update(model_config)

    def get_audio_config(self) -> AudioConfig:
        stream = AudioStreamConfig(sample_rate=self.rate, channels=1, format="pcm")  # type: ignore[typeddict-item]
        return AudioConfig(input=stream, output=stream)

    async def start(self, system_prompt: str | None = None, tools: Any = None, messages: Any = None, **_: Any) -> None:
        setup = _draw(self.setup_s) or 0.0
        self.setups.append(setup)
        if setup:
            await asyncio.sleep(setup)
        connection = _Connection(self, len(self.connections))
        self.connections.append(connection)
        self._current = connection
        self.started, self.stopped = True, False
        connection.emit(BidiConnectionStartEvent(connection_id=f"limited-{connection.index}", model="limited"))
        timeout = _draw(self.timeout_after_s)
        if timeout:
            error = ConnectionTimeoutError(f"connection {connection.index} reached its limit")
            connection.timers.append(asyncio.get_running_loop().call_later(timeout, connection.emit, error))

    async def stop(self) -> None:
        self.stopped = True
        if self._current is not None:
            connection, self._current = self._current, None
            await connection.close()

    async def receive(self) -> Any:  # type: ignore[override]
        connection = self._current
        if connection is None:
            raise RuntimeError("model not started")
        while (item := await connection.outbox.get()) is not None:
            if isinstance(item, Exception):
                raise item
            yield item

    async def send(self, content: Any) -> None:
        connection = self._current
        if connection is None:
            raise RuntimeError("model not started | call start before sending")
        if isinstance(content, AudioDelta):
            pcm = content.source["bytes"]
            self.audio_received += len(pcm)
            connection.hear(pcm)
        elif isinstance(content, BidiMessage):
            for block in content.content:
                if isinstance(block, TextBlock):
                    connection.respond(functools.partial(self.brain.on_text, block.text))
                elif isinstance(block, ToolResultBlock):
                    use_id = block.tool_use_id
                    connection.respond(functools.partial(self.brain.on_tool_result, use_id, "lookup", None))

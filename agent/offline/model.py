"""``OfflineModel``: a Strands ``BidiModel`` that hears, thinks and speaks on this machine, with no account.

For development and demos, not as an assistant: it recognises the phrases of a small script
(pocketsphinx), replies from the script, calls tools through the agent like any model, and speaks with
espeak-ng. It follows the Strands model contract the bridge relies on:

- ``receive()`` yields ``BidiConnectionStartEvent`` first and returns only after ``stop()``;
- each reply is ResponseStart, an assistant transcript (start/delta/stop, one ``content_id``), AudioStart,
  AudioDelta chunks of 60 ms, AudioStop, ResponseStop; what it recognised is a user transcript;
- tools are requested with ``BidiToolUseBlocksEvent`` and their results awaited from ``send()``;
- ``BidiBargeInEvent`` as soon as the caller speaks while its reply is still playing, and no more audio of
  that reply after it.

Audio goes out paced to real time (a little ahead), so the model knows when the caller is still hearing it
and a barge-in really stops the rest. Recognition and synthesis run in worker threads.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

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
from strands.types.tools import ToolResultBlock

from agent.pcm_model import PcmModel

from .conversation import Conversation, Turn
from .recognizer import SAMPLE_RATE, PhraseRecognizer
from .script import FRONT_DESK, Script, ToolCall
from .synthesizer import BOT_VOICE, Synthesizer, Voice
from .vad import SpeechDetector, SpeechStarted, Utterance

__all__ = ["OfflineModel"]

log = logging.getLogger(__name__)

CHUNK_S = 0.06
"""Audio per AudioDelta event: Nova-like granularity, small enough to stop promptly on barge-in."""
BARGE_IN_TAIL_S = 0.2
"""After the last audio should have played, speech still counts as talking over the bot for this long."""
_END = object()


@dataclass(frozen=True)
class _Text:
    text: str


class OfflineModel(PcmModel):
    """Speech-to-speech from a script, entirely offline. See the module docstring for the contract.

    Args:
        script: intents, phrases, replies and tool calls (default: a front desk).
        voice: the bot's espeak-ng voice, a ``Voice`` or a voice name such as ``"en-us+m3"``.
        output_rate: sample rate of the audio it emits (input is always 16 kHz; the bridge resamples).
        lead_s: how far audio may run ahead of real time (a large value emits each reply at once).
        tool_timeout_s: how long to wait for a tool's result before saying the lookup failed.
    """

    def __init__(
        self,
        script: Script = FRONT_DESK,
        voice: Voice | str = BOT_VOICE,
        output_rate: int = 16000,
        lead_s: float = 0.5,
        tool_timeout_s: float = 10.0,
        model_id: str = "offline",
    ) -> None:
        super().__init__(model_id, SAMPLE_RATE, output_rate)
        self.script = script
        self.lead_s = lead_s
        self.tool_timeout_s = tool_timeout_s
        self.synthesizer = Synthesizer(Voice(voice) if isinstance(voice, str) else voice, output_rate)
        self.recognizer: PhraseRecognizer | None = None
        self.barge_ins = 0
        self._started = False
        self._events: asyncio.Queue[Any] = asyncio.Queue()
        self._inputs: asyncio.Queue[Utterance | _Text] = asyncio.Queue()
        self._tasks: set[asyncio.Task[None]] = set()
        self._tool_results: dict[str, asyncio.Future[ToolResultBlock]] = {}
        self._tool_names: set[str] = set()
        self._detector = SpeechDetector(SAMPLE_RATE)
        self._conversation = Conversation(script)
        self._speaking = False
        self._interrupted = False
        self._playout_end = 0.0

    # --- BidiModel ---------------------------------------------------------------------------------

    async def start(
        self, system_prompt: str | None = None, tools: Any = None, messages: Any = None, **kwargs: Any
    ) -> None:
        """Load the recogniser (in a thread: ~30 ms) and begin listening. The system prompt is ignored."""
        if self.recognizer is None:
            phrases = [phrase for intent in self.script.intents for phrase in intent.phrases]
            self.recognizer = await asyncio.to_thread(PhraseRecognizer, phrases, self.script.pronunciations)
        self._tool_names = {spec["name"] for spec in tools or []}
        self._events = asyncio.Queue()
        self._inputs = asyncio.Queue()
        self._detector = SpeechDetector(SAMPLE_RATE)
        self._conversation = Conversation(self.script)
        self._speaking, self._interrupted, self._playout_end = False, False, 0.0
        self._started = True
        self._emit(BidiConnectionStartEvent(connection_id=f"offline-{uuid.uuid4().hex[:12]}", model=self.model_id))
        self._spawn(self._converse(), "converse")

    async def stop(self) -> None:
        self._started = False
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for future in self._tool_results.values():
            future.cancel()
        self._tool_results.clear()
        self._events.put_nowait(_END)

    async def receive(self) -> AsyncIterator[Any]:  # type: ignore[override]
        while True:
            item = await self._events.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    async def send(self, content: Any) -> None:
        if not self._started:
            raise RuntimeError("OfflineModel.send() before start() or after stop(): start the agent first")
        if isinstance(content, AudioDelta):
            self._hear(content.source["bytes"])
        elif isinstance(content, BidiMessage):
            for block in content.content:
                if isinstance(block, TextBlock):
                    self._inputs.put_nowait(_Text(block.text))
                elif isinstance(block, ToolResultBlock):
                    self._tool_result(block)
        else:
            raise ValueError(f"OfflineModel cannot take {type(content).__name__}: send audio, text or tool results")

    # --- hearing -----------------------------------------------------------------------------------

    def _hear(self, pcm16: bytes) -> None:
        for event in self._detector.feed(pcm16):
            if isinstance(event, SpeechStarted):
                if self._talking():
                    self._barge_in()
            else:
                self._inputs.put_nowait(event)

    def _talking(self) -> bool:
        return self._speaking or asyncio.get_running_loop().time() < self._playout_end + BARGE_IN_TAIL_S

    def _barge_in(self) -> None:
        """The caller talks over the reply: say so at once and emit no more of it."""
        self.barge_ins += 1
        self._interrupted = True
        self._playout_end = 0.0
        self._emit(BidiBargeInEvent())

    def _tool_result(self, block: ToolResultBlock) -> None:
        future = self._tool_results.get(block.tool_use_id)
        if future is not None and not future.done():
            future.set_result(block)

    # --- thinking ----------------------------------------------------------------------------------

    async def _converse(self) -> None:
        """One input at a time: recognise it (speech) or read it (text), then play the script's turn."""
        assert self.recognizer is not None
        try:
            while True:
                item = await self._inputs.get()
                if isinstance(item, _Text):
                    turn = self._conversation.on_text(item.text)
                    if turn is None:
                        continue  # a note for the model, not for the caller
                else:
                    heard, match = await asyncio.to_thread(
                        self.recognizer.listen, item.pcm16, self._conversation.matcher
                    )
                    turn = self._conversation.on_match(heard, match)
                    log.info("heard %r / %r -> %s", heard.constrained, heard.free, turn.intent)
                await self._play(turn)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - surfaces from receive(), as the contract asks
            self._events.put_nowait(error)

    async def _play(self, turn: Turn) -> None:
        if turn.heard:
            self._transcript("user", turn.heard)
        reply = turn.reply
        if turn.lookup is not None:
            result = await self._use_tool(turn.lookup)
            reply = turn.reply_with(result) if result is not None else turn.lookup_failed
        said_in_full = await self._say(reply)
        if turn.then is not None and said_in_full:
            await self._use_tool(turn.then)

    async def _use_tool(self, call: ToolCall) -> str | None:
        """Ask the agent to run a tool and wait for its result text (None if it failed or never came)."""
        if call.name not in self._tool_names:
            if call.fallback is not None:
                return call.fallback()
            log.warning("the agent has no %s tool: add it to the agent's tools to use it", call.name)
            return None
        tool_use_id = f"tooluse-{uuid.uuid4().hex[:12]}"
        future: asyncio.Future[ToolResultBlock] = asyncio.get_running_loop().create_future()
        self._tool_results[tool_use_id] = future
        tool_use = {"toolUseId": tool_use_id, "name": call.name, "input": dict(call.input)}
        self._emit(BidiToolUseBlocksEvent(tool_uses=[tool_use]))  # type: ignore[list-item]
        try:
            async with asyncio.timeout(self.tool_timeout_s):
                block = await future
        except TimeoutError:
            log.warning("no result from tool %s within %.0fs", call.name, self.tool_timeout_s)
            return None
        finally:
            self._tool_results.pop(tool_use_id, None)
        if block.status != "success":
            return None
        return " ".join(str(item.get("text", item.get("json", ""))) for item in block.content).strip()

    # --- speaking ----------------------------------------------------------------------------------

    async def _say(self, text: str) -> bool:
        """Speak one reply; False if the caller barged in before all of it was sent."""
        pcm = await asyncio.to_thread(self.synthesizer.synthesize, text)
        response_id = f"response-{uuid.uuid4().hex[:12]}"
        audio_id = f"audio-{uuid.uuid4().hex[:12]}"
        self._emit(BidiResponseStartEvent(response_id=response_id))
        self._transcript("assistant", text)
        self._emit(BidiAudioStartEvent(content_id=audio_id))
        self._speaking, self._interrupted = True, False
        try:
            await self._stream_audio(pcm, audio_id)
        finally:
            self._speaking = False
        self._emit(BidiAudioStopEvent(content_id=audio_id))
        self._emit(BidiResponseStopEvent(response_id=response_id))
        return not self._interrupted

    async def _stream_audio(self, pcm: bytes, content_id: str) -> None:
        """Chunks of CHUNK_S, never more than ``lead_s`` ahead of when the caller will hear them."""
        loop = asyncio.get_running_loop()
        chunk_bytes = round(self.output_rate * CHUNK_S) * 2
        playout_start = max(loop.time(), self._playout_end)
        sent_s = 0.0
        for offset in range(0, len(pcm), chunk_bytes):
            ahead = playout_start + sent_s - loop.time()
            if ahead > self.lead_s:
                await asyncio.sleep(ahead - self.lead_s)
            if self._interrupted:
                return
            chunk = pcm[offset : offset + chunk_bytes]
            self._emit(
                BidiAudioDeltaEvent(
                    audio=base64.b64encode(chunk).decode(),
                    format="pcm",
                    sample_rate=self.output_rate,
                    channels=1,
                    content_id=content_id,
                )
            )
            sent_s += len(chunk) / 2 / self.output_rate
            self._playout_end = playout_start + sent_s

    def _transcript(self, role: str, text: str) -> None:
        content_id = f"transcript-{uuid.uuid4().hex[:12]}"
        self._emit(BidiTranscriptStartEvent(role=role, content_id=content_id))  # type: ignore[arg-type]
        self._emit(BidiTranscriptDeltaEvent(delta=text, role=role, content_id=content_id))  # type: ignore[arg-type]
        self._emit(BidiTranscriptStopEvent(role=role, content_id=content_id))  # type: ignore[arg-type]

    # --- plumbing ----------------------------------------------------------------------------------

    def _emit(self, event: Any) -> None:
        self._events.put_nowait(event)

    def _spawn(self, coroutine: Any, name: str) -> None:
        task = asyncio.create_task(coroutine, name=f"offline-model:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

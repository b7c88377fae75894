"""A scripted ``BidiModel``: drives the bridge deterministically, following the Strands model contract.

The contract (strands.bidi.models.BidiModel): ``start()`` opens the connection, ``receive()``
yields ``BidiConnectionStartEvent`` first and must not return before ``stop()``; each transcript
stream is start -> delta(s) -> stop with one ``content_id``. Steps advance on what the model
*receives* (caller audio, text, tool results), so scripts do not depend on wall-clock timing.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import math
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np
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

from agent.pcm_model import END, PcmModel

# --- script steps ----------------------------------------------------------------------------------


@dataclass
class WaitForAudio:
    """Wait until this many more seconds of caller audio have arrived."""

    seconds: float


@dataclass
class WaitForSpeech:
    """Wait until this many more seconds of voiced caller audio have arrived (the model's own VAD)."""

    seconds: float
    rms: float = 500.0
    """PCM16 RMS above which a chunk of caller audio is speech."""


@dataclass
class WaitForText:
    """Wait until a text input containing ``contains`` has arrived (greeting, keypress)."""

    contains: str = ""


@dataclass
class Say:
    """One bot utterance: a tone (so tests can tell utterances apart) with its transcript."""

    text: str
    seconds: float
    tone_hz: float = 440.0
    chunk_ms: int = 60
    realtime: bool = False
    """Emit chunks at real time (a slow model) instead of as fast as possible (like Nova)."""
    stop: bool = True
    """Emit AudioStop at the end (False leaves the stream open for ``SayMore``)."""


@dataclass
class SayMore:
    """More audio for the previous utterance's ``content_id`` (what a model may emit after a barge-in)."""

    seconds: float
    tone_hz: float = 440.0
    stop: bool = True


@dataclass
class BargeIn:
    pass


@dataclass
class UserSaid:
    text: str


@dataclass
class UserStarts:
    """A user transcript opens with no text yet: what strands makes of OpenAI's ``speech_started``."""


@dataclass
class CallTool:
    name: str
    input: dict[str, Any] = field(default_factory=dict)
    wait_for_result: bool = True


@dataclass
class Fail:
    error: Exception


@dataclass
class CloseSilently:
    """The model's stream simply ends (what Nova does when the service closes it)."""


@dataclass
class Sleep:
    seconds: float


@dataclass
class Hold:
    """Do nothing more until stopped."""


@dataclass
class Stall:
    """``send()`` blocks for this long, as ``agent.send()`` does while the SDK swaps a connection."""

    seconds: float


Step = (
    WaitForAudio
    | WaitForText
    | Say
    | SayMore
    | BargeIn
    | UserSaid
    | UserStarts
    | WaitForSpeech
    | CallTool
    | Fail
    | CloseSilently
    | Sleep
    | Hold
    | Stall
)


def tone(seconds: float, rate: int, hz: float, amplitude: float = 0.3) -> bytes:
    samples = np.arange(round(seconds * rate))
    wave = amplitude * 32767 * np.sin(2 * math.pi * hz * samples / rate)
    return wave.astype("<i2").tobytes()


class ScriptedModel(PcmModel):
    """Plays a script of steps; records everything it was sent."""

    def __init__(
        self,
        script: list[Step],
        input_rate: int = 16000,
        output_rate: int = 16000,
        fail_start: Exception | None = None,
        start_delay: float = 0.0,
    ) -> None:
        super().__init__("scripted", input_rate, output_rate)
        self.script = script
        self.fail_start = fail_start
        self.start_delay = start_delay
        self.audio_received = bytearray()
        self.texts: list[str] = []
        self.tool_results: list[ToolResultBlock] = []
        self.system_prompt: str | None = None
        self.tools: list[Any] = []
        self.messages: list[Any] = []
        """The history the agent started the model with."""
        self.step_index = 0
        self._changed = asyncio.Event()
        self._content_ids = itertools.count(1)
        self._last_content_id = ""
        self._stalled_until = 0.0
        self.speech_seconds = 0.0
        """Seconds of voiced caller audio received (by ``WaitForSpeech``'s level)."""
        self._speech_rms = 500.0

    # --- BidiModel -------------------------------------------------------------------------------

    async def start(self, system_prompt: str | None = None, tools: Any = None, messages: Any = None, **_: Any) -> None:
        if self.start_delay:
            await asyncio.sleep(self.start_delay)
        if self.fail_start is not None:
            raise self.fail_start
        self.system_prompt, self.tools = system_prompt, list(tools or [])
        self.messages = list(messages or [])
        self._outbox = asyncio.Queue()  # a restart (stop, then start) leaves the old connection's end behind
        self.emit(BidiConnectionStartEvent(connection_id=str(uuid.uuid4()), model="scripted"))
        self.run(self._run_script(), "scripted-model")

    async def send(self, content: Any) -> None:
        stall = self._stalled_until - asyncio.get_running_loop().time()
        if stall > 0:
            await asyncio.sleep(stall)
        if isinstance(content, AudioDelta):
            self.audio_received.extend(content.source["bytes"])
            self._count_speech(content.source["bytes"])
        elif isinstance(content, BidiMessage):
            for block in content.content:
                if isinstance(block, TextBlock):
                    self.texts.append(block.text)
                elif isinstance(block, ToolResultBlock):
                    self.tool_results.append(block)
        self._changed.set()

    # --- script runner ---------------------------------------------------------------------------

    @property
    def audio_seconds(self) -> float:
        return len(self.audio_received) / 2 / self.input_rate

    def _count_speech(self, pcm: bytes) -> None:
        """Voiced 20 ms frames, as a model's detector hears them (not whole sends: their size varies)."""
        samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float64)
        frame = max(1, self.input_rate // 50)
        for start in range(0, len(samples), frame):
            part = samples[start : start + frame]
            if float(np.sqrt(np.mean(part**2))) > self._speech_rms:
                self.speech_seconds += len(part) / self.input_rate

    async def _until(self, condition: Any) -> None:
        while not condition():
            self._changed.clear()
            await self._changed.wait()

    async def _run_script(self) -> None:
        for index, step in enumerate(self.script):
            self.step_index = index
            await self._run_step(step)
        self.step_index = len(self.script)

    async def _run_step(self, step: Step) -> None:
        match step:
            case WaitForAudio(seconds):
                target = self.audio_seconds + seconds
                await self._until(lambda: self.audio_seconds >= target)
            case WaitForSpeech(seconds, rms):
                self._speech_rms = rms
                target = self.speech_seconds + seconds
                await self._until(lambda: self.speech_seconds >= target)
            case WaitForText(contains):
                await self._until(lambda: any(contains in text for text in self.texts))
            case Say():
                await self._say(step)
            case SayMore(seconds, hz, stop):
                await self._audio(self._last_content_id, seconds, hz, 60, False)
                if stop:
                    self.emit(BidiAudioStopEvent(content_id=self._last_content_id))
            case BargeIn():
                self.emit(BidiBargeInEvent())
            case UserSaid(text):
                self._transcript(text, "user")
            case UserStarts():
                content_id = f"transcript-{next(self._content_ids)}"
                self.emit(BidiTranscriptStartEvent(role="user", content_id=content_id))
            case CallTool(name, tool_input, wait):
                before = len(self.tool_results)
                tool_use = {"toolUseId": f"tool-{uuid.uuid4().hex[:8]}", "name": name, "input": tool_input}
                self.emit(BidiToolUseBlocksEvent(tool_uses=[tool_use]))  # type: ignore[list-item]
                if wait:
                    await self._until(lambda: len(self.tool_results) > before)
            case Fail(error):
                self.emit(error)
            case CloseSilently():
                self.emit(END)
            case Sleep(seconds):
                await asyncio.sleep(seconds)
            case Hold():
                await asyncio.Event().wait()
            case Stall(seconds):
                self._stalled_until = asyncio.get_running_loop().time() + seconds

    async def _say(self, step: Say) -> None:
        response_id = f"response-{next(self._content_ids)}"
        self.emit(BidiResponseStartEvent(response_id=response_id))
        self._transcript(step.text, "assistant")
        content_id = f"audio-{next(self._content_ids)}"
        self._last_content_id = content_id
        self.emit(BidiAudioStartEvent(content_id=content_id))
        await self._audio(content_id, step.seconds, step.tone_hz, step.chunk_ms, step.realtime)
        if step.stop:
            self.emit(BidiAudioStopEvent(content_id=content_id))
        self.emit(BidiResponseStopEvent(response_id=response_id))

    async def _audio(self, content_id: str, seconds: float, hz: float, chunk_ms: int, realtime: bool) -> None:
        pcm = tone(seconds, self.output_rate, hz)
        chunk = self.output_rate * 2 * chunk_ms // 1000
        for offset in range(0, len(pcm), chunk):
            self.emit(
                BidiAudioDeltaEvent(
                    audio=base64.b64encode(pcm[offset : offset + chunk]).decode(),
                    format="pcm",
                    sample_rate=self.output_rate,
                    channels=1,
                    content_id=content_id,
                )
            )
            await asyncio.sleep(chunk_ms / 1000 if realtime else 0)

    def _transcript(self, text: str, role: str) -> None:
        content_id = f"transcript-{next(self._content_ids)}"
        self.emit(BidiTranscriptStartEvent(role=role, content_id=content_id))  # type: ignore[arg-type]
        self.emit(BidiTranscriptDeltaEvent(delta=text, role=role, content_id=content_id))  # type: ignore[arg-type]
        self.emit(BidiTranscriptStopEvent(role=role, content_id=content_id))  # type: ignore[arg-type]

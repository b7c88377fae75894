"""What the local Nova says: the ``Brain`` protocol, replies, and a scripted brain for tests.

The turn engine decides *when* the caller has finished a turn; a brain decides *what* to answer:
a reply is what Nova "heard" (the USER transcript), the text it speaks, the audio of it, and any
tool uses. Brains are shared by every stream of one server, so a scripted conversation carries on
across the connection restarts strands makes; ``BrainsByPrompt`` gives sessions with different system
prompts (a call, and the briefing of a warm transfer about it) brains of their own.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

__all__ = [
    "Brain",
    "BrainsByPrompt",
    "CallerTurn",
    "Pcm",
    "PitchBrain",
    "Reply",
    "ScriptedBrain",
    "Tone",
    "ToolRequest",
    "dominant_hz",
    "goodbye_reply",
    "render_audio",
    "session_brain",
]


@dataclass(frozen=True)
class Tone:
    """Speech stand-in: a sine of ``seconds`` at ``hz`` (loud enough for any level detector)."""

    seconds: float = 1.0
    hz: float = 440.0
    amplitude: int = 8000


@dataclass(frozen=True)
class Pcm:
    """Supplied speech: 16-bit little-endian mono PCM at ``sample_rate`` (resampled as needed)."""

    data: bytes
    sample_rate: int


@dataclass(frozen=True)
class ToolRequest:
    """A tool the reply asks the client to run; ``tool_use_id`` is made up when not given."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    tool_use_id: str | None = None


@dataclass(frozen=True)
class Reply:
    """One model response. ``heard`` is sent as the USER transcript (None: no transcript).

    ``tool_uses`` are issued after the speech; the conversation continues when their results arrive.
    """

    text: str = ""
    audio: Tone | Pcm | None = None
    heard: str | None = None
    tool_uses: tuple[ToolRequest, ...] = ()

    @property
    def speaks(self) -> bool:
        return bool(self.text) or self.audio is not None


@dataclass(frozen=True)
class CallerTurn:
    """A finished caller utterance as the server received it."""

    pcm: bytes
    sample_rate: int

    @property
    def seconds(self) -> float:
        return len(self.pcm) / 2 / self.sample_rate


class Brain(Protocol):
    """Decides replies. Each method may return None: Nova then stays silent."""

    async def on_caller_turn(self, turn: CallerTurn) -> Reply | None: ...

    async def on_text(self, text: str) -> Reply | None: ...

    async def on_tool_result(self, tool_use_id: str, name: str, result: Any) -> Reply | None: ...


class ScriptedBrain:
    """Replies from fixed lists, one per trigger: caller turns, text inputs, tool results.

    When a list runs out, ``default`` answers (None: silence). A caller turn's reply without a
    ``heard`` gets one describing the audio, as an ASR transcript would exist for any speech.
    """

    def __init__(
        self,
        turns: Iterable[Reply] = (),
        texts: Iterable[Reply] = (),
        tool_results: Iterable[Reply] = (),
        default: Reply | None = None,
    ) -> None:
        self._turns = deque(turns)
        self._texts = deque(texts)
        self._tool_results = deque(tool_results)
        self.default = default
        self.heard: list[CallerTurn] = []
        self.texts: list[str] = []
        self.tool_results: list[tuple[str, str, Any]] = []

    async def on_caller_turn(self, turn: CallerTurn) -> Reply | None:
        self.heard.append(turn)
        reply = self._turns.popleft() if self._turns else self.default
        if reply is not None and reply.heard is None:
            reply = Reply(reply.text, reply.audio, f"caller turn {len(self.heard)}", reply.tool_uses)
        return reply

    async def on_text(self, text: str) -> Reply | None:
        self.texts.append(text)
        return self._texts.popleft() if self._texts else self.default

    async def on_tool_result(self, tool_use_id: str, name: str, result: Any) -> Reply | None:
        self.tool_results.append((tool_use_id, name, result))
        return self._tool_results.popleft() if self._tool_results else self.default


class BrainsByPrompt:
    """Several conversations on one server, told apart by each session's system prompt.

    A session whose system prompt contains one of the keys is answered by that key's brain (the first key that
    matches, in order), any other session by ``default``. Set it as a local server's ``brain``.
    """

    def __init__(self, by_prompt: Mapping[str, Brain], default: Brain) -> None:
        self.by_prompt = dict(by_prompt)
        self.default = default

    def choose(self, system_prompt: str) -> Brain:
        return next((brain for key, brain in self.by_prompt.items() if key in system_prompt), self.default)


def session_brain(brain: Brain | BrainsByPrompt, system_prompt: Callable[[], str]) -> Brain:
    """The brain one session talks to. ``system_prompt`` reads the session's prompt as far as it has arrived."""
    if isinstance(brain, BrainsByPrompt):
        return _PromptedBrain(brain, system_prompt)
    return brain


class _PromptedBrain:
    """One session's view of a ``BrainsByPrompt``: it chooses at each trigger, when the prompt is known (every
    client sends it before the conversation starts: Nova's SYSTEM content, OpenAI's ``session.update``, Gemini's
    ``setup``)."""

    def __init__(self, brains: BrainsByPrompt, system_prompt: Callable[[], str]) -> None:
        self._brains = brains
        self._system_prompt = system_prompt

    def _brain(self) -> Brain:
        return self._brains.choose(self._system_prompt())

    async def on_caller_turn(self, turn: CallerTurn) -> Reply | None:
        return await self._brain().on_caller_turn(turn)

    async def on_text(self, text: str) -> Reply | None:
        return await self._brain().on_text(text)

    async def on_tool_result(self, tool_use_id: str, name: str, result: Any) -> Reply | None:
        return await self._brain().on_tool_result(tool_use_id, name, result)


def dominant_hz(pcm: bytes, sample_rate: int) -> float:
    """The strongest frequency in ``pcm`` (PCM16 mono): how a tone-speaking caller says what it means."""
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    if samples.size < 2:
        return 0.0
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(samples.size)))
    return float(np.argmax(spectrum[1:]) + 1) * sample_rate / samples.size


class PitchBrain:
    """Answers each caller turn by its pitch, the same for every call of a server (no shared script).

    Many concurrent calls can each follow their own conversation: a caller that speaks a tone within
    ``tolerance_hz`` of a key in ``replies`` gets that reply (a goodbye, say), any other turn ``default``.
    Text inputs (the greeting) get ``default``; tool results get nothing (the model stays quiet after a tool)."""

    def __init__(self, replies: dict[float, Reply], default: Reply, tolerance_hz: float = 40.0) -> None:
        self._replies = replies
        self._default = default
        self._tolerance_hz = tolerance_hz

    async def on_caller_turn(self, turn: CallerTurn) -> Reply | None:
        hz = dominant_hz(turn.pcm, turn.sample_rate)
        for key, reply in self._replies.items():
            if abs(hz - key) <= self._tolerance_hz:
                return reply
        return Reply(self._default.text, self._default.audio, f"a {hz:.0f} Hz turn", self._default.tool_uses)

    async def on_text(self, text: str) -> Reply | None:
        return self._default

    async def on_tool_result(self, tool_use_id: str, name: str, result: Any) -> Reply | None:
        return None


def goodbye_reply(seconds: float = 1.0) -> Reply:
    """A spoken goodbye followed by the ``end_conversation`` tool (what a model does when the caller is done)."""
    return Reply(
        text="Thanks for calling. Goodbye!",
        audio=Tone(seconds, hz=520.0),
        heard="goodbye",
        tool_uses=(ToolRequest("end_conversation", {"reason": "the caller said goodbye"}),),
    )


def render_audio(audio: Tone | Pcm | None, text: str, sample_rate: int) -> bytes:
    """The PCM16 a reply speaks at ``sample_rate``; without audio, a tone as long as the text would take."""
    if audio is None:
        audio = Tone(seconds=max(0.3, 0.06 * len(text)))
    if isinstance(audio, Tone):
        count = int(audio.seconds * sample_rate)
        phase = 2 * math.pi * audio.hz * np.arange(count) / sample_rate
        return (audio.amplitude * np.sin(phase)).astype("<i2").tobytes()
    samples = np.frombuffer(audio.data, dtype="<i2").astype(np.float64)
    if audio.sample_rate == sample_rate or not samples.size:
        return audio.data
    count = round(samples.size * sample_rate / audio.sample_rate)
    positions = np.arange(count) * (audio.sample_rate / sample_rate)
    return np.interp(positions, np.arange(samples.size), samples).round().astype("<i2").tobytes()

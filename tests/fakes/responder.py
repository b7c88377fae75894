"""A model that answers whatever it is given, and goes quiet on purpose: the dead-air tests' counterpart.

Unlike the scripted model (steps in a fixed order), it reacts: every caller turn (its own voice detector: speech,
then ``END_OF_TURN_S`` of quiet), every text and every tool result gets a reply, a tone whose pitch says what it
answers. Faults are set by answer number (counted over the model's whole life, 1-based): ``silent`` answers never
come, and the connection then says nothing more (a stalled stream) unless ``stalls_connection`` is off (a model that
just did not answer); ``stalls`` stop after ``STALL_AFTER_S`` of audio, their stream left open, and the connection
says nothing more. A connection replaced by strands (``stop()`` then ``start()``) answers normally again; ``dead``
answers nothing on any connection.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from strands.bidi.types import (
    AudioDelta,
    BidiAudioDeltaEvent,
    BidiAudioStartEvent,
    BidiAudioStopEvent,
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
from tests.fakes.model import tone

END_OF_TURN_S = 0.6
SPEECH_RMS = 500.0
STALL_AFTER_S = 0.4
PITCH = {"greeting": 400.0, "caller": 800.0, "check_in": 950.0, "nudge": 1100.0, "again": 1250.0, "goodbye": 1400.0}
PITCH_TOOL_RESULT = 1550.0
"""Far from one another and from the hold sound's notes (523 and 659 Hz)."""


@dataclass(eq=False)
class Responder(PcmModel):
    """See the module docstring. ``tool``: on answer number ``tool[0]`` it calls tool ``tool[1]`` instead."""

    silent: set[int] = field(default_factory=set)
    stalls: set[int] = field(default_factory=set)
    tool: tuple[int, str, dict[str, Any]] | None = None
    reply_s: float = 0.6
    stalls_connection: bool = True
    dead: bool = False
    answers: list[str] = field(default_factory=list)
    """What each answer was for (its ``PITCH`` key, or ``tool``/``tool_result``), in order, silent ones included."""
    texts: list[str] = field(default_factory=list)
    connections: int = 0

    def __post_init__(self) -> None:
        super().__init__("responder", 16000, 16000)
        self._ids = itertools.count(1)
        self._quiet_s = 0.0
        self._speaking = False
        self._stalled = False
        self._own_tools: set[str] = set()

    async def start(self, *_: Any, **__: Any) -> None:
        self.connections += 1
        self._outbox = asyncio.Queue()
        self._speaking, self._quiet_s, self._stalled = False, 0.0, False
        self.emit(BidiConnectionStartEvent(connection_id=str(uuid.uuid4()), model="responder"))
        self.started = True

    async def send(self, content: Any) -> None:
        if isinstance(content, AudioDelta):
            self._hear(content.source["bytes"])
            return
        if not isinstance(content, BidiMessage):
            return
        for block in content.content:
            if isinstance(block, ToolResultBlock):
                if block.tool_use_id in self._own_tools:  # not end_conversation's: nothing is said after it
                    self._answer("tool_result")
            elif isinstance(block, TextBlock):
                self.texts.append(block.text)
                self._answer(_kind_of(block.text))

    def _hear(self, pcm: bytes) -> None:
        samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float64)
        if not samples.size:
            return
        seconds = samples.size / self.input_rate
        if float(np.sqrt(np.mean(samples**2))) > SPEECH_RMS:
            self._speaking, self._quiet_s = True, 0.0
        elif self._speaking:
            self._quiet_s += seconds
            if self._quiet_s >= END_OF_TURN_S:
                self._speaking = False
                self._answer("caller")

    def _answer(self, kind: str) -> None:
        if self._stalled or self.dead:
            return
        number = len(self.answers) + 1
        if self.tool is not None and self.tool[0] == number:
            self.answers.append("tool")
            use = {"toolUseId": f"tool-{number}", "name": self.tool[1], "input": self.tool[2]}
            self._own_tools.add(use["toolUseId"])
            self.emit(BidiToolUseBlocksEvent(tool_uses=[use]))  # type: ignore[list-item]
            return
        self.answers.append(kind)
        if number in self.silent:
            self._stalled = self.stalls_connection
            return
        self._stalled = number in self.stalls
        hz = PITCH_TOOL_RESULT if kind == "tool_result" else PITCH[kind]
        seconds = STALL_AFTER_S if number in self.stalls else self.reply_s
        self._say(kind, hz, seconds, finished=number not in self.stalls)
        if kind == "goodbye":
            use = {"toolUseId": f"tool-{number}", "name": "end_conversation", "input": {"reason": "caller silent"}}
            self.emit(BidiToolUseBlocksEvent(tool_uses=[use]))  # type: ignore[list-item]

    def _say(self, text: str, hz: float, seconds: float, finished: bool) -> None:
        response, audio, transcript = (f"{name}-{next(self._ids)}" for name in ("response", "audio", "text"))
        self.emit(BidiResponseStartEvent(response_id=response))
        self.emit(BidiTranscriptStartEvent(role="assistant", content_id=transcript))
        self.emit(BidiTranscriptDeltaEvent(delta=text, role="assistant", content_id=transcript))
        self.emit(BidiTranscriptStopEvent(role="assistant", content_id=transcript))
        self.emit(BidiAudioStartEvent(content_id=audio))
        pcm = tone(seconds, self.output_rate, hz)
        chunk = self.output_rate * 2 // 10
        for offset in range(0, len(pcm), chunk):
            self.emit(
                BidiAudioDeltaEvent(
                    audio=base64.b64encode(pcm[offset : offset + chunk]).decode(),
                    format="pcm",
                    sample_rate=self.output_rate,
                    channels=1,
                    content_id=audio,
                )
            )
        if finished:
            self.emit(BidiAudioStopEvent(content_id=audio))
            self.emit(BidiResponseStopEvent(response_id=response))


def _kind_of(text: str) -> str:
    lowered = text.lower()
    for needle, kind in (
        ("still there", "check_in"),
        ("goodbye", "goodbye"),
        ("did not hear you", "again"),
        ("waiting for your answer", "nudge"),
    ):
        if needle in lowered:
            return kind
    return "greeting"

"""A ``BidiModel`` that plays back the agent side of a recorded call, so the call re-runs with no cloud.

It emits the model's recorded events (responses, transcripts, audio, barge-ins, tool calls) in their
recorded order. Each is released once the model has been given as much as it had been given when the
event was recorded: seconds of caller audio, text inputs (greeting, keypresses) and tool results (see
``input`` in ``telephony.recording.format``). So timing follows the caller's stream, not the wall clock,
and a replay at any speed produces the same events in the same places.

Only what a *model* emits is replayed: transcript blocks, tool results and connection lifecycle events
come from the agent itself, and tool calls run the real tools again (``end_conversation`` hangs up).
Events recorded after the call started ending (the caller's ``stop``, our hang-up or transfer) are
left out: they reached nobody.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable
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
    BidiReasoningDeltaEvent,
    BidiReasoningStartEvent,
    BidiReasoningStopEvent,
    BidiResponseStartEvent,
    BidiResponseStopEvent,
    BidiTextDeltaEvent,
    BidiTextStartEvent,
    BidiTextStopEvent,
    BidiToolUseBlocksEvent,
    BidiTranscriptDeltaEvent,
    BidiTranscriptStartEvent,
    BidiTranscriptStopEvent,
    BidiUsageEvent,
)
from strands.types.content import TextBlock
from strands.types.tools import ToolResultBlock

from agent.pcm_model import PcmModel

DEFAULT_RATE = 16000
_MODEL_EVENTS: dict[str, type[Any]] = {
    "bidi_response_start": BidiResponseStartEvent,
    "bidi_response_stop": BidiResponseStopEvent,
    "bidi_audio_start": BidiAudioStartEvent,
    "bidi_audio_delta": BidiAudioDeltaEvent,
    "bidi_audio_stop": BidiAudioStopEvent,
    "bidi_transcript_start": BidiTranscriptStartEvent,
    "bidi_transcript_delta": BidiTranscriptDeltaEvent,
    "bidi_transcript_stop": BidiTranscriptStopEvent,
    "bidi_text_start": BidiTextStartEvent,
    "bidi_text_delta": BidiTextDeltaEvent,
    "bidi_text_stop": BidiTextStopEvent,
    "bidi_reasoning_start": BidiReasoningStartEvent,
    "bidi_reasoning_delta": BidiReasoningDeltaEvent,
    "bidi_reasoning_stop": BidiReasoningStopEvent,
    "bidi_barge_in": BidiBargeInEvent,
    "bidi_tool_use_blocks": BidiToolUseBlocksEvent,
    "bidi_usage": BidiUsageEvent,
}
"""Events a model emits (the agent adds the rest), by their ``type``."""
_EPSILON_S = 1e-5


@dataclass(frozen=True)
class ReplayStep:
    """One recorded model event and what the model had been given when it came out."""

    event: dict[str, Any]
    audio_s: float
    texts: int
    tool_results: int

    def build(self) -> Any:
        """The event object again, built through its own constructor."""
        fields = {key: value for key, value in self.event.items() if key != "type"}
        return _MODEL_EVENTS[self.event["type"]](**fields)


def replay_steps(records: Iterable[dict[str, Any]]) -> list[ReplayStep]:
    """The model events worth replaying, in order (see the module docstring for what is left out)."""
    steps: list[ReplayStep] = []
    for record in records:
        if _call_ending(record):
            break
        event = record.get("event")
        if record.get("kind") != "agent" or not isinstance(event, dict) or event.get("type") not in _MODEL_EVENTS:
            continue
        given = record.get("input") or {}
        steps.append(
            ReplayStep(
                event=event,
                audio_s=float(given.get("audio_s", 0.0)),
                texts=int(given.get("texts", 0)),
                tool_results=int(given.get("tool_results", 0)),
            )
        )
    return steps


def _call_ending(record: dict[str, Any]) -> bool:
    if record.get("kind") == "note":
        return record.get("note") in ("hangup", "transfer")
    message = record.get("message")
    return record.get("kind") == "twilio_in" and isinstance(message, dict) and message.get("event") == "stop"


class ReplayModel(PcmModel):
    """Replays a recording's model events, paced by the caller audio, texts and tool results it receives."""

    def __init__(self, records: Iterable[dict[str, Any]], rates: tuple[int, int] | None = None) -> None:
        """``records`` are a recording's lines (``Recording.records``), ``rates`` its model's (input, output)."""
        self.steps = replay_steps(records)
        super().__init__("replay", *(rates or (DEFAULT_RATE, DEFAULT_RATE)))
        self.audio_bytes = 0
        self.texts: list[str] = []
        self.tool_results = 0
        self.emitted = 0
        self._changed = asyncio.Event()

    # --- BidiModel -------------------------------------------------------------------------------

    async def start(self, system_prompt: str | None = None, tools: Any = None, messages: Any = None, **_: Any) -> None:
        self.emit(BidiConnectionStartEvent(connection_id=str(uuid.uuid4()), model="replay"))
        self.run(self._play(), "replay-model")

    async def send(self, content: Any) -> None:
        if isinstance(content, AudioDelta):
            self.audio_bytes += len(content.source["bytes"])
        elif isinstance(content, BidiMessage):
            for block in content.content:
                if isinstance(block, TextBlock):
                    self.texts.append(block.text)
                elif isinstance(block, ToolResultBlock):
                    self.tool_results += 1
        self._changed.set()

    # --- playback --------------------------------------------------------------------------------

    @property
    def audio_seconds(self) -> float:
        """Caller audio received so far."""
        return self.audio_bytes / 2 / self.input_rate

    def _due(self, step: ReplayStep) -> bool:
        return (
            self.audio_seconds >= step.audio_s - _EPSILON_S
            and len(self.texts) >= step.texts
            and self.tool_results >= step.tool_results
        )

    async def _play(self) -> None:
        for step in self.steps:
            while not self._due(step):
                self._changed.clear()
                await self._changed.wait()
            self.emit(step.build())
            self.emitted += 1
            await asyncio.sleep(0)  # let the agent take each event as the live model's stream would

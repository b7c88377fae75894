"""The Gemini adapter losing a connection in the middle of a turn, against the local Gemini, driven as strands'
agent drives it (``receive`` until the restart's ``ConnectionTimeoutError``, ``restart``, then the tool's result).

strands' own client loses two things there: the caller's words (a user transcript is closed only at the turn's
end) and the tool's result (sent as a ``toolResponse`` for a call the new connection never made).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
from strands.bidi.models.model import ConnectionTimeoutError
from strands.bidi.types import BidiMessage, BidiToolUseBlocksEvent, BidiTranscriptStopEvent
from strands.bidi.types.media import AudioDelta
from strands.types.tools import ToolResultBlock

from agent.gemini import GeminiLiveModel
from telephony.simulation.local_gemini import LocalGemini, Reply, ScriptedBrain, Tone, ToolRequest

from ..waiting import until

LOOKUP = {
    "name": "lookup",
    "description": "Look something up.",
    "inputSchema": {"json": {"type": "object", "properties": {"query": {"type": "string"}}}},
}


def caller_says(seconds: float) -> bytes:
    """A tone at 16 kHz, then the quiet that ends the turn."""
    t = np.arange(int(seconds * 16000)) / 16000
    return (0.3 * 32767 * np.sin(2 * math.pi * 300 * t)).astype("<i2").tobytes() + bytes(32000)


async def events_until_the_restart(events: AsyncIterator[Any], gemini: LocalGemini) -> list[Any]:
    """Events up to the tool call; then the connection is told to go: the rest, up to the restart's error."""
    seen: list[Any] = []
    with pytest.raises(ConnectionTimeoutError):
        async for event in events:
            seen.append(event)
            if isinstance(event, BidiToolUseBlocksEvent):
                assert gemini.go_away(0)
    return seen


async def test_a_connection_lost_while_a_tool_runs_keeps_the_words_and_gives_the_result_as_text(
    local_gemini: LocalGemini,
) -> None:
    lookup = ToolRequest("lookup", {"query": "noon"}, tool_use_id="function-call-1")
    local_gemini.brain = brain = ScriptedBrain(
        turns=[Reply(text="Let me look.", audio=Tone(0.3), heard="what time is it", tool_uses=(lookup,))],
        texts=[Reply(text="It is noon.", audio=Tone(0.3))],
    )
    model = GeminiLiveModel(model_id="gemini-live-2.5-flash-preview")
    await model.start(system_prompt="test", tools=[LOOKUP])
    try:
        events = model.receive()
        pcm = caller_says(0.5)
        for offset in range(0, len(pcm), 3200):
            await model.send(AudioDelta(format="pcm", source={"bytes": pcm[offset : offset + 3200]}))
        seen = await events_until_the_restart(events.__aiter__(), local_gemini)
        stops = [event for event in seen if isinstance(event, BidiTranscriptStopEvent) and event.role == "user"]
        assert len(stops) == 1, "the caller's words were dropped with the connection"
        await model.restart(system_prompt="test", tools=[LOOKUP], messages=[])  # resumes by handle
        result = ToolResultBlock(tool_use_id="function-call-1", status="success", content=[{"text": "noon"}])
        await model.send(BidiMessage(content=[result]))
        await until(lambda: len(brain.texts) == 1, timeout=5.0, what="the result to reach the new connection")
    finally:
        await model.stop()
        await asyncio.sleep(0)
    first, resumed = local_gemini.sessions
    assert resumed.resumed_handle is not None and resumed.tool_results == []  # no toolResponse for a call it lacks
    assert "tool call finished" in brain.texts[0] and "Tool: lookup" in brain.texts[0] and "noon" in brain.texts[0]
    assert first.tool_results == []  # the result came after the first connection had gone

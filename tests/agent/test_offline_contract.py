"""The offline model under a real strands ``BidiAgent``: the event contract the bridge relies on."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from strands import tool
from strands.bidi import BidiAgent
from strands.bidi.types import (
    AudioDelta,
    BidiAudioDeltaEvent,
    BidiAudioStartEvent,
    BidiAudioStopEvent,
    BidiBargeInEvent,
    BidiConnectionStartEvent,
    BidiResponseStartEvent,
    BidiResponseStopEvent,
    BidiToolUseBlocksEvent,
    BidiTranscriptDeltaEvent,
    BidiTranscriptStartEvent,
    BidiTranscriptStopEvent,
)

from agent.offline import FRONT_DESK, OfflineModel
from agent.tools import end_conversation
from telephony.controls import CALL_CONTROL_KEY

from .test_offline_audio import caller_says, pieces

GREETING_INSTRUCTION = "The caller has just been connected. Greet them in one short sentence."


@tool
def current_time(timezone: str = "") -> str:
    """A clock stuck at 4:20 PM, so the spoken reply is known.

    Args:
        timezone: Ignored.
    """
    return "4:20 PM"


@dataclass
class FakeCall:
    """The ``CallControl`` the bridge would hand the tools."""

    ended: list[str] = field(default_factory=list)

    def end_call(self, reason: str) -> None:
        self.ended.append(reason)

    def transfer_call(self, destination: str, reason: str) -> None:
        raise AssertionError("the offline script never transfers")


@dataclass
class Session:
    agent: BidiAgent
    model: OfflineModel
    call: FakeCall
    events: list[Any] = field(default_factory=list)

    async def wait_for(self, kind: type, count: int = 1, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            while sum(isinstance(event, kind) for event in self.events) < count:
                await asyncio.sleep(0.01)

    def of(self, kind: type) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]

    async def say(self, audio: bytes, realtime: bool = False) -> None:
        for piece in pieces(audio):
            await self.agent.send(AudioDelta(format="pcm", source={"bytes": piece}))
            await asyncio.sleep(0.02 if realtime else 0)


@asynccontextmanager
async def offline_agent(lead_s: float = 60.0) -> AsyncIterator[Session]:
    """A started agent on the offline model; its events are collected as the bridge would consume them."""
    model = OfflineModel(lead_s=lead_s)
    agent = BidiAgent(model=model, tools=[end_conversation, current_time])
    session = Session(agent, model, FakeCall())
    await agent.start(invocation_state={CALL_CONTROL_KEY: session.call})

    async def consume() -> None:
        async for event in agent.receive():
            session.events.append(event)

    consumer = asyncio.create_task(consume())
    try:
        yield session
    finally:
        await agent.stop()
        consumer.cancel()
        await asyncio.gather(consumer, return_exceptions=True)


def reply_events(events: list[Any]) -> list[Any]:
    """The model's own events (without the agent's additions), from the first ResponseStart on."""
    kinds = (
        BidiResponseStartEvent,
        BidiTranscriptStartEvent,
        BidiTranscriptDeltaEvent,
        BidiTranscriptStopEvent,
        BidiAudioStartEvent,
        BidiAudioDeltaEvent,
        BidiAudioStopEvent,
        BidiResponseStopEvent,
        BidiToolUseBlocksEvent,
        BidiBargeInEvent,
    )
    return [event for event in events if isinstance(event, kinds)]


async def test_a_reply_follows_the_contract() -> None:
    async with offline_agent() as session:
        await session.agent.send(GREETING_INSTRUCTION)
        await session.wait_for(BidiResponseStopEvent)
    assert isinstance(session.events[0], BidiConnectionStartEvent)
    events = reply_events(session.events)
    kinds = [type(event) for event in events]
    assert kinds[:5] == [
        BidiResponseStartEvent,
        BidiTranscriptStartEvent,
        BidiTranscriptDeltaEvent,
        BidiTranscriptStopEvent,
        BidiAudioStartEvent,
    ]
    assert kinds[-2:] == [BidiAudioStopEvent, BidiResponseStopEvent]
    assert set(kinds[5:-2]) == {BidiAudioDeltaEvent}
    start, delta, stop = events[1:4]
    assert start.role == delta.role == stop.role == "assistant"
    assert start.content_id == delta.content_id == stop.content_id
    assert delta.delta == FRONT_DESK.greeting
    assert events[0].response_id == events[-1].response_id
    audio_id = events[4].content_id
    chunks = events[5:-2]
    assert {chunk.content_id for chunk in chunks} == {audio_id} and events[-2].content_id == audio_id
    assert {(chunk.format, chunk.sample_rate, chunk.channels) for chunk in chunks} == {("pcm", 16000, 1)}
    durations = [len(base64.b64decode(chunk.audio)) / 2 / 16000 for chunk in chunks]
    assert all(0.04 <= seconds <= 0.1 for seconds in durations[:-1]) and durations[-1] <= 0.1
    assert 4.0 < sum(durations) < 15.0, "the greeting is a few sentences long"


async def test_goodbye_is_said_then_ends_the_conversation() -> None:
    async with offline_agent() as session:
        await session.say(caller_says("goodbye"))
        await session.wait_for(BidiToolUseBlocksEvent)
        async with asyncio.timeout(5):
            while not session.call.ended:
                await asyncio.sleep(0.01)
    events = reply_events(session.events)
    user = [e for e in events if isinstance(e, BidiTranscriptDeltaEvent) and e.role == "user"]
    assert [e.delta for e in user] == ["goodbye"]
    said = [e.delta for e in events if isinstance(e, BidiTranscriptDeltaEvent) and e.role == "assistant"]
    assert said == ["Thanks for calling. Goodbye!"]
    tool_use = session.of(BidiToolUseBlocksEvent)[0].tool_uses[0]
    assert tool_use["name"] == "end_conversation" and tool_use["input"]["reason"]
    stop_index = next(i for i, e in enumerate(events) if isinstance(e, BidiResponseStopEvent))
    tool_index = next(i for i, e in enumerate(events) if isinstance(e, BidiToolUseBlocksEvent))
    assert stop_index < tool_index, "the goodbye is said in full before the hang-up is asked for"
    assert session.call.ended == ["the caller said goodbye"]


async def test_the_time_comes_from_the_tool_result() -> None:
    async with offline_agent() as session:
        await session.say(caller_says("what time is it"))
        await session.wait_for(BidiResponseStopEvent)
    events = reply_events(session.events)
    tool_index = next(i for i, e in enumerate(events) if isinstance(e, BidiToolUseBlocksEvent))
    response_index = next(i for i, e in enumerate(events) if isinstance(e, BidiResponseStartEvent))
    assert tool_index < response_index, "the model asks the tool before it answers"
    assert events[tool_index].tool_uses[0]["name"] == "current_time"
    said = [e.delta for e in events if isinstance(e, BidiTranscriptDeltaEvent) and e.role == "assistant"]
    assert said == ["It is 4:20 PM."]


async def test_a_keypress_selects_an_intent() -> None:
    async with offline_agent() as session:
        await session.agent.send("The caller pressed 2 on their keypad.")
        await session.wait_for(BidiResponseStopEvent)
    said = [e.delta for e in session.of(BidiTranscriptDeltaEvent) if e.role == "assistant"]
    assert said == [FRONT_DESK.intent("joke").replies[0]]


async def test_speech_over_a_reply_barges_in_and_stops_its_audio() -> None:
    async with offline_agent(lead_s=0.3) as session:
        await session.agent.send(GREETING_INSTRUCTION)
        await session.wait_for(BidiAudioDeltaEvent)
        greeting_audio = session.of(BidiAudioStartEvent)[0].content_id
        silence_s = 0.4
        audio = caller_says("tell me a joke", before_s=silence_s)
        sent = 0.0
        barge_in_at: float | None = None
        started = time.monotonic()
        for piece in pieces(audio):
            await session.agent.send(AudioDelta(format="pcm", source={"bytes": piece}))
            sent += len(piece) / 32000
            await asyncio.sleep(max(0.0, started + sent - time.monotonic()))
            if barge_in_at is None and session.of(BidiBargeInEvent):
                barge_in_at = sent
        await session.wait_for(BidiTranscriptDeltaEvent, count=3)  # greeting, caller, the joke's text
    assert barge_in_at is not None, "no barge-in while the greeting played"
    delay = barge_in_at - silence_s
    print(f"\nbarge-in {delay * 1000:.0f} ms after the caller started speaking")
    assert 0.0 < delay <= 0.3
    events = reply_events(session.events)
    barge_index = next(i for i, e in enumerate(events) if isinstance(e, BidiBargeInEvent))
    late_audio = [
        e for e in events[barge_index:] if isinstance(e, BidiAudioDeltaEvent) and e.content_id == greeting_audio
    ]
    assert late_audio == [], "no more of the interrupted reply after the barge-in"
    greeting_seconds = sum(
        len(base64.b64decode(e.audio)) / 32000
        for e in events
        if isinstance(e, BidiAudioDeltaEvent) and e.content_id == greeting_audio
    )
    assert greeting_seconds < 2.0, "paced audio: most of the greeting was never sent"
    said = [e.delta for e in events if isinstance(e, BidiTranscriptDeltaEvent) and e.role == "assistant"]
    assert said[-1] == FRONT_DESK.intent("joke").replies[0], "the interrupting request is answered"


async def test_receive_lasts_until_stop() -> None:
    model = OfflineModel()
    await model.start(tools=[])
    stream = model.receive()
    assert isinstance(await anext(stream), BidiConnectionStartEvent)
    waiting = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.2)
    assert not waiting.done(), "receive() must not end on its own"
    await model.stop()
    try:
        await asyncio.wait_for(waiting, 2)
    except StopAsyncIteration:
        pass
    else:  # pragma: no cover - a stray event would be a bug too
        raise AssertionError("receive() yielded after stop()")

"""Stopping a model whose reply nobody reads any more (``agent.closing``): as a call that hangs up mid-reply.

The local server streams a long reply in a burst; the test reads its first audio, stops reading (as strands does
when the bridge stops the agent) and lets the rest arrive unread, then stops the agent. Without the drain
``websockets`` stops reading the network once 16 messages wait unread, never sees the server's close frame and
the stop lasts its 10 s close timeout (the bridge gives up after 5 s, leaving the connection open)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from strands.bidi import BidiAgent
from strands.bidi.types import BidiAudioDeltaEvent
from websockets.exceptions import ConnectionClosed

from agent.closing import DrainWhileClosing
from agent.gemini import GeminiLiveModel
from agent.openai import OpenAIRealtime
from telephony.simulation.local_gemini import LocalGemini, Reply, ScriptedBrain, Tone
from telephony.simulation.local_gemini.turns import Pacing as GeminiPacing
from telephony.simulation.local_nova import Pacing
from telephony.simulation.local_openai import LocalOpenAI

LONG_REPLY = Reply(text="Let me read you the whole menu.", audio=Tone(20.0))
BURST = 200.0
"""Times faster than real time: the reply's hundreds of messages all arrive while nothing reads them."""


def gemini_model() -> Any:
    return GeminiLiveModel(model_id="gemini-live-2.5-flash-preview")


def openai_model() -> Any:
    return OpenAIRealtime(model_id="gpt-realtime", transcription_model_id="gpt-4o-transcribe")


async def stop_after_an_unread_reply(model: Any) -> float:
    """Start an agent on ``model``, ask for the reply, read its first audio, leave the rest unread: stop's time."""
    agent = BidiAgent(model=model)
    await agent.start()
    await agent.send("Read me the menu.")
    async for event in agent.receive():
        if isinstance(event, BidiAudioDeltaEvent):
            break
    await asyncio.sleep(0.5)  # the rest of the reply arrives, unread
    started = time.monotonic()
    await asyncio.wait_for(agent.stop(), 15)
    return time.monotonic() - started


async def test_gemini_stops_at_once_and_closes_with_a_reply_unread(local_gemini: LocalGemini) -> None:
    local_gemini.brain = ScriptedBrain(default=LONG_REPLY)
    local_gemini.pacing = GeminiPacing(speedup=BURST)
    took = await stop_after_an_unread_reply(gemini_model())
    assert took < 1.0, f"stop took {took:.2f} s"
    [session] = local_gemini.sessions
    await asyncio.sleep(0.2)
    assert session.ended_by == "client closed"  # the server saw the connection end, not left open


async def test_openai_stops_at_once_and_closes_with_a_reply_unread(local_openai: LocalOpenAI) -> None:
    local_openai.brain = ScriptedBrain(default=LONG_REPLY)
    local_openai.pacing = Pacing(speedup=BURST)
    took = await stop_after_an_unread_reply(openai_model())
    assert took < 1.0, f"stop took {took:.2f} s"
    [session] = local_openai.sessions
    await asyncio.sleep(0.2)
    assert session.ended_by == "client closed"


class FakeSocket:
    """Messages keep coming until the model's own stop closes it; another reader may hold it."""

    def __init__(self, held_by_another_reader: bool = False) -> None:
        self.held = held_by_another_reader
        self.closed = False
        self.dropped = 0

    async def recv(self) -> str:
        if self.held:
            raise RuntimeError("cannot call recv while another coroutine is already running recv")
        if self.closed:
            raise ConnectionClosed(None, None)
        await asyncio.sleep(0.001)
        self.dropped += 1
        return "{}"


class StrandsLike:
    """strands' part: stop() closes the socket after a while; restart() stops, then starts."""

    def __init__(self, socket: FakeSocket) -> None:
        self.socket = socket

    async def stop(self) -> None:
        await asyncio.sleep(0.05)
        self.socket.closed = True

    async def restart(self) -> None:
        await self.stop()


class Model(DrainWhileClosing, StrandsLike):
    def _model_socket(self) -> FakeSocket:  # type: ignore[override]
        return self.socket


async def test_a_stop_reads_what_arrives_but_a_restart_leaves_it_to_the_reader() -> None:
    stopped = Model(FakeSocket())
    await stopped.stop()
    assert stopped.socket.dropped > 5 and stopped.socket.closed
    restarted = Model(FakeSocket())
    await restarted.restart()
    assert restarted.socket.dropped == 0 and restarted.socket.closed and not restarted._restarting
    held = Model(FakeSocket(held_by_another_reader=True))
    await held.stop()  # the drain gives way to the reader that holds the socket; the stop goes on
    assert held.socket.closed


@pytest.mark.parametrize("make", [gemini_model, openai_model], ids=["gemini", "openai"])
def test_both_websocket_models_drain_first(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "fake")
    monkeypatch.setenv("OPENAI_API_KEY", "fake")
    model = make()
    assert type(model).__mro__.index(DrainWhileClosing) == 1  # first: its stop() wraps every other one
    assert model._model_socket() is None  # nothing open yet

"""What the call tests through real model clients share: a line to the app on one model, and the caller's ear.

A line is the real app with the default agent factory (``agent.factory:create_agent``) on one model, configured
the way ``voicebot serve`` is, whose model client talks to a local server (``local_nova``, ``local_openai``,
``local_gemini``). When the line closes, every call must be over and every task it started gone.

Bot speech is tones (a reply's frequency tells which reply the caller heard); caller speech is a tone the local
server's level detector hears as a turn. The bridge does not know which model it runs, so neither do these helpers.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx
import numpy as np
import pytest

from telephony.app import create_app
from telephony.bridge import session as session_module
from telephony.bridge.ending import load_apology
from telephony.bridge.observer import ObserverFactory
from telephony.bridge.session import CallSession
from telephony.codec import pcm16_to_ulaw
from telephony.config import env_name
from telephony.simulation.caller.simulated_caller import SimulatedCaller
from telephony.simulation.local_gemini import LocalGemini
from telephony.simulation.local_nova import LocalNova
from telephony.simulation.local_openai import LocalOpenAI

from ..audio import frame_hz, pcm
from ..conftest import TEST_SETTINGS, serve, settle_tasks
from ..fakes.twilio import FakeTwilioCall

CALL_SID = "CA" + "1" * 32
GREETING = "The caller has just been connected. Greet them."
GREETING_HZ, ANSWER_HZ, LONG_HZ, CALLER_HZ = 1000, 600, 400, 300

LocalServer = LocalNova | LocalOpenAI | LocalGemini
Heard = Callable[[FakeTwilioCall], bool]


@dataclass(frozen=True)
class LineModel:
    """A model as the default agent factory runs it: ``VOICEBOT_MODEL``, its id, and the settings it reads."""

    name: str
    model_id: str
    reads: tuple[str, ...]
    """What ``agent.factory.create_agent`` reads from the environment for each call."""


NOVA = LineModel(
    "nova",
    "amazon.nova-2-sonic-v1:0",
    ("model", "model_id", "aws_region", "nova_output_rate", "transfer_to", "tool_timeout_s"),
)
OPENAI = LineModel("openai", "gpt-realtime", ("model", "model_id", "transfer_to", "tool_timeout_s"))
GEMINI = LineModel("gemini", "gemini-live-2.5-flash-preview", ("model", "model_id", "transfer_to", "tool_timeout_s"))


@dataclass
class ModelLine:
    """A running server whose calls go through a real model client to ``server``."""

    base: str
    app: Any
    server: LocalServer
    rest: Any
    """The REST client the app was given (a ``FakeCallControl``, a ``TwilioCallsApi`` on a fake Twilio, or None)."""

    def caller(self, **kwargs: Any) -> FakeTwilioCall:
        return FakeTwilioCall(f"ws://{self.base}/media-stream", call_sid=CALL_SID, **kwargs)

    def live_session(self) -> CallSession:
        [session] = self.app.state.sessions
        return session

    async def post(self, path: str, **form: str) -> httpx.Response:
        async with httpx.AsyncClient(base_url=f"http://{self.base}") as client:
            return await client.post(path, data={"CallSid": CALL_SID, **form})


@asynccontextmanager
async def model_line(
    model: LineModel,
    server: LocalServer,
    monkeypatch: pytest.MonkeyPatch,
    rest: Any = None,
    observers: Sequence[ObserverFactory] = (),
    known_leaks: tuple[str, ...] = (),
    **overrides: Any,
) -> AsyncIterator[ModelLine]:
    """The real app with the default agent factory on ``model``; on leaving, no call and no task may be left.

    ``known_leaks``: qualified names of coroutines an upstream library is known to leave running (cancelled here,
    so no later test inherits them); any other task left behind fails the test.
    """
    # A model's first connection sets up TLS and its client: more than TEST_SETTINGS' 3 s on a busy test machine.
    defaults = {
        "model": model.name,
        "model_id": model.model_id,
        "greeting": GREETING,
        "agent_start_timeout_s": 10.0,
    }
    settings = replace(TEST_SETTINGS, **{**defaults, **overrides})
    assert settings.agent == "agent.factory:create_agent"
    for name in model.reads:
        value = getattr(settings, name)
        if value is not None:
            monkeypatch.setenv(env_name(name), str(value))
    app = create_app(settings, call_control=rest, observers=observers)  # the factory comes from settings.agent
    async with serve(app) as base:
        baseline = set(asyncio.all_tasks())
        yield ModelLine(base, app, server, rest)
        leftover = await settle_tasks(baseline, timeout=session_module.AGENT_STOP_TIMEOUT_S + 2)
        tolerated = {task for task in leftover if task.get_coro().__qualname__ in known_leaks}  # type: ignore[union-attr]
        for task in tolerated:
            task.cancel()
        assert not leftover - tolerated, f"tasks still running after the calls ended: {leftover - tolerated}"
        assert not app.state.sessions


def nova_line(
    nova: LocalNova, monkeypatch: pytest.MonkeyPatch, **kwargs: Any
) -> AbstractAsyncContextManager[ModelLine]:
    return model_line(NOVA, nova, monkeypatch, **kwargs)


def openai_line(
    server: LocalOpenAI, monkeypatch: pytest.MonkeyPatch, **kwargs: Any
) -> AbstractAsyncContextManager[ModelLine]:
    return model_line(OPENAI, server, monkeypatch, **kwargs)


def gemini_line(
    gemini: LocalGemini, monkeypatch: pytest.MonkeyPatch, **kwargs: Any
) -> AbstractAsyncContextManager[ModelLine]:
    return model_line(GEMINI, gemini, monkeypatch, **kwargs)


# --- the caller's voice ---------------------------------------------------------------------------------------


def caller_tone(seconds: float, hz: float = CALLER_HZ) -> bytes:
    """Caller 'speech' as μ-law 8 kHz: loud enough for the local servers' level detectors."""
    t = np.arange(int(seconds * 8000)) / 8000
    return pcm16_to_ulaw((0.3 * 32767 * np.sin(2 * math.pi * hz * t)).astype("<i2").tobytes())


QUICK_RESCUE = {"answer_timeout_s": 0.5, "agent_silence_timeout_s": 2.0}
"""Dead-air rescue in seconds, for the tests of a model that goes quiet (nudge 0.5 s, reconnect 1 s, apology 2 s)."""


async def talk(call: FakeTwilioCall, speech_s: float, then_silence_s: float) -> None:
    await call.stream(caller_tone(speech_s))
    await call.silence(then_silence_s)


async def talk_until_answered(call: FakeTwilioCall, speech_s: float, answer_s: float) -> None:
    """The caller talks, then listens until ``answer_s`` of the answer (ANSWER_HZ) has played: however late it comes."""
    await talk(call, speech_s, 0.0)
    await listen_until(call, heard_at_least(ANSWER_HZ, answer_s), timeout=10.0)


async def listen_until(call: FakeTwilioCall, heard: Heard, timeout: float = 6.0, then_s: float = 0.3) -> None:
    """Send silence (as a phone line does) until ``heard(call)``, then ``then_s`` more."""
    deadline = time.monotonic() + timeout
    while not heard(call):
        if time.monotonic() > deadline:
            raise AssertionError("the caller never heard what it waited for")
        await call.silence(0.1)
    await call.silence(then_s)


async def call_until_hung_up(line: ModelLine, speak_at_s: float | None = None, timeout: float = 20.0) -> FakeTwilioCall:
    """A call that listens (and talks once, if asked) until the bot ends it."""
    async with line.caller() as call:
        await call.connect()

        async def caller_side() -> None:
            if speak_at_s is not None:
                await call.silence(speak_at_s)
                await talk(call, 0.5, 0.0)
            await call.silence(timeout)

        talking = asyncio.create_task(caller_side())
        try:
            await call.wait_closed(timeout)
        finally:
            talking.cancel()
            await asyncio.gather(talking, return_exceptions=True)
    return call


# --- the caller's ear and the model's -------------------------------------------------------------------------


def heard_hz(call: SimulatedCaller) -> list[float]:
    """The dominant frequency of every frame the caller (or any party's stream) heard, in order (0: silence)."""
    return [round(frame_hz(frame.payload), -2) for frame in call.heard]


def seconds_of(hz_list: list[float], hz: float) -> float:
    return sum(1 for value in hz_list if value == hz) * 0.02


def heard_at_least(hz: float, seconds: float) -> Heard:
    """The caller has heard ``seconds`` of the tone ``hz`` (a frame's worth of slack)."""
    return lambda call: seconds_of(heard_hz(call), hz) >= seconds - 0.04


def heard_the_apology(call: FakeTwilioCall) -> bool:
    """The shipped apology clip reached the caller's ear (its first half second, frame for frame)."""
    heard = b"".join(frame.payload for frame in call.heard)
    return load_apology()[: 160 * 25] in heard


def voiced_seconds(pcm16: bytes, rate: int) -> float:
    """Seconds of 20 ms frames above -30 dBFS (the caller's tone is at about -13 dBFS)."""
    samples = pcm(pcm16)
    size = rate // 50
    frames = samples[: samples.size // size * size].reshape(-1, size)
    return float(np.sum(np.sqrt(np.mean(frames**2, axis=1)) > 32768 * 10 ** (-30 / 20))) / 50

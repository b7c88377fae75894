"""Phone calls through the real Nova Sonic client: the path real callers take, end to end, offline.

simulated Twilio caller -> the real app on loopback -> the default agent factory (``agent.factory:create_agent``,
VOICEBOT_MODEL=nova) -> the real ``BedrockNovaSonicModel`` (AWS SDK, CRT HTTP/2, SigV4, event stream) ->
TLS on 127.0.0.1 -> the local Nova (``local_nova`` fixture), which checks every event the client sends
and fails the test on any protocol violation.

Bot speech is tones (a reply's frequency tells which reply the caller heard); caller speech is a tone
the local Nova's level detector hears as a turn.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from telephony.app import create_app
from telephony.bridge import session as session_module
from telephony.bridge.session import CallSession, load_apology
from telephony.codec import pcm16_to_ulaw
from telephony.config import Settings, env_name
from telephony.console.events import CallFeed, ConsoleEvents
from telephony.simulation.local_nova import (
    INTERRUPTED_MARKER,
    Fault,
    LocalNova,
    Pacing,
    Reply,
    ScriptedBrain,
    TimeLimits,
    Tone,
    ToolRequest,
)

from ..audio import dominant_hz, frame_hz, pcm
from ..conftest import TEST_SETTINGS, serve, settle_tasks
from ..fakes.rest import FakeCallControl
from ..fakes.twilio import FakeTwilioCall

MODEL_ID = "amazon.nova-2-sonic-v1:0"
CALL_SID = "CA" + "1" * 32
GREETING = "The caller has just been connected. Greet them."
GREETING_HZ, ANSWER_HZ, LONG_HZ, CALLER_HZ = 1000, 600, 400, 300
AGENT_SETTINGS = ("model", "model_id", "aws_region", "nova_output_rate", "transfer_to", "tool_timeout_s")
"""What ``agent.factory.create_agent`` reads from the environment for each call."""


def caller_tone(seconds: float, hz: float = CALLER_HZ) -> bytes:
    """Caller 'speech' as μ-law 8 kHz: loud enough for the local Nova's level detector."""
    t = np.arange(int(seconds * 8000)) / 8000
    return pcm16_to_ulaw((0.3 * 32767 * np.sin(2 * math.pi * hz * t)).astype("<i2").tobytes())


@dataclass
class NovaLine:
    """A running server whose calls go through the real Nova client to ``nova``."""

    base: str
    app: Any
    nova: LocalNova
    rest: FakeCallControl | None

    def caller(self, **kwargs: Any) -> FakeTwilioCall:
        return FakeTwilioCall(f"ws://{self.base}/media-stream", call_sid=CALL_SID, **kwargs)

    def live_session(self) -> CallSession:
        [session] = self.app.state.sessions
        return session

    async def post(self, path: str, **form: str) -> httpx.Response:
        async with httpx.AsyncClient(base_url=f"http://{self.base}") as client:
            return await client.post(path, data={"CallSid": CALL_SID, **form})


@asynccontextmanager
async def nova_line(
    nova: LocalNova,
    monkeypatch: pytest.MonkeyPatch,
    rest: FakeCallControl | None = None,
    observers: tuple[Any, ...] = (),
    **overrides: Any,
) -> AsyncIterator[NovaLine]:
    """The real app with the default agent factory on Nova, configured the way ``voicebot serve`` is."""
    settings = replace(
        TEST_SETTINGS, model="nova", model_id=MODEL_ID, greeting=GREETING, agent_silence_timeout_s=3.0, **overrides
    )
    assert settings.agent == "agent.factory:create_agent"
    for name in AGENT_SETTINGS:
        value = getattr(settings, name)
        if value is not None:
            monkeypatch.setenv(env_name(name), str(value))
    app = create_app(settings, call_control=rest, observers=observers)  # the factory comes from settings.agent
    async with serve(app) as base:
        baseline = set(asyncio.all_tasks())
        yield NovaLine(base, app, nova, rest)
        leftover = await settle_tasks(baseline, timeout=session_module.AGENT_STOP_TIMEOUT_S + 2)
        assert not leftover, f"tasks still running after the calls ended: {leftover}"
        assert not app.state.sessions


def heard_hz(call: FakeTwilioCall) -> list[float]:
    """The dominant frequency of every frame the caller heard, in order (0: silence)."""
    return [round(frame_hz(frame.payload), -2) for frame in call.heard]


def voiced_seconds(pcm16: bytes, rate: int) -> float:
    """Seconds of 20 ms frames above -30 dBFS (the caller's tone is at about -13 dBFS)."""
    samples = pcm(pcm16)
    size = rate // 50
    frames = samples[: samples.size // size * size].reshape(-1, size)
    return float(np.sum(np.sqrt(np.mean(frames**2, axis=1)) > 32768 * 10 ** (-30 / 20))) / 50


def seconds_of(hz_list: list[float], hz: float) -> float:
    return sum(1 for value in hz_list if value == hz) * 0.02


async def until(condition: Any, timeout: float = 5.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def talk(call: FakeTwilioCall, speech_s: float, then_silence_s: float) -> None:
    await call.stream(caller_tone(speech_s))
    await call.silence(then_silence_s)


# --- a call heard both ways --------------------------------------------------------------------------


@pytest.mark.parametrize("output_rate", [16000, 24000])
async def test_greeting_and_a_turn_are_heard_both_ways(
    local_nova: LocalNova, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, output_rate: int
) -> None:
    local_nova.brain = brain = ScriptedBrain(
        texts=[Reply(text="Hello, front desk.", audio=Tone(0.6, hz=GREETING_HZ))],
        turns=[Reply(text="Sure thing.", audio=Tone(0.8, hz=ANSWER_HZ), heard="can you help me")],
    )
    caplog.set_level(logging.INFO)
    async with nova_line(local_nova, monkeypatch, nova_output_rate=output_rate) as line:
        async with line.caller() as call:
            await call.connect()
            await call.silence(1.6)  # the greeting plays (Nova answers ~0.6 s after the stream starts)
            await talk(call, 0.6, 1.6)  # a turn, then its answer plays
            await call.stop()

    [session] = local_nova.sessions
    assert session.model_id == MODEL_ID
    assert session.text_inputs == [GREETING]
    # caller audio reached Nova at 16 kHz, at the pitch the caller spoke
    assert session.caller_sample_rate == 16000
    assert voiced_seconds(bytes(session.caller_audio), 16000) == pytest.approx(0.6, abs=0.04)
    [turn] = brain.heard
    assert abs(dominant_hz(pcm(turn.pcm), 16000) - CALLER_HZ) < 5
    # Nova spoke at the configured rate; the caller heard both replies in full, at their pitch
    start = next(event for event in session.events if event.name == "promptStart")
    assert start.body["audioOutputConfiguration"]["sampleRateHertz"] == output_rate
    hz = heard_hz(call)
    assert seconds_of(hz, GREETING_HZ) == pytest.approx(0.6, abs=0.06)
    assert seconds_of(hz, ANSWER_HZ) == pytest.approx(0.8, abs=0.06)
    assert hz.index(GREETING_HZ) < hz.index(ANSWER_HZ)
    assert not call.events("clear") and session.barge_ins == 0
    log = caplog.text
    assert f"model audio | input=16000 Hz output={output_rate} Hz" in log
    assert "caller said: can you help me" in log and "bot said: Sure thing." in log

"""Regenerates the recorded calls in this folder: ``uv run python -m tests.recorded_calls.make_recordings``.

Each scenario is a real call through the real app with the recorder on: the scripted model plays the
agent, the simulated caller plays the caller (tones for voices, so the files stay small and the audio
is deterministic). Only ``events.jsonl`` is kept. ``tests/test_replay.py`` replays each one through the
bridge with the replay model and checks that the bridge sends Twilio exactly what it sent here.
"""

from __future__ import annotations

import asyncio
import math
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from telephony.codec import pcm16_to_ulaw
from telephony.recording.format import EVENTS_FILE
from telephony.recording.recorder import recorder_factory

from ..conftest import harness
from ..fakes.model import BargeIn, CallTool, Hold, Say, SayMore, ScriptedModel, UserSaid, WaitForAudio, WaitForText
from ..fakes.twilio import FakeTwilioCall

HERE = Path(__file__).parent


def voice(seconds: float, hz: float = 500.0) -> bytes:
    """The caller 'speaking': a tone, as μ-law."""
    samples = 0.25 * 32767 * np.sin(2 * math.pi * hz * np.arange(round(seconds * 8000)) / 8000)
    return pcm16_to_ulaw(samples.astype("<i2").tobytes())


async def until_closed(call: FakeTwilioCall, seconds: float) -> None:
    """Stay on the line in silence until the bot hangs up."""
    talker = asyncio.create_task(call.silence(seconds))
    await call.wait_closed(seconds)
    talker.cancel()
    await asyncio.gather(talker, return_exceptions=True)


@dataclass(frozen=True)
class Scenario:
    model: Callable[[], ScriptedModel]
    caller: Callable[[FakeTwilioCall], Awaitable[None]]


async def two_turns(call: FakeTwilioCall) -> None:
    await call.stream(voice(0.4))
    await call.silence(0.8)
    await call.stream(voice(0.4, 600))
    await call.silence(0.8)
    await call.stop()


async def barge_in(call: FakeTwilioCall) -> None:
    await call.silence(0.3)
    await call.stream(voice(0.5))
    await call.silence(0.7)
    await call.stop()


async def goodbye(call: FakeTwilioCall) -> None:
    await call.stream(voice(0.3))
    await until_closed(call, 6)


async def hangs_up_mid_answer(call: FakeTwilioCall) -> None:
    await call.stream(voice(0.3))
    await call.silence(0.6)
    await call.stop()


async def keypress_during_turn(call: FakeTwilioCall) -> None:
    await call.silence(0.4)
    await call.dtmf("5")
    await call.silence(1.4)
    await call.stop()


async def model_24khz(call: FakeTwilioCall) -> None:
    await call.stream(voice(0.3))
    await call.silence(1.2)
    await call.stop()


SCENARIOS: dict[str, Scenario] = {
    "two_turns": Scenario(
        lambda: ScriptedModel(
            [
                WaitForAudio(0.5),
                UserSaid("Hello?"),
                Say("Hi, how can I help?", 0.5, tone_hz=1000),
                WaitForAudio(0.9),
                UserSaid("What time is it?"),
                Say("It is noon.", 0.4, tone_hz=800),
                Hold(),
            ],
            output_rate=8000,
        ),
        two_turns,
    ),
    "barge_in": Scenario(
        lambda: ScriptedModel(
            [
                Say("Let me tell you all about our opening hours", 1.6, tone_hz=400, stop=False),
                WaitForAudio(0.6),
                BargeIn(),
                UserSaid("Stop, stop."),
                SayMore(0.4, tone_hz=400),  # the model keeps streaming the interrupted answer: must not be heard
                Say("Sure, go ahead.", 0.4, tone_hz=1000),
                Hold(),
            ],
            output_rate=8000,
        ),
        barge_in,
    ),
    "goodbye": Scenario(
        lambda: ScriptedModel(
            [
                WaitForAudio(0.3),
                UserSaid("Bye!"),
                Say("Goodbye!", 0.5, tone_hz=1000),
                CallTool("end_conversation", {"reason": "caller said bye"}),
                Hold(),
            ],
            output_rate=8000,
        ),
        goodbye,
    ),
    "hangs_up_mid_answer": Scenario(
        lambda: ScriptedModel(
            [WaitForAudio(0.3), Say("A long answer the caller will not wait for", 1.5, tone_hz=600), Hold()],
            output_rate=8000,
        ),
        hangs_up_mid_answer,
    ),
    "keypress_during_turn": Scenario(
        lambda: ScriptedModel(
            [
                Say("Press 5 for opening hours", 0.8, tone_hz=700),
                WaitForText("pressed 5"),
                Say("You pressed five.", 0.4, tone_hz=1000),
                Hold(),
            ],
            output_rate=8000,
        ),
        keypress_during_turn,
    ),
    "model_24khz": Scenario(
        lambda: ScriptedModel(
            [WaitForAudio(0.3), Say("Hello from a 24 kHz model", 0.4, tone_hz=1000), Hold()],
            input_rate=16000,
            output_rate=24000,
        ),
        model_24khz,
    ),
}


async def record(name: str, scenario: Scenario, into: Path) -> Path:
    """Run one scenario with the recorder on; returns its ``events.jsonl``."""
    async with harness(scenario.model, observers=[recorder_factory(into)]) as h:
        async with h.caller() as call:
            await call.connect()
            await scenario.caller(call)
            await call.wait_closed(5)
    (folder,) = into.iterdir()
    return folder / EVENTS_FILE


async def main(names: list[str]) -> None:
    for name in names or list(SCENARIOS):
        with tempfile.TemporaryDirectory() as scratch:
            events = await record(name, SCENARIOS[name], Path(scratch))
            target = HERE / name / EVENTS_FILE
            target.parent.mkdir(exist_ok=True)
            shutil.copyfile(events, target)
        print(f"{target.relative_to(HERE.parent.parent)}: {target.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))

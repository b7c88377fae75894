"""Caller onset -> ``clear``: how long the caller keeps hearing a reply they talk over, per way a model signals it.

Models generate speech faster than it plays, so the reply the caller talks over is usually generated in full
and waiting in Twilio's buffer. This runs the real bridge in-process with a scripted model and a simulated
Twilio on loopback: a 3 s reply generated at once, the caller starts talking 1 s into it, and the model
notices after 0.1 s of their speech (its VAD), then signals it the way each provider does:

- ``barge-in event``: the model's own ``BidiBargeInEvent`` (Nova Sonic, Gemini's ``interrupted``);
- ``transcript opens``: only a user transcript opening (OpenAI's ``speech_started`` on a finished reply);
- ``transcript, then barge-in``: both, the barge-in 0.3 s later (OpenAI's cancelled ``response.done``);
- ``..., before the early clear``: the second and third cases with the early clear switched off (the bridge as
  it was: no clear at all, or a clear only on the model's late barge-in).

For each it prints, over ``--calls`` calls: caller onset -> ``clear`` as the bridge measured it (the
``caller_onset_to_clear`` latency sample, first voiced frame received -> ``clear`` written), as the caller saw it
(first voiced frame sent -> ``clear`` received), and the stale audio the caller heard after they began talking.

    uv run python benchmarks/barge_in.py [--calls 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import os
import platform
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

from strands.bidi import BidiAgent  # noqa: E402

from telephony.app import create_app  # noqa: E402
from telephony.bridge.barge_in import BargeIns  # noqa: E402
from telephony.codec import pcm16_to_ulaw  # noqa: E402
from telephony.simulation.caller.simulated_caller import SimulatedCaller  # noqa: E402
from telephony.simulation.local_app.loopback import serve_app  # noqa: E402
from tests.fakes.audio import frame_hz  # noqa: E402
from tests.fakes.model import (  # noqa: E402
    BargeIn,
    Hold,
    Say,
    ScriptedModel,
    Step,
    UserStarts,
    WaitForAudio,
    WaitForSpeech,
)
from tests.fakes.settings import TEST_SETTINGS  # noqa: E402

REPLY: list[Step] = [Say("a long answer", 3.0, tone_hz=400), WaitForSpeech(0.1)]
CASES: list[tuple[str, list[Step], bool]] = [
    ("barge-in event", [BargeIn()], True),
    ("transcript opens", [UserStarts()], True),
    ("transcript, then barge-in", [UserStarts(), WaitForAudio(0.3), BargeIn()], True),
    ("transcript opens, bridge before the early clear", [UserStarts()], False),
    ("transcript, then barge-in, before the early clear", [UserStarts(), WaitForAudio(0.3), BargeIn()], False),
]
CALLER_STARTS_S = 1.0


def caller_voice(seconds: float) -> bytes:
    samples = 0.3 * 32767 * np.sin(2 * math.pi * 300 * np.arange(round(seconds * 8000)) / 8000)
    return pcm16_to_ulaw(samples.astype("<i2").tobytes())


@contextlib.contextmanager
def early_clear(enabled: bool) -> Iterator[None]:
    """Switch the early clear off (the bridge as it was before it) for a comparison row."""
    original = BargeIns.caller_transcript
    if not enabled:
        BargeIns.caller_transcript = lambda self: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        BargeIns.caller_transcript = original  # type: ignore[method-assign]


async def one_call(base: str) -> tuple[float | None, float]:
    """Caller onset -> clear received (None: no clear), and stale audio heard after onset (seconds)."""
    async with SimulatedCaller(f"ws://{base}/media-stream") as call:
        await call.connect()
        await call.silence(CALLER_STARTS_S)
        onset = call.now()
        await call.stream(caller_voice(0.6))
        await call.silence(2.0)
        await call.stop()
    clears = [item.at for item in call.received if item.message["event"] == "clear"]
    stale = sum(0.02 for frame in call.heard if frame.at >= onset and round(frame_hz(frame.payload), -2) == 400)
    return (clears[0] - onset if clears else None), stale


async def one_case(signals: list[Step], enabled: bool, calls: int) -> dict[str, str]:
    script = [*REPLY, *signals, Hold()]
    app = create_app(
        TEST_SETTINGS, agent_factory=lambda call: BidiAgent(model=ScriptedModel(list(script)), system_prompt="b")
    )
    seen: list[float] = []
    stale: list[float] = []
    with early_clear(enabled):
        async with serve_app(app) as base:
            for _ in range(calls):
                cleared, heard = await one_call(base)
                stale.append(heard)
                if cleared is not None:
                    seen.append(cleared)
            await asyncio.sleep(0.3)
            async with httpx.AsyncClient(base_url=f"http://{base}") as client:
                latency = (await client.get("/stats")).json()["latency"]
    bridge = latency.get("caller_onset_to_clear")
    return {
        "bridge": f"{bridge['p50_ms']:.0f} / {bridge['max_ms']:.0f} ms" if bridge else "no clear",
        "caller": f"{statistics.median(seen) * 1000:.0f} ms ({len(seen)}/{calls})" if seen else f"no clear (0/{calls})",
        "stale": f"{statistics.median(stale) * 1000:.0f} ms",
    }


async def main_async(calls: int) -> None:
    logging.getLogger("telephony").setLevel(logging.ERROR)  # the test settings' unsigned-webhook warning
    print(f"{platform.platform()} | Python {platform.python_version()} | {calls} calls per case, loopback")
    print("a 3 s reply generated at once; the caller talks 1 s into it; the model notices after 0.1 s of speech\n")
    header = f"{'how the model signals it':<50} | onset->clear, bridge p50 / max | as the caller saw it | stale heard"
    print(header)
    print("-" * len(header))
    for label, signals, enabled in CASES:
        row = await one_case(signals, enabled, calls)
        print(f"{label:<50} | {row['bridge']:>31} | {row['caller']:>20} | {row['stale']:>11}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5)
    asyncio.run(main_async(parser.parse_args().calls))


if __name__ == "__main__":
    main()

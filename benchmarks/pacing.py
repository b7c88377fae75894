"""Should the bridge pace outbound audio near real time, or hand Twilio everything at once?

Twilio buffers whatever we send and plays it in real time. Sending everything at once makes barge-in
depend on `clear` alone; pacing (keeping only a small lead in Twilio's buffer) would leave less to
clear. This measures both on the real bridge, in-process, with a simulated Twilio that adds a network
delay each way, on the same scripted call: a 4 s answer streamed 4x faster than real time, the caller
talks over it after ~1.5 s, then a short reply. For each design it prints:

- stale audio: how long the caller kept hearing the interrupted answer after the model's barge-in;
- first audio: the model's first audio event -> the caller hears it;
- gaps: the longest silence inside the answer before the barge-in (an underrun: the caller hears a hole),
  with a prompt server and with one whose writer is 250 ms late once a second (GC, a CPU spike).

    uv run python benchmarks/pacing.py [--delay-ms 60]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

from strands.bidi import BidiAgent  # noqa: E402

from telephony.app import create_app  # noqa: E402
from telephony.bridge.playback import Playback  # noqa: E402
from telephony.simulation.caller.simulated_caller import SimulatedCaller  # noqa: E402
from telephony.simulation.local_app.loopback import serve_app  # noqa: E402
from tests.fakes.audio import frame_hz  # noqa: E402
from tests.fakes.model import BargeIn, Hold, Say, ScriptedModel, WaitForAudio  # noqa: E402
from tests.fakes.settings import TEST_SETTINGS  # noqa: E402


class DelayedCaller(SimulatedCaller):
    """A Twilio peer behind a network with ``delay`` seconds each way (order preserved)."""

    delay: float = 0.06

    def _on_message(self, message: dict[str, Any]) -> None:
        asyncio.get_running_loop().call_later(self.delay, super()._on_message, message)

    async def send(self, message: dict[str, Any] | str | bytes) -> None:
        """Returns at once, like a socket write; the message arrives ``delay`` later."""
        self._in_flight = getattr(self, "_in_flight", set())
        loop = asyncio.get_running_loop()

        def deliver() -> None:
            task = asyncio.ensure_future(SimulatedCaller.send(self, message))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)

        loop.call_later(self.delay, deliver)


class Timeline:
    """Server-side times of the events the measures start from (an observer)."""

    def __init__(self) -> None:
        self.barge_in: float | None = None
        self.first_audio: float | None = None

    def __call__(self, call: Any) -> Timeline:
        return self

    def __getattr__(self, hook: str) -> Any:
        return lambda *args: None

    def agent_event(self, event: Any) -> None:
        if self.first_audio is None and event.get("type") == "bidi_audio_delta":
            self.first_audio = time.monotonic()

    def note(self, kind: str, detail: str) -> None:
        if kind == "barge_in" and self.barge_in is None:
            self.barge_in = time.monotonic()

    async def call_ended(self, reason: str, ended_by: str) -> None:
        pass


class StallingWrites:
    """Makes the server's socket writer late by 250 ms once a second (GC, a CPU spike, a noisy
    neighbour), without stalling the simulated Twilio, which lives in the same process."""

    def __init__(self) -> None:
        self._original = Playback.next_message
        self._next_stall = 0.0

    def __enter__(self) -> StallingWrites:
        original, stalls = self._original, self

        async def late_next_message(playback: Playback) -> Any:
            message = await original(playback)
            if time.monotonic() >= stalls._next_stall:
                stalls._next_stall = time.monotonic() + 1.0
                await asyncio.sleep(0.25)
            return message

        Playback.next_message = late_next_message  # type: ignore[method-assign]
        return self

    def __exit__(self, *_: object) -> None:
        Playback.next_message = self._original  # type: ignore[method-assign]


async def one_run(lead_ms: int, delay: float, stalls: bool) -> dict[str, float]:
    script = [Say("a long answer", 4.0, tone_hz=400, stop=False), WaitForAudio(1.5), BargeIn(),
              Say("go ahead", 0.5, tone_hz=1000), Hold()]  # fmt: skip
    timeline = Timeline()
    settings = replace(TEST_SETTINGS, pace_lead_ms=lead_ms)
    app = create_app(
        settings,
        agent_factory=lambda call: BidiAgent(model=ScriptedModel(list(script)), system_prompt="pacing"),
        observers=[timeline],
    )
    with StallingWrites() if stalls else contextlib.nullcontext():
        async with serve_app(app) as base:
            DelayedCaller.delay = delay
            async with DelayedCaller(f"ws://{base}/media-stream") as call:
                await call.connect()
                await call.silence(3.5)
                await call.stop()
    answer = [frame.at + call.started for frame in call.heard if round(frame_hz(frame.payload), -2) == 400]
    assert timeline.barge_in and timeline.first_audio and answer, "the scripted call did not run"
    before = [at for at in answer if at <= timeline.barge_in]
    gaps = [later - earlier - 0.02 for earlier, later in itertools.pairwise(before)]
    return {
        "stale_ms": 1000 * max(0.0, answer[-1] + 0.02 - timeline.barge_in),
        "first_ms": 1000 * (call.heard[0].at + call.started - timeline.first_audio),
        "gap_ms": 1000 * max(gaps, default=0.0),
    }


async def main_async(delay_ms: float) -> None:
    print(f"{platform.platform()} | Python {platform.python_version()} | network delay {delay_ms:.0f} ms each way")
    print("design            | stale audio after barge-in | first audio | longest gap (prompt / late writer)")
    print("------------------+----------------------------+-------------+------------------------------------------")
    for label, lead in (("unpaced (all now)", 0), ("paced, 100 ms lead", 100), ("paced, 300 ms lead", 300)):
        quiet = await one_run(lead, delay_ms / 1000, stalls=False)
        stalling = await one_run(lead, delay_ms / 1000, stalls=True)
        print(f"{label:<18}| {quiet['stale_ms']:23.0f} ms | {quiet['first_ms']:8.0f} ms | "
              f"{quiet['gap_ms']:6.0f} ms / {stalling['gap_ms']:6.0f} ms", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay-ms", type=float, default=60.0)
    args = parser.parse_args()
    asyncio.run(main_async(args.delay_ms))


if __name__ == "__main__":
    main()

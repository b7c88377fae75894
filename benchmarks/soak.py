"""Soak test: many concurrent calls for minutes, with barge-ins, caller hang-ups and model faults.

Runs the real app (in this process, on loopback) with the turn-taking fake agent, and keeps
--concurrency simulated callers going for --minutes: each call lasts a random 4-15 s; some callers
hang up mid-answer, some talk over the bot, and some calls get a model fault injected (the bridge
must apologise and hang up). At the end it reports calls completed, how each ended, errors, and
asyncio tasks, RSS and traced Python memory before and after (they must not grow), and whether
every call ended with a recorded reason. Bounded in calls and time; only 127.0.0.1 is contacted.

    uv run python benchmarks/soak.py [--concurrency 50] [--minutes 3]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import random
import sys
import time
import tracemalloc
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

from benchmarks.load import SILENCE, SPEECH, CallerResult, LightCaller, proc_rss_mb, speak  # noqa: E402
from telephony.app import create_app  # noqa: E402
from telephony.call_info import CallInfo  # noqa: E402
from telephony.config import Settings  # noqa: E402
from tests.conftest import serve  # noqa: E402
from tests.fakes.turns import turn_taking_agent  # noqa: E402


class Endings:
    """An observer factory: records how every call ended, as the session reports it."""

    def __init__(self) -> None:
        self.reasons: Counter[str] = Counter()
        self.by: Counter[str] = Counter()
        self.started = 0

    def __call__(self, call: CallInfo) -> Any:
        self.started += 1
        return _Ending(self)


class _Ending:
    def __init__(self, book: Endings) -> None:
        self._book = book

    def __getattr__(self, hook: str) -> Any:
        return lambda *args: None  # every other hook: nothing to record

    async def call_ended(self, reason: str, ended_by: str) -> None:
        self._book.reasons[reason.split(":")[0].split("(")[0].strip()] += 1
        self._book.by[ended_by] += 1


async def one_call(ws_url: str, index: int, rng: random.Random, outcome: Counter[str]) -> None:
    kind = rng.choices(["normal", "hangs_up_mid_answer", "barges_in", "model_fault"], [4, 2, 2, 1])[0]
    parameters = {"From": "+15550000000", "To": "+15551111111"}
    if kind == "model_fault":
        parameters["fault_after"] = f"{rng.uniform(2, 6):.1f}"
    result = CallerResult()
    call_sid, stream_sid = f"CA{index:032x}", f"MZ{index:032x}"
    async with LightCaller(ws_url, call_sid, stream_sid, parameters) as caller:
        await caller.connect()
        deadline = time.monotonic() + rng.uniform(4, 15)
        await speak(caller, SILENCE, result)
        while time.monotonic() < deadline and not caller.closed.is_set():
            await speak(caller, SPEECH[: 160 * rng.randrange(20, 60)], result)
            if kind == "hangs_up_mid_answer":
                await speak(caller, SILENCE[: 160 * 30], result)
                break  # hangs up while the bot is answering
            if kind == "barges_in":
                await speak(caller, SILENCE[: 160 * 30], result)
                await speak(caller, SPEECH[: 160 * 20], result)
            await speak(caller, SILENCE * 2, result)
        if caller.closed.is_set():
            outcome[f"{kind}: server ended the call"] += 1
        else:
            await caller.stop()
            await asyncio.wait_for(caller.closed.wait(), 10)
            outcome[f"{kind}: caller hung up"] += 1


async def soak(concurrency: int, minutes: float, seed: int) -> None:
    rng = random.Random(seed)
    endings = Endings()
    settings = replace(Settings(), greeting="Greet the caller.", max_calls=concurrency + 10, prewarm=False)
    app = create_app(settings, agent_factory=turn_taking_agent, observers=[endings])
    outcome: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    async with serve(app) as base:
        ws_url = f"ws://{base}/media-stream"
        index = 0

        async def lane(until: float) -> None:
            nonlocal index
            while time.monotonic() < until:
                index += 1
                try:
                    await one_call(ws_url, index, rng, outcome)
                except Exception as error:  # noqa: BLE001 - counted and reported
                    failures[type(error).__name__] += 1

        tracemalloc.start()
        # Warm-up: every lane makes a call first, so caches, pools and imports are in place before "before".
        await asyncio.gather(*(lane(time.monotonic() + 1) for _ in range(concurrency)))
        await asyncio.sleep(2.0)
        gc.collect()
        tasks_before, rss_before = len(asyncio.all_tasks()), proc_rss_mb(os.getpid())
        traced_before = tracemalloc.get_traced_memory()[0]
        stop_at = time.monotonic() + minutes * 60
        started = time.monotonic()
        await asyncio.gather(*(lane(stop_at) for _ in range(concurrency)))
        elapsed = time.monotonic() - started
        await asyncio.sleep(2.0)
        gc.collect()
        tasks_after, rss_after = len(asyncio.all_tasks()), proc_rss_mb(os.getpid())
        traced_after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        metrics = app.state.metrics.render().decode()
    errors = [line for line in metrics.splitlines() if line.startswith("voicebot_errors_total")]
    completed = sum(outcome.values())
    print(f"{platform.platform()} | Python {platform.python_version()} | seed {seed}")
    print(f"{concurrency} concurrent callers for {elapsed:.0f} s: {completed} calls completed, "
          f"{sum(failures.values())} caller-side failures {dict(failures) or ''}")  # fmt: skip
    print("outcomes:", dict(sorted(outcome.items())))
    print("server-side endings (by):", dict(endings.by), "| reasons:", dict(endings.reasons.most_common()))
    print("server error counters:", "; ".join(errors) or "none")
    print(f"asyncio tasks: {tasks_before} before, {tasks_after} after")
    print(f"RSS: {rss_before:.1f} MB before, {rss_after:.1f} MB after (delta {rss_after - rss_before:+.1f} MB)")
    print(f"traced Python memory: {traced_before / 1e6:.2f} MB before, {traced_after / 1e6:.2f} MB after")
    unexplained = endings.reasons.get("unknown", 0) + (endings.started - sum(endings.by.values()))
    print(f"calls without a recorded ending: {unexplained}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(soak(args.concurrency, args.minutes, args.seed))


if __name__ == "__main__":
    main()

"""Soak test: many concurrent calls for minutes, with barge-ins, caller hang-ups and model faults.

Runs `voicebot serve` (a process pinned to CPU 0, on loopback) with the turn-taking fake agent, and keeps
--concurrency simulated callers going for --minutes: each call lasts a random 4-15 s; some callers
hang up mid-answer, some talk over the bot, and some calls get a model fault injected (the bridge
must apologise and hang up). At the end it reports calls completed, how each ended, errors, and
the server's asyncio tasks and RSS before and after (they must not grow), and whether every call's
summary line says who ended it and why. Bounded in calls and time; only 127.0.0.1 is contacted.

    uv run python benchmarks/soak.py [--concurrency 50] [--minutes 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

import httpx  # noqa: E402
import websockets  # noqa: E402

from benchmarks.load import (  # noqa: E402
    SILENCE,
    SPEECH,
    CallerResult,
    LightCaller,
    free_port,
    proc_rss_mb,
    speak,
    start_server,
)


async def one_call(ws_url: str, index: int, rng: random.Random, outcome: Counter[str]) -> None:
    kind = rng.choices(["normal", "hangs_up_mid_answer", "barges_in", "model_fault"], [4, 2, 2, 1])[0]
    parameters = {"From": "+15550000000", "To": "+15551111111"}
    if kind == "model_fault":
        parameters["fault_after"] = f"{rng.uniform(2, 6):.1f}"
    result = CallerResult()
    call_sid, stream_sid = f"CA{index:032x}", f"MZ{index:032x}"
    try:
        async with LightCaller(ws_url, call_sid, stream_sid, parameters) as caller:
            await _talk(caller, kind, rng, result, outcome)
    except websockets.ConnectionClosed:
        outcome[f"{kind}: server ended the call"] += 1  # it hung up while this caller was still talking


async def _talk(
    caller: LightCaller, kind: str, rng: random.Random, result: CallerResult, outcome: Counter[str]
) -> None:
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
    outcome: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    ws_url = f"ws://127.0.0.1:{port}/media-stream"
    with tempfile.TemporaryFile("w+") as log:
        server = await start_server(port, log_level="INFO", log=log)
        try:
            index = 0

            async def lane(until: float) -> None:
                nonlocal index
                while time.monotonic() < until:
                    index += 1
                    try:
                        await one_call(ws_url, index, rng, outcome)
                    except Exception as error:  # noqa: BLE001 - counted and reported
                        failures[type(error).__name__] += 1

            # Warm-up: every lane makes a call first, so caches and pools are in place before "before".
            await asyncio.gather(*(lane(time.monotonic() + 1) for _ in range(concurrency)))
            await asyncio.sleep(2.0)
            before = await server_state(base, server.pid)
            started = time.monotonic()
            stop_at = started + minutes * 60
            watcher = asyncio.create_task(monitor(base, server.pid, started, outcome))
            await asyncio.gather(*(lane(stop_at) for _ in range(concurrency)))
            watcher.cancel()
            elapsed = time.monotonic() - started
            await asyncio.sleep(3.0)
            after = await server_state(base, server.pid)
            async with httpx.AsyncClient(base_url=base) as client:
                metrics = (await client.get("/metrics")).text
        finally:
            server.terminate()
            await server.wait()
        log.seek(0)
        endings = [line for line in log if "| call ended |" in line]
    report(concurrency, elapsed, seed, outcome, failures, metrics, before, after, endings)


async def server_state(base: str, pid: int) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=base) as client:
        stats = (await client.get("/stats")).json()
    return {"tasks": stats["tasks"], "calls": stats["calls"], "rss": proc_rss_mb(pid)}


async def monitor(base: str, pid: int, started: float, outcome: Counter[str]) -> None:
    while True:
        await asyncio.sleep(30)
        state = await server_state(base, pid)
        print(f"  t={time.monotonic() - started:4.0f}s calls done={sum(outcome.values()):5d} "
              f"in progress={state['calls']:3.0f} server RSS={state['rss']:6.1f} MB tasks={state['tasks']:4.0f}",
              flush=True)  # fmt: skip


def report(
    concurrency: int,
    elapsed: float,
    seed: int,
    outcome: Counter[str],
    failures: Counter[str],
    metrics: str,
    before: dict[str, float],
    after: dict[str, float],
    endings: list[str],
) -> None:
    errors = [line for line in metrics.splitlines() if line.startswith("voicebot_errors_total")]
    ended = [line for line in metrics.splitlines() if line.startswith("voicebot_calls_total")]
    reasons = Counter(re.search(r"reason=(.*?) duration=", line).group(1).split(":")[0].split(" (")[0]
                      for line in endings if "reason=" in line)  # fmt: skip
    unexplained = sum(1 for line in endings if "reason=unknown" in line or "by=unknown" in line)
    print(
        f"{platform.platform()} | Python {platform.python_version()} | seed {seed} | server on CPU 0, callers on CPU 1"
    )
    print(f"{concurrency} concurrent callers for {elapsed:.0f} s: {sum(outcome.values())} calls completed, "
          f"{sum(failures.values())} caller-side failures {dict(failures) or ''}")  # fmt: skip
    print("caller outcomes:", dict(sorted(outcome.items())))
    print("server: calls ended", "; ".join(ended), "| reasons:", dict(reasons.most_common()))
    print("server error counters:", "; ".join(errors) or "none")
    print(f"server asyncio tasks: {before['tasks']:.0f} before, {after['tasks']:.0f} after "
          f"(calls in progress: {before['calls']:.0f} / {after['calls']:.0f})")  # fmt: skip
    print(
        f"server RSS: {before['rss']:.1f} MB before, {after['rss']:.1f} MB after "
        f"({after['rss'] - before['rss']:+.1f} MB)"
    )
    print(f"summary lines: {len(endings)}, without a reason or who ended the call: {unexplained}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    os.sched_setaffinity(0, {1} if (os.cpu_count() or 1) > 1 else {0})
    asyncio.run(soak(args.concurrency, args.minutes, args.seed))


if __name__ == "__main__":
    main()

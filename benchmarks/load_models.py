"""What each model costs: the fake, Nova Sonic, OpenAI Realtime and Gemini Live side by side, in one run.

Each real model runs through its real strands client in ``voicebot serve`` (``VOICEBOT_MODEL=nova|openai|gemini``,
the product's default settings) against its local server in its own process (``python -m
telephony.simulation.local_nova|local_openai|local_gemini``, all over TLS); the fake is the turn-taking agent of
``benchmarks/load.py``. The processes, callers and measures are ``benchmarks/load_nova.py``'s (one worker: the
server pinned to CPU 0, the callers and the local model server to CPU 1).

Two parts, each interleaved (round after round, every setup once per round, so a shared machine's noise falls on
all alike):

- **load**: N simultaneous calls per setup (webhook, stream, speech, every third turn a barge-in, hang-up).
  Printed: calls served / turned away, server CPU per call (% of one core, every server process), RSS per call,
  first audio (stream start -> first bot frame) p50/p99, frame->send p50/p99, the model's barge-in -> ``clear``
  and caller onset -> ``clear`` p50/p99 (the bridge's samples from ``GET /stats``), model connections per call
  (client connections seen open to the local model server), calls end (the last caller's hang-up -> no call
  left on the server; the figures are read then, since a call's samples reach ``/stats`` only once it has
  ended), errors.
- **barge-in**: a few calls per model that talk over a reply at a known moment, in two cases: the reply still
  being generated (the local server streams at real time; the caller starts 0.5 s into it) and the reply already
  generated (8x real time; the caller starts 1.5 s into a 4 s reply, when all of it sits in Twilio's buffer).
  Printed: caller onset -> ``clear`` p50/max as the bridge measured it (``caller_onset_to_clear``) and as the
  caller saw it (first voiced frame sent -> ``clear`` received), how many barge-ins got no ``clear``, and the
  bridge's model signal -> ``clear`` (``barge_in_to_clear``: the model's barge-in event;
  ``speech_signal_to_clear``: a user transcript opening before any barge-in event, OpenAI's ``speech_started``).

Only 127.0.0.1 is contacted.

    uv run python benchmarks/load_models.py [--calls 5] [--rounds 1] [--seconds 30]
        [--models fake nova openai gemini] [--barge-ins 3] [--skip-load] [--skip-barge-in]

One model at chosen sizes, e.g. ``--models gemini --calls 5 20 --skip-barge-in`` (``--calls`` and ``--models``
take several values).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import SILENCE, SPEECH, CallerResult, LightCaller, speak, webhook
from load_nova import (
    Result,
    calls_ended,
    count_connections,
    local_model,
    read_figures,
    run,
    server,
    stop,
    variant,
)

from telephony.simulation.local_app.loopback import free_port_run

ROOT = Path(__file__).resolve().parent.parent
FRAME_S = 0.02


# --- load ------------------------------------------------------------------------------------------------


LOAD_HEADER = (
    "setup  | calls | served/away | CPU/call | RSS/call | first audio    | frame->send | barge->clear  | "
    "onset->clear  | model conns/call | calls end | errors"
)


def p50_p99(rows: list[Result], measure: str) -> str:
    """The median over rounds of a measure's p50 and p99 (ms)."""
    found = [r.latency[measure] for r in rows if measure in r.latency]
    if not found:
        return "-"
    return f"{statistics.median(f['p50_ms'] for f in found):.0f} / {statistics.median(f['p99_ms'] for f in found):.0f}"


def load_line(rows: list[Result]) -> str:
    first = rows[0]

    def med(values: list[float]) -> float:
        return statistics.median(values)

    served = f"{med([r.served for r in rows]):.0f} / {med([r.turned_away for r in rows]):.0f}"
    conns = f"{med([r.model_connections / max(1, r.served) for r in rows]):.2f}" if first.variant != "fake" else "-"
    return (
        f"{first.variant:<6} | {first.calls:>5} | {served:>11} | {med([r.cpu_per_call for r in rows]):6.2f} % | "
        f"{med([r.rss_per_call for r in rows]):5.2f} MB | {p50_p99(rows, 'start_to_first_audio'):>14} | "
        f"{p50_p99_fine(rows, 'frame_to_send'):>11} | {p50_p99(rows, 'barge_in_to_clear'):>13} | "
        f"{p50_p99(rows, 'caller_onset_to_clear'):>13} | {conns:>16} | {med([r.calls_end_s for r in rows]):7.2f} s | "
        f"{sum(r.errors for r in rows):>6}"
    )


def p50_p99_fine(rows: list[Result], measure: str) -> str:
    """As ``p50_p99``, to a tenth of a millisecond (frame->send is short)."""
    found = [r.latency[measure] for r in rows if measure in r.latency]
    if not found:
        return "-"
    return f"{statistics.median(f['p50_ms'] for f in found):.1f} / {statistics.median(f['p99_ms'] for f in found):.1f}"


async def load_part(args: argparse.Namespace, folder: Path) -> list[str]:
    specs = [variant(name, None) for name in args.models]
    print(LOAD_HEADER)
    print("-" * len(LOAD_HEADER), flush=True)
    notes: list[str] = []
    for calls in args.calls:
        collected: dict[str, list[Result]] = {spec.name: [] for spec in specs}
        for _ in range(args.rounds):
            for spec in specs:
                result = await run(spec, calls, 1, args.seconds, folder)
                collected[spec.name].append(result)
                if result.error_kinds:
                    notes.append(f"  {spec.name} @ {calls}: " + "; ".join(result.error_kinds))
        for spec in specs:
            print(load_line(collected[spec.name]), flush=True)
    return notes


# --- barge-in --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    speedup: float
    into_s: float
    """How long after the reply's first frame reached the caller they start talking."""


CASES = (Case("reply being generated", 1.0, 0.5), Case("reply already generated", 8.0, 1.5))
REPLY_S = 4.0


@dataclass
class BargeResult:
    seen_ms: list[float] = field(default_factory=list)
    missed: int = 0
    errors: list[str] = field(default_factory=list)


async def frames(caller: LightCaller, audio: bytes, seconds: float, sink: CallerResult) -> None:
    """Send ``seconds`` of ``audio`` (repeated) at real time."""
    whole = (audio * (int(seconds) + 1))[: int(seconds / FRAME_S) * 160]
    await speak(caller, whole, sink)


async def until(caller: LightCaller, done: object, limit_s: float, sink: CallerResult) -> None:
    """Send silence in 100 ms steps until ``done()`` holds or ``limit_s`` passes."""
    deadline = time.monotonic() + limit_s
    while not done() and time.monotonic() < deadline and not caller.closed.is_set():  # type: ignore[operator]
        await speak(caller, SILENCE[: 160 * 5], sink)


async def barge_call(base: str, index: int, case: Case, out: BargeResult) -> None:
    """Hear the greeting out, take a turn, talk over the reply ``case.into_s`` after it starts, hang up."""
    call_sid = f"CA{index:032x}"
    form = {"CallSid": call_sid, "AccountSid": "AC" + "0" * 32, "From": "+15550000000", "To": "+15551111111"}
    target = await webhook(base, form)
    if target is None:
        out.errors.append("turned away")
        return
    await asyncio.sleep(1.0)
    sink = CallerResult()
    loop = asyncio.get_running_loop()
    url = target.url.replace("wss://", "ws://", 1)
    async with LightCaller(url, call_sid, f"MZ{index:032x}", target.parameters) as caller:
        await caller.connect()
        await until(caller, lambda: caller.frames_received > 0, 15, sink)  # the greeting starts...
        await until(caller, lambda: loop.time() > caller.playout_end + 0.5, 15, sink)  # ...and has played out
        await frames(caller, SPEECH, 1.0, sink)  # the caller's turn
        heard = caller.frames_received
        await until(caller, lambda: caller.frames_received > heard, 15, sink)  # the reply starts
        if caller.frames_received == heard:
            out.errors.append("no reply")
            return
        await frames(caller, SILENCE, case.into_s, sink)
        onset, clears = time.monotonic(), len(caller.clears)
        await frames(caller, SPEECH, 1.0, sink)  # talking over the bot
        await until(caller, lambda: len(caller.clears) > clears, 3, sink)
        if len(caller.clears) > clears:
            out.seen_ms.append((caller.clears[clears] - onset) * 1000)
        else:
            out.missed += 1
        if not caller.closed.is_set():
            await caller.stop()


async def barge_run(model: str, case: Case, calls: int, folder: Path) -> tuple[BargeResult, dict[str, dict], int]:
    """``calls`` barge-in calls (staggered by 0.5 s) through ``model``'s real client against its local server."""
    out = BargeResult()
    port = free_port_run(2)
    cores = os.cpu_count() or 1
    side, serve_cpus = ({1}, {0}) if cores > 1 else ({0}, None)
    os.sched_setaffinity(0, side)  # the callers (this process)
    async with AsyncExitStack() as stack:
        env, _, model_port = await stack.enter_async_context(
            local_model(model, folder, side, reply_s=REPLY_S, speedup=case.speedup)
        )
        seen: set[int] = set()
        counter = asyncio.create_task(count_connections(model_port, seen))
        stack.push_async_callback(stop, counter)
        await stack.enter_async_context(server(variant(model, None), port, 1, env, serve_cpus, folder / "barge.log"))
        base = f"http://127.0.0.1:{port}"

        async def one(index: int) -> None:
            await asyncio.sleep(index * 0.5)
            try:
                await barge_call(base, index, case, out)
            except Exception as error:  # noqa: BLE001 - reported
                out.errors.append(repr(error))

        await asyncio.gather(*(one(index) for index in range(calls)))
        if left := await calls_ended(port, 1):
            out.errors.append(f"{left} call(s) still ending after the last hang-up")
        stats, _ = await read_figures(port, 1)
    return out, stats[0].get("latency", {}), len(seen)


BARGE_HEADER = (
    "model  | case                    | barge-ins | onset->clear (bridge) p50/max | (caller) p50/max | "
    "no clear | model barge-in->clear p50/max | transcript->clear p50/max | model conns"
)


def p50_max(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} / {max(values):.0f}" if values else "-"


def row_p50_max(latency: dict[str, dict], measure: str) -> str:
    row = latency.get(measure)
    return f"{row['p50_ms']:.0f} / {row['max_ms']:.0f} (n={row['count']})" if row else "-"


async def barge_part(args: argparse.Namespace, folder: Path) -> list[str]:
    models = [name for name in args.models if name != "fake"]
    print("\n" + BARGE_HEADER)
    print("-" * len(BARGE_HEADER), flush=True)
    notes: list[str] = []
    for case in CASES:
        merged: dict[str, tuple[BargeResult, list[dict[str, dict]], int]] = {m: (BargeResult(), [], 0) for m in models}
        for _ in range(args.rounds):
            for model in models:
                out, latency, conns = await barge_run(model, case, args.barge_ins, folder)
                total, latencies, seen = merged[model]
                total.seen_ms += out.seen_ms
                total.missed += out.missed
                total.errors += out.errors
                latencies.append(latency)
                merged[model] = (total, latencies, seen + conns)
        for model in models:
            total, latencies, conns = merged[model]
            bridge = pooled(latencies, "caller_onset_to_clear")
            barge = pooled(latencies, "barge_in_to_clear")
            signal = pooled(latencies, "speech_signal_to_clear")
            print(
                f"{model:<6} | {case.name:<23} | {len(total.seen_ms) + total.missed:>9} | {bridge:>29} | "
                f"{p50_max(total.seen_ms):>16} | {total.missed:>8} | {barge:>29} | {signal:>25} | {conns:>11}",
                flush=True,
            )
            if total.errors:
                notes.append(f"  {model}, {case.name}: " + "; ".join(sorted(set(total.errors))[:3]))
    return notes


def pooled(latencies: list[dict[str, dict]], measure: str) -> str:
    """A measure over rounds: the median of the p50s, the largest max, the summed count."""
    rows = [latency[measure] for latency in latencies if measure in latency]
    if not rows:
        return "-"
    p50 = statistics.median(row["p50_ms"] for row in rows)
    return f"{p50:.0f} / {max(row['max_ms'] for row in rows):.0f} (n={sum(row['count'] for row in rows)})"


# --- main ------------------------------------------------------------------------------------------------


async def main_async(args: argparse.Namespace) -> None:
    print(f"{platform.platform()} | {os.cpu_count()} CPUs | Python {platform.python_version()}")
    print(
        f"load: {args.seconds:.0f} s per run, CPU over the last {args.seconds - 8:.0f} s, {args.rounds} round(s) "
        "interleaved, medians over rounds; server on CPU 0, callers + local model server on CPU 1; CPU in % of "
        "one core; latencies p50 / p99 ms\n"
    )
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="voicebot-load-models-") as scratch:
        if not args.skip_load:
            notes += await load_part(args, Path(scratch))
        if not args.skip_barge_in:
            notes += await barge_part(args, Path(scratch))
    if notes:
        print("\nerrors by kind:\n" + "\n".join(notes))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog="Only 127.0.0.1 is contacted; each run is bounded by --seconds."
    )
    parser.add_argument("--calls", type=int, nargs="+", default=[5], help="simultaneous calls per load run")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds (medians over them)")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each load run")
    parser.add_argument("--models", nargs="+", default=["fake", "nova", "openai", "gemini"],
                        choices=["fake", "nova", "openai", "gemini"])  # fmt: skip
    parser.add_argument("--barge-ins", type=int, default=3, help="barge-in calls per model, case and round")
    parser.add_argument("--skip-load", action="store_true", help="only the barge-in part")
    parser.add_argument("--skip-barge-in", action="store_true", help="only the load part")
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()

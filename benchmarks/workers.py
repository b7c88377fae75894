"""One process vs ``--workers N``: the real Nova Sonic client, the server started as a user starts it.

Side by side in one run, interleaved (1 process, N workers, 1 process, N workers, ... so the noise of a
shared machine falls on both alike), for each call count:

- ``1-proc``: ``voicebot serve`` with no flags: one process, streams at ``wss://PUBLIC/media-stream``;
- ``N-workers``: ``voicebot serve --workers N``: the supervisor runs nginx on ``VOICEBOT_PORT`` in front of
  N workers (worker n on ``VOICEBOT_PORT``+1+n), webhooks round robin, each stream routed to ``/w/<n>/``.

Both are configured by environment only, as in production: ``PUBLIC_URL``, ``TWILIO_ACCOUNT_SID`` and
``TWILIO_AUTH_TOKEN`` (so every webhook and stream upgrade is signed and checked), ``VOICEBOT_PORT``, and
the default agent (``agent.factory:create_agent``, ``VOICEBOT_MODEL=nova``: strands'
``BedrockNovaSonicModel``, AWS SDK, awscrt HTTP/2, SigV4) pointed at the local Nova emulator
(``python -m telephony.simulation.local_nova``, a process of its own, started fresh for every run so that
the model streams it opened can be counted: ``local nova stopping: N streams``) with
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, ``AWS_CA_BUNDLE`` and fake keys. ``VOICEBOT_MAX_CALLS`` is left at its
default (50) for the whole server. Nothing is pinned: the callers (this process) and the local Nova share
the machine's cores with the server. The callers are ``benchmarks/load.py``'s: webhook first (signed, to
``VOICEBOT_PORT``), the stream a second later (signed, on the path the TwiML named), speech and pauses at
real time, every third turn a barge-in, then a hang-up.

Printed per variant, call count and round, then the median over rounds:

- calls served (the webhook connected a stream and the caller heard bot audio), turned away ("busy" TwiML),
  failed (anything else: an error, or no bot audio);
- server CPU per served call, in % of one core, over every process of the server (supervisor, workers,
  nginx; split shown), over the last ``--seconds`` - 8 s of the run; RSS per call (growth over the idle
  server) and in all; the local Nova's and the callers' CPU apart;
- ``voicebot_prewarm_total`` by outcome (hit / miss / late / discarded, summed ``/metrics``), model streams
  the local Nova opened per served call, calls carried per worker (each worker's own ``/stats``);
- turns per call (median, from the ``call ended`` log lines) and barge-ins (all calls);
- the bridge's p50 / p99 frame->send, barge-in->clear, turn (end of the caller's turn -> first bot
  frame) and start->1st audio (the stream's ``start`` -> first bot frame) in ms, from each worker's
  ``/stats`` read on its own port, and the first bot audio as the callers heard it ("heard 1st": the
  stream's WebSocket open -> first media frame, so a worker slow to read ``start`` counts too).

Then what the servers' logs said about misses, refusals and errors (the logs are kept; their folder is
printed). Bounded: every run lasts about ``--seconds`` plus start-up and shut-down; only 127.0.0.1 is
contacted (nothing in these calls makes the server use Twilio's REST API).

    uv run python benchmarks/workers.py [--calls 50 [70 ...]] [--rounds 2] [--seconds 40] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import (
    ACCOUNT_SID,
    CallerResult,
    metric_total,
    one_call,
    proc_cpu_seconds,
    proc_rss_mb,
    process_name,
    process_tree,
)

from telephony.simulation.local_app.loopback import free_port_run

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_URL = "https://voice.example.com"
AUTH_TOKEN = "workers-benchmark-auth-token"
SETTLE_S = 8.0
"""Every call connected and talking before the CPU window opens."""
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 45.0
PREWARM_OUTCOMES = ("hit", "miss", "late", "discarded")
LOG_PATTERNS = {
    "turned away": r"turned away|refused a media stream",
    "pre-warm miss": r"pre-warm miss",
    "pre-warm discarded": r"pre-warmed agent discarded",
    "pre-warm late": r"pre-warmed agent already given up",
    "worker restarted": r"exited unexpectedly|starting .* again",
    "errors": r" ERROR |Traceback|failed mid-call|did not stop cleanly",
}


@dataclass
class RunResult:
    variant: str
    round: int
    calls: int
    served: int = 0
    busy: int = 0
    failed: int = 0
    cpu: dict[str, float] = field(default_factory=dict)
    """% of one core over the window: supervisor, workers, nginx, nova, callers."""
    rss_idle_mb: float = 0.0
    rss_loaded_mb: float = 0.0
    prewarm: dict[str, float] = field(default_factory=dict)
    nova_streams: int | None = None
    nova_violations: int | None = None
    per_worker: list[dict[str, Any]] = field(default_factory=list)
    """Each worker's /stats (``latency``) and how many calls it carried."""
    first_audio_ms: list[float] = field(default_factory=list)
    errors_metric: float = 0.0
    caller_errors: list[str] = field(default_factory=list)
    log: Path | None = None
    log_counts: dict[str, int] = field(default_factory=dict)
    log_excerpts: dict[str, list[str]] = field(default_factory=dict)
    refusals: list[str] = field(default_factory=list)
    """For each call turned away: what the log shows the server held at that moment."""
    turns: list[int] = field(default_factory=list)
    """Each call's turns, from its ``call ended`` log line."""
    barge_ins: int = 0

    @property
    def server_cpu(self) -> float:
        return self.cpu.get("supervisor", 0.0) + self.cpu.get("workers", 0.0) + self.cpu.get("nginx", 0.0)


# --- processes -------------------------------------------------------------------------------------------


@asynccontextmanager
async def local_nova(folder: Path, log_path: Path) -> AsyncIterator[dict[str, Any]]:
    """The local Nova in its own process; yields its endpoint, CA file and pid, then (after) its stream count."""
    ca = folder / "nova-ca.pem"
    log = open(log_path, "wb")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "telephony.simulation.local_nova", "--port", "0", "--ca-out", str(ca),
        "--reply-s", "2", "--speedup", "4", "--log-level", "INFO",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=log,
    )  # fmt: skip
    info: dict[str, Any] = {"ca": ca, "pid": process.pid}
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        if not line.startswith("LOCAL_NOVA_ENDPOINT="):
            raise RuntimeError(f"the local Nova did not start: {line!r} (log: {log_path})")
        info["endpoint"] = line.split("=", 1)[1].strip()
        yield info
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                process.kill()
                await process.wait()
        log.close()
        match = re.search(r"local nova stopping: (\d+) streams, (\d+) violations", log_path.read_text(errors="replace"))
        if match:
            info["streams"], info["violations"] = int(match.group(1)), int(match.group(2))


def voicebot_command() -> list[str]:
    """The ``voicebot`` console script of this environment (what a user runs)."""
    script = Path(sys.executable).parent / "voicebot"
    found = str(script) if script.exists() else shutil.which("voicebot")
    if found is None:
        raise SystemExit("the voicebot command is not installed in this environment (uv sync)")
    return [found]


def server_env(port: int, nova: dict[str, Any]) -> dict[str, str]:
    """What a user sets: the public URL, Twilio credentials, the port, and where Bedrock is."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("VOICEBOT_", "TWILIO_", "AWS_", "PROMETHEUS_", "OTEL_")) and name != "PUBLIC_URL"
    }
    return env | {
        "PUBLIC_URL": PUBLIC_URL,
        "TWILIO_ACCOUNT_SID": ACCOUNT_SID,
        "TWILIO_AUTH_TOKEN": AUTH_TOKEN,
        "VOICEBOT_PORT": str(port),
        "VOICEBOT_MODEL": "nova",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": nova["endpoint"],
        "AWS_CA_BUNDLE": str(nova["ca"]),
        "AWS_ACCESS_KEY_ID": "AKIDLOCALNOVA",
        "AWS_SECRET_ACCESS_KEY": "local-nova-secret",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def own_ports(port: int, workers: int) -> list[int]:
    """Where each worker's own /stats and /health answer (one process: VOICEBOT_PORT itself)."""
    return [port + 1 + n for n in range(workers)] if workers > 1 else [port]


@asynccontextmanager
async def server(
    workers: int, port: int, nova: dict[str, Any], log_path: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``voicebot serve`` (or ``serve --workers N``) until the block ends; then SIGTERM and wait for it."""
    argv = [*voicebot_command(), "serve", *(["--workers", str(workers)] if workers > 1 else [])]
    log = open(log_path, "wb")
    process = await asyncio.create_subprocess_exec(*argv, cwd=ROOT, env=server_env(port, nova), stderr=log, stdout=log)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        async with httpx.AsyncClient(timeout=5) as client:
            for each in [*own_ports(port, workers), port]:
                while True:
                    if process.returncode is not None:
                        raise RuntimeError(f"{' '.join(argv)} exited ({process.returncode}): see {log_path}")
                    try:
                        if (await client.get(f"http://127.0.0.1:{each}/health")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{' '.join(argv)}: port {each} did not answer /health: see {log_path}")
                    await asyncio.sleep(0.1)
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
            except TimeoutError:
                for pid in reversed(process_tree(process.pid)):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                await process.wait()
        log.close()


def classify(supervisor: int, pids: list[int], workers: int) -> dict[int, str]:
    """Each server process's role: the supervisor, a worker, or nginx (one process: it is the worker)."""
    roles = {}
    for pid in pids:
        if process_name(pid) == "nginx":
            roles[pid] = "nginx"
        elif pid == supervisor and workers > 1:
            roles[pid] = "supervisor"
        else:
            roles[pid] = "workers"
    return roles


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    used = {}
    for pid in pids:
        try:
            used[pid] = proc_cpu_seconds(pid)
        except OSError:
            pass
    return used


def rss_mb(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            total += proc_rss_mb(pid)
        except OSError:
            pass
    return total


# --- one run ---------------------------------------------------------------------------------------------


async def settled_metrics(base: str, timeout: float = 20.0) -> str:
    """``/metrics`` once no call is in progress any more (figures are written as calls end)."""
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(timeout=10) as client:
        while True:
            text = (await client.get(f"{base}/metrics")).text
            if metric_total(text, "voicebot_calls_active") == 0 or time.monotonic() > deadline:
                return text
            await asyncio.sleep(0.25)


async def run(variant: str, workers: int, calls: int, seconds: float, round_: int, folder: Path) -> RunResult:
    result = RunResult(variant, round_, calls)
    tag = f"{variant}-{calls}-r{round_}"
    port = free_port_run(workers + 1)
    base = f"http://127.0.0.1:{port}"
    async with AsyncExitStack() as stack:
        nova = await stack.enter_async_context(local_nova(folder, folder / f"nova-{tag}.log"))
        result.log = folder / f"server-{tag}.log"
        process = await stack.enter_async_context(server(workers, port, nova, result.log))
        await asyncio.sleep(1.0)
        result.rss_idle_mb = rss_mb(process_tree(process.pid))
        callers = [CallerResult() for _ in range(calls)]

        async def staggered(index: int) -> None:
            await asyncio.sleep(index * min(5.0, calls * 0.025) / max(1, calls))
            try:
                await one_call(base, index, seconds, callers[index], AUTH_TOKEN, PUBLIC_URL)
            except Exception as error:  # noqa: BLE001 - reported in the table
                callers[index].error = repr(error)

        tasks = [asyncio.create_task(staggered(index)) for index in range(calls)]
        await asyncio.sleep(SETTLE_S)
        server_pids = process_tree(process.pid)
        roles = classify(process.pid, server_pids, workers)
        watched = [*server_pids, nova["pid"], os.getpid()]
        before, started = cpu_seconds(watched), time.monotonic()
        await asyncio.sleep(max(1.0, seconds - SETTLE_S))
        after, elapsed = cpu_seconds(watched), time.monotonic() - started
        result.rss_loaded_mb = rss_mb(server_pids)
        used = {pid: (after[pid] - before[pid]) / elapsed * 100 for pid in before if pid in after}
        for pid, role in roles.items():
            result.cpu[role] = result.cpu.get(role, 0.0) + used.get(pid, 0.0)
        result.cpu["nova"] = used.get(nova["pid"], 0.0)
        result.cpu["callers"] = used.get(os.getpid(), 0.0)
        _, pending = await asyncio.wait(tasks, timeout=seconds + 90)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        metrics = await settled_metrics(base)
        async with httpx.AsyncClient(timeout=10) as client:
            for n, each in enumerate(own_ports(port, workers)):
                stats = (await client.get(f"http://127.0.0.1:{each}/stats")).json()
                latency = stats.get("latency", {})
                carried = int(latency.get("start_to_first_audio", {}).get("count", 0))
                result.per_worker.append({"worker": n, "latency": latency, "carried": carried})
    # both processes have stopped here: the local Nova has logged its stream count
    result.nova_streams, result.nova_violations = nova.get("streams"), nova.get("violations")
    for caller in callers:
        if caller.busy:
            result.busy += 1
        elif caller.error is None and caller.frames_heard > 0:
            result.served += 1
            if caller.first_audio_s is not None:
                result.first_audio_ms.append(caller.first_audio_s * 1000)
        else:
            result.failed += 1
            result.caller_errors.append(caller.error or f"no bot audio (sent {caller.frames} frames)")
    result.prewarm = {
        outcome: metric_total(metrics, f'voicebot_prewarm_total{{outcome="{outcome}"}}') for outcome in PREWARM_OUTCOMES
    }
    result.errors_metric = metric_total(metrics, "voicebot_errors_total")
    scan_log(result)
    return result


def scan_log(result: RunResult) -> None:
    assert result.log is not None
    lines = result.log.read_text(errors="replace").splitlines()
    for kind, pattern in LOG_PATTERNS.items():
        hits = [line for line in lines if re.search(pattern, line)]
        result.log_counts[kind] = len(hits)
        result.log_excerpts[kind] = hits[:3]
    admitted = upgraded = started = ended = 0
    for line in lines:
        admitted += "| incoming call from" in line
        upgraded += bool(re.search(r'"WebSocket \S*/media-stream" \[accepted\]', line))
        started += "| call started |" in line
        ended += "| call ended |" in line
        if "turned away" in line:
            result.refusals.append(
                f"{line[11:23]}: before it the log shows {admitted} webhooks admitted, {upgraded} streams upgraded, "
                f"{started} started ('call started'), {ended} ended: lines held = admitted - started + upgraded - "
                f"ended = {admitted - started + upgraded - ended} (calls admitted: {admitted - ended})"
            )
        if match := re.search(r"\| call ended \|.* turns=(\d+) barge_ins=(\d+)", line):
            result.turns.append(int(match.group(1)))
            result.barge_ins += int(match.group(2))


# --- report ----------------------------------------------------------------------------------------------


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def count(value: float) -> str:
    """A count, or the median of counts over rounds (which may end in .5)."""
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def latency_cell(result: RunResult, measure: str) -> str:
    cells = []
    for worker in result.per_worker:
        row = worker["latency"].get(measure)
        cells.append(f"{row['p50_ms']:.1f}/{row['p99_ms']:.1f}" if row else "-")
    return " · ".join(cells)


COST_HEADER = (
    f"{'variant':<10} | {'rnd':>3} | {'calls':>5} | {'served':>6} | {'busy':>4} | {'failed':>6} | "
    f"{'CPU/call':>8} | {'server CPU: sup + workers + nginx':>34} | {'RSS/call':>8} | {'RSS idle->load':>15} | "
    f"{'Nova CPU':>8} | {'callers':>7} | {'all':>7}"
)
CALLS_HEADER = (
    f"{'variant':<10} | {'rnd':>3} | {'calls':>5} | {'pre-warm hit/miss/late/disc':>27} | {'streams/call':>16} | "
    f"{'carried per worker':>18} | {'turns/call':>10} | {'barge-ins':>9} | "
    f"{'frame->send p50/p99 (per worker)':>32} | {'barge->clear p50/p99':>22} | {'turn p50/p99':>21} | "
    f"{'start->1st audio p50/p99':>25} | {'heard 1st p50/p99':>17} | {'errors':>6}"
)


def cost_row(label: str, rnd: str, rows: list[RunResult]) -> str:
    first = rows[0]
    served = med([r.served for r in rows])
    cpu = med([r.server_cpu / r.served for r in rows if r.served])
    split = (
        f"{med([r.server_cpu for r in rows]):5.1f} % = {med([r.cpu.get('supervisor', 0) for r in rows]):4.1f} + "
        f"{med([r.cpu.get('workers', 0) for r in rows]):5.1f} + {med([r.cpu.get('nginx', 0) for r in rows]):4.1f}"
    )
    rss_call = med([(r.rss_loaded_mb - r.rss_idle_mb) / r.served for r in rows if r.served])
    rss = f"{med([r.rss_idle_mb for r in rows]):.0f}->{med([r.rss_loaded_mb for r in rows]):.0f} MB"
    return (
        f"{label:<10} | {rnd:>3} | {first.calls:>5} | {count(served):>6} | {count(med([r.busy for r in rows])):>4} | "
        f"{count(med([r.failed for r in rows])):>6} | {cpu:6.2f} % | {split:>34} | {rss_call:5.2f} MB | {rss:>15} | "
        f"{med([r.cpu.get('nova', 0) for r in rows]):6.1f} % | {med([r.cpu.get('callers', 0) for r in rows]):5.1f} % | "
        f"{med([r.server_cpu + r.cpu.get('nova', 0) + r.cpu.get('callers', 0) for r in rows]):5.1f} %"
    )


def calls_row(label: str, rnd: str, rows: list[RunResult]) -> str:
    first = rows[0]
    prewarm = "/".join(count(med([r.prewarm.get(o, 0) for r in rows])) for o in PREWARM_OUTCOMES)
    streams = [r.nova_streams for r in rows if r.nova_streams is not None]
    if streams:
        served = med([r.served for r in rows])
        per_call = f"{count(med(streams))} ({med(streams) / served:.2f})" if served else count(med(streams))
    else:
        per_call = "?"
    if len(rows) == 1:
        carried = " + ".join(str(w["carried"]) for w in first.per_worker)
        frame, barge = latency_cell(first, "frame_to_send"), latency_cell(first, "barge_in_to_clear")
        turn, start = latency_cell(first, "turn"), latency_cell(first, "start_to_first_audio")
        firsts = first.first_audio_ms
        heard = f"{pct(firsts, 50):.0f}/{pct(firsts, 99):.0f}" if firsts else "-"
    else:  # medians over rounds, worker by worker
        carried = " + ".join(
            count(med([r.per_worker[n]["carried"] for r in rows])) for n in range(len(first.per_worker))
        )

        def merged(measure: str) -> str:
            cells = []
            for n in range(len(first.per_worker)):
                have = [r.per_worker[n]["latency"][measure] for r in rows if measure in r.per_worker[n]["latency"]]
                cells.append(f"{med([h['p50_ms'] for h in have]):.1f}/{med([h['p99_ms'] for h in have]):.1f}"
                             if have else "-")  # fmt: skip
            return " · ".join(cells)

        frame, barge, turn = merged("frame_to_send"), merged("barge_in_to_clear"), merged("turn")
        start = merged("start_to_first_audio")
        have = [r for r in rows if r.first_audio_ms]
        p50 = med([pct(r.first_audio_ms, 50) for r in have])
        p99 = med([pct(r.first_audio_ms, 99) for r in have])
        heard = f"{p50:.0f}/{p99:.0f}" if have else "-"
    errors = sum(r.errors_metric + len(r.caller_errors) for r in rows) / len(rows)
    turns = f"{med([med(r.turns) for r in rows if r.turns]):.1f}" if any(r.turns for r in rows) else "-"
    barge_ins = count(med([r.barge_ins for r in rows]))
    return (
        f"{label:<10} | {rnd:>3} | {first.calls:>5} | {prewarm:>27} | {per_call:>16} | {carried:>18} | "
        f"{turns:>10} | {barge_ins:>9} | {frame:>32} | {barge:>22} | {turn:>21} | {start:>25} | {heard:>17} | "
        f"{count(errors):>6}"
    )


def header(args: argparse.Namespace) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()  # fmt: skip
    model = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")), "?"
    )  # fmt: skip
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{datetime.now().astimezone():%Y-%m-%d %H:%M %Z} | commit {commit.stdout.strip() or '?'}"
        f"{' + uncommitted changes' if dirty else ''} | {os.cpu_count()} cores, {model} | load average {load}\n"
        f"1-proc: `voicebot serve`; {args.workers}-workers: `voicebot serve --workers {args.workers}` (nginx run by "
        f"serve); env only (PUBLIC_URL, TWILIO_*, VOICEBOT_PORT, VOICEBOT_MODEL=nova + the local Nova's endpoint); "
        f"VOICEBOT_MAX_CALLS default. {args.seconds:.0f} s of calls per run, CPU over the last "
        f"{args.seconds - SETTLE_S:.0f} s, nothing pinned, {args.rounds} round(s) interleaved.\n"
        "CPU in % of one core (server = every process of `voicebot serve`; local Nova and callers apart; all = the "
        f"three, out of {100 * (os.cpu_count() or 1)} %); latencies p50/p99 ms; 'med' rows: medians over rounds."
    )


async def main_async(args: argparse.Namespace) -> None:
    folder = Path(args.logs or tempfile.mkdtemp(prefix="voicebot-workers-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(header(args) + "\n", flush=True)
    variants = [("1-proc", 1), (f"{args.workers}-workers", args.workers)]
    results: list[RunResult] = []
    for calls in args.calls:
        for round_ in range(1, args.rounds + 1):
            for name, workers in variants:
                started = time.monotonic()
                result = await run(name, workers, calls, args.seconds, round_, folder)
                results.append(result)
                print(
                    f"  done: {name} {calls} calls round {round_} in {time.monotonic() - started:.0f} s "
                    f"(served {result.served}, busy {result.busy}, failed {result.failed})",
                    flush=True,
                )
    print()
    for title, head, make in (("cost", COST_HEADER, cost_row), ("calls and latency", CALLS_HEADER, calls_row)):
        print(f"{title}:\n{head}\n{'-' * len(head)}")
        for calls in args.calls:
            for name, _ in variants:
                rows = [r for r in results if r.variant == name and r.calls == calls]
                for r in rows:
                    print(make(name, str(r.round), [r]))
                if len(rows) > 1:
                    print(make(name, "med", rows))
        print()
    print(f"logs: {folder}")
    for r in results:
        noted = {kind: count for kind, count in r.log_counts.items() if count}
        problems = (
            noted
            or r.caller_errors
            or r.busy
            or r.failed
            or any(r.prewarm.get(o) for o in ("miss", "late", "discarded"))
            or (r.nova_streams is not None and r.nova_streams > r.served)
            or r.nova_violations
        )
        if not problems:
            continue
        print(f"\n{r.variant} {r.calls} calls round {r.round} ({r.log.name if r.log else '?'}): "
              f"log lines {noted or 'none of note'}; local Nova: {r.nova_streams} streams, "
              f"{r.nova_violations} violations")  # fmt: skip
        for error in sorted(set(r.caller_errors))[:3]:
            print(f"  caller: {error}")
        for refusal in r.refusals:
            print(f"  refusal at {refusal}")
        for kind, excerpt in r.log_excerpts.items():
            for line in excerpt:
                print(f"  [{kind}] {line[:300]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[50], help="call counts (default 50)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=40.0, help="length of each caller's talk (10-600)")
    parser.add_argument("--workers", type=int, default=2, help="N of `serve --workers N` (2-8)")
    parser.add_argument("--logs", help="keep the servers' and the local Nova's logs here (default: a temp folder)")
    args = parser.parse_args()
    if not 10 <= args.seconds <= 600:
        parser.error("--seconds must be between 10 and 600")
    if not 2 <= args.workers <= 8:
        parser.error("--workers must be between 2 and 8")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()

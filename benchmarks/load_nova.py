"""Load with the real Nova Sonic client: cost per call, chunk sizes, 1 vs 2 workers, pre-warm hits.

Side by side in one run, interleaved (round after round, every variant once per round, so the noise of a
shared machine falls on all of them alike):

- the fake agent of ``benchmarks/load.py`` (``tests/fakes/turns.py``);
- the real strands ``BedrockNovaSonicModel`` (AWS SDK, awscrt HTTP/2, SigV4) talking over TLS to the
  local Nova emulator (``python -m telephony.simulation.local_nova``) in its own process, with the send
  chunk sizes and CRT event-loop sharing each variant names;
- optionally the same from another source tree (``--baseline DIR``, e.g. ``git archive`` of an older
  commit), to compare with the code as it was.

One worker: the server is pinned to CPU 0 and the callers and the local Nova to CPU 1. Two workers:
``voicebot serve --workers 2``, which runs Debian's nginx itself on ``VOICEBOT_PORT`` (the routing of
``deploy/nginx/voicebot.conf``: webhooks to any worker, each stream to the worker that pre-warmed it);
everything goes to ``VOICEBOT_PORT``, nothing pinned: the callers, the local Nova and nginx share the
two cores with the workers. The callers are load.py's (webhook first, the stream a
second later, speech and pauses at real time, every third turn a barge-in, then a hang-up).

Printed per variant and load: server CPU per call (% of one core, the supervisor's and workers'
processes; with workers, also each worker's CPU over the calls it carried), RSS per call, the bridge's
p50/p99 latencies (frame->send: the frame that completes a chunk to send done; caller audio->model: the
oldest frame of a chunk to send done, the chunking hold included; audio->frame; barge-in->clear), the
pre-warm hit rate, the local Nova's and nginx's CPU, errors. Only 127.0.0.1 is contacted.

    uv run python benchmarks/load_nova.py [--calls 10 40] [--seconds 40] [--rounds 2]
        [--variants fake nova-20 nova-60/40 base-fake base-nova] [--workers 1 2] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import (
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
sys.path.insert(0, str(ROOT))

from telephony.operations.nginx import nginx_binary  # noqa: E402

FAKE_AGENT = "tests.fakes.turns:turn_taking_agent"
NOVA_AGENT = "agent.factory:create_agent"
SETTLE_S = 8.0
"""Every call connected and talking before the CPU window opens."""


@dataclass(frozen=True)
class Variant:
    """One way to run the server: which agent, which settings, which source tree."""

    name: str
    agent: str
    env: dict[str, str] = field(default_factory=dict)
    tree: Path = ROOT
    model: str | None = None
    """The local model server the real client talks to (``nova``, ``openai``, ``gemini``); None for the fake."""


def variant(name: str, baseline: Path | None) -> Variant:
    """``fake``, ``nova-<quiet ms>[/<speaking ms>[/<silence ms>[w<speech window ms>]]][-own-crt]``, ``base-nova``
    and ``base-fake`` (the --baseline tree, as it is), ``nova-out<rate>`` (Nova speaking at 8000, 16000 or
    24000 Hz), or ``nova``, ``openai``, ``gemini``: that model's real client with the product's default settings."""
    if name == "fake":
        return Variant(name, FAKE_AGENT)
    if name in LOCAL_MODELS:
        return Variant(name, NOVA_AGENT, model=name)
    if (rate := re.fullmatch(r"nova-out(8000|16000|24000)", name)) is not None:  # Nova speaking at another rate
        return Variant(name, NOVA_AGENT, {"VOICEBOT_NOVA_OUTPUT_RATE": rate.group(1)}, model="nova")
    if name in ("base-nova", "base-fake"):
        if baseline is None:
            raise SystemExit(f"{name} needs --baseline DIR (a source tree to compare with)")
        if name == "base-fake":
            return Variant(name, FAKE_AGENT, tree=baseline)
        return Variant(name, NOVA_AGENT, tree=baseline, model="nova")
    match = re.fullmatch(r"nova-(\d+)(?:/(\d+))?(?:/(\d+)(?:w(\d+))?)?(-own-crt)?", name)
    if match is None:
        raise SystemExit(
            f"unknown variant {name!r}: fake, base-nova, nova-60, nova-60/20/200w2000, nova-20-own-crt, ..."
        )
    quiet, speaking = match.group(1), match.group(2) or match.group(1)
    env = {"VOICEBOT_SEND_CHUNK_MS": quiet, "VOICEBOT_SEND_CHUNK_SPEAKING_MS": speaking}
    if match.group(3):  # speech-aware chunks: this much in long silence (this tree's settings only)
        env["VOICEBOT_SEND_CHUNK_SILENCE_MS"] = match.group(3)
        env["VOICEBOT_SPEECH_WINDOW_MS"] = match.group(4) or "2000"
    env["VOICEBOT_CRT_THREADS"] = "0" if match.group(5) else "1"
    return Variant(name, NOVA_AGENT, env, model="nova")


@dataclass
class Result:
    variant: str
    workers: int
    calls: int
    cpu_per_call: float = 0.0
    worker_cpu_per_call: list[float] = field(default_factory=list)
    rss_per_call: float = 0.0
    latency: dict[str, dict[str, float]] = field(default_factory=dict)
    prewarm: dict[str, float] = field(default_factory=dict)
    nova_cpu: float = 0.0
    nginx_cpu: float = 0.0
    errors: int = 0
    error_kinds: list[str] = field(default_factory=list)
    calls_per_worker: list[int] = field(default_factory=list)
    served: int = 0
    turned_away: int = 0
    model_connections: int = 0
    """Connections the server's model clients opened to the local model server (0: no model server)."""
    calls_end_s: float = 0.0
    """The last caller's hang-up -> no call left on the server (each call's figures reach /stats as it ends)."""


# --- processes -------------------------------------------------------------------------------------------


LOCAL_MODELS = {
    "nova": ("telephony.simulation.local_nova", ()),
    "openai": ("telephony.simulation.local_openai", ("--tls",)),
    "gemini": ("telephony.simulation.local_gemini", ()),
}
"""Each real client's local server: its module and the flags it needs for TLS (every one serves TLS here)."""


def model_env(model: str, printed: dict[str, str], ca: Path) -> dict[str, str]:
    """The server's environment that points ``model``'s real client at its local server."""
    if model == "nova":
        return {"VOICEBOT_MODEL": "nova", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": printed["LOCAL_NOVA_ENDPOINT"],
                "AWS_CA_BUNDLE": str(ca), "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIDLOCALNOVA",
                "AWS_SECRET_ACCESS_KEY": "local-nova-secret"}  # fmt: skip
    if model == "openai":
        return {"VOICEBOT_MODEL": "openai", "OPENAI_BASE_URL": printed["LOCAL_OPENAI_BASE_URL"],
                "OPENAI_API_KEY": printed["LOCAL_OPENAI_API_KEY"], "SSL_CERT_FILE": str(ca)}  # fmt: skip
    return {"VOICEBOT_MODEL": "gemini", "GOOGLE_GEMINI_BASE_URL": printed["LOCAL_GEMINI_BASE_URL"],
            "GOOGLE_API_KEY": "local-gemini-key", "SSL_CERT_FILE": str(ca)}  # fmt: skip


@asynccontextmanager
async def local_model(
    model: str, folder: Path, cpus: set[int], reply_s: float = 2.0, speedup: float = 4.0
) -> AsyncIterator[tuple[dict[str, str], int, int]]:
    """``model``'s local server in its own process; yields the server's env for it, its pid and its port."""
    module, flags = LOCAL_MODELS[model]
    ca = folder / f"{model}-ca.pem"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", module, "--port", "0", "--ca-out", str(ca), *flags, "--reply-s", str(reply_s),
        "--speedup", str(speedup), "--log-level", "WARNING",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, preexec_fn=lambda: os.sched_setaffinity(0, cpus),
    )  # fmt: skip
    try:
        assert process.stdout is not None
        printed: dict[str, str] = {}
        while len(printed) < (2 if model == "openai" else 1):
            line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
            if not line.startswith("LOCAL_"):
                raise RuntimeError(f"the local {model} did not start: {line!r}")
            key, value = line.strip().split("=", 1)
            printed[key] = value
        url = next(value for key, value in printed.items() if not key.endswith("API_KEY"))
        port = int(url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
        yield model_env(model, printed, ca), process.pid, port
    finally:
        process.terminate()
        await process.wait()


async def stop(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait for it to end."""
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def connections_to(port: int) -> set[int]:
    """Local ports of the IPv4 loopback TCP connections now established to ``port`` (the model clients')."""
    found = set()
    for row in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = row.split()
        local, remote, state = fields[1], fields[2], fields[3]
        if state == "01" and int(remote.rsplit(":", 1)[1], 16) == port:
            found.add(int(local.rsplit(":", 1)[1], 16))
    return found


async def count_connections(port: int, seen: set[int]) -> None:
    """Collect every client connection to ``port`` seen open (polled every 0.1 s) into ``seen``, until cancelled."""
    while True:
        seen |= connections_to(port)
        await asyncio.sleep(0.1)


@asynccontextmanager
async def server(
    spec: Variant, port: int, workers: int, model_env: dict[str, str], cpus: set[int] | None, log_path: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    """The server (one process, or a supervisor and its workers); its log goes to ``log_path``."""
    env = {
        **os.environ,
        "PYTHONPATH": str(spec.tree),
        "AWS_EC2_METADATA_DISABLED": "true",
        "VOICEBOT_PORT": str(port),
        "VOICEBOT_MAX_CALLS": "1000",
        "VOICEBOT_LOG_LEVEL": "WARNING",
        "VOICEBOT_GREETING": "Greet the caller.",
        "VOICEBOT_CALLER_SILENCE_TIMEOUT": "30",
        "VOICEBOT_WORKERS": str(workers),
        **spec.env,
    }
    for name in ("TWILIO_AUTH_TOKEN", "TWILIO_ACCOUNT_SID", "PUBLIC_URL", "VOICEBOT_RECORD_DIR", "AWS_PROFILE"):
        env.pop(name, None)
    env |= model_env
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    log = open(log_path, "ab")  # closed below, after the process
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "telephony.cli", "serve", "--agent", spec.agent,
        cwd=spec.tree, env=env, preexec_fn=pin, stderr=log,
    )  # fmt: skip
    try:
        ports = [port + 1 + n for n in range(workers)] + [port] if workers > 1 else [port]
        async with httpx.AsyncClient() as client:
            for each in ports:  # each worker's own port, then the nginx that serve runs in front
                for _ in range(1200):
                    try:
                        if (await client.get(f"http://127.0.0.1:{each}/health")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    await asyncio.sleep(0.05)
                else:
                    raise RuntimeError(f"{spec.name}: the server on port {each} did not start")
        yield process
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 40)
            except TimeoutError:
                process.kill()
                await process.wait()
        log.close()


# --- one run ---------------------------------------------------------------------------------------------


async def run(spec: Variant, calls: int, workers: int, seconds: float, folder: Path) -> Result:
    result = Result(spec.name, workers, calls)
    port = free_port_run(workers + 1)  # VOICEBOT_PORT and the workers' own ports above it
    cores = os.cpu_count() or 1
    serve_cpus = {0} if workers == 1 and cores > 1 else None
    side_cpus = {1} if workers == 1 and cores > 1 else set(range(cores))
    os.sched_setaffinity(0, side_cpus)  # the callers (this process)
    async with AsyncExitStack() as stack:
        env: dict[str, str] = {}
        nova_pid = None
        seen: set[int] = set()
        if spec.model is not None:
            env, nova_pid, model_port = await stack.enter_async_context(local_model(spec.model, folder, side_cpus))
            counter = asyncio.create_task(count_connections(model_port, seen))
            stack.push_async_callback(stop, counter)
        process = await stack.enter_async_context(server(spec, port, workers, env, serve_cpus, folder / "server.log"))
        base = f"http://127.0.0.1:{port}"  # one process, or the nginx `serve --workers N` runs in front
        await asyncio.sleep(0.5)
        tree = process_tree(process.pid)
        nginx_pids = [pid for pid in tree if process_name(pid) == "nginx"]
        worker_pids = sorted(pid for pid in tree if pid not in nginx_pids and (workers == 1 or pid != process.pid))
        server_pids = [pid for pid in tree if pid not in nginx_pids]  # the workers and their supervisor
        idle_rss = sum(proc_rss_mb(pid) for pid in server_pids)
        results = [CallerResult() for _ in range(calls)]

        async def staggered(index: int) -> None:
            await asyncio.sleep(index * min(5.0, calls * 0.025) / max(1, calls))
            try:
                await one_call(base, index, seconds, results[index])
            except Exception as error:  # noqa: BLE001 - reported in the table
                results[index].error = repr(error)

        tasks = [asyncio.create_task(staggered(index)) for index in range(calls)]
        await asyncio.sleep(SETTLE_S)
        watched = [*server_pids, *nginx_pids, *(p for p in (nova_pid,) if p)]
        before = {pid: proc_cpu_seconds(pid) for pid in watched}
        started = time.monotonic()
        await asyncio.sleep(max(1.0, seconds - SETTLE_S))
        elapsed = time.monotonic() - started
        used = {pid: (proc_cpu_seconds(pid) - before[pid]) / elapsed * 100 for pid in watched}
        rss = sum(proc_rss_mb(pid) for pid in server_pids)
        await asyncio.gather(*tasks)
        hung_up = time.monotonic()
        left = await calls_ended(port, workers)
        result.calls_end_s = time.monotonic() - hung_up
        stats, metrics = await read_figures(port, workers)
    result.turned_away = sum(1 for r in results if r.busy)
    result.served = calls - result.turned_away
    result.model_connections = len(seen)
    result.cpu_per_call = sum(used[pid] for pid in server_pids) / calls
    result.rss_per_call = (rss - idle_rss) / calls
    result.calls_per_worker = [int(s.get("handled", 0)) for s in stats]
    if workers > 1:
        result.worker_cpu_per_call = [
            used[pid] / max(1, handled) for pid, handled in zip(worker_pids, result.calls_per_worker, strict=False)
        ]
    result.latency = merge_latency([s.get("latency", {}) for s in stats])
    result.prewarm = {
        outcome: metric_total(metrics, f'voicebot_prewarm_total{{outcome="{outcome}"}}')
        for outcome in ("hit", "miss", "late", "discarded")
    }
    result.nova_cpu = used.get(nova_pid, 0.0) if nova_pid else 0.0
    result.nginx_cpu = sum(used[pid] for pid in nginx_pids)
    result.errors = sum(1 for r in results if r.error) + int(metric_total(metrics, "voicebot_errors_total"))
    result.error_kinds = sorted({r.error for r in results if r.error})[:3] + [
        line for line in metrics.splitlines() if line.startswith("voicebot_errors_total")
    ]
    if left:
        result.error_kinds.append(f"{left} call(s) still ending {CALLS_END_LIMIT_S:.0f} s after the last hang-up")
    return result


CALLS_END_LIMIT_S = 15.0
"""How long the calls may take to end after the callers hang up (the bridge gives a stopping agent 5 s)."""


async def calls_ended(port: int, workers: int, limit_s: float = CALLS_END_LIMIT_S) -> int:
    """Wait until no server process has a call left, at most ``limit_s``; how many were left then.

    A call's latency samples join ``GET /stats`` only once it has ended (its agent stopped): reading the figures
    a fixed moment after the hang-ups misses every call whose ending takes longer."""
    ports = [port + 1 + n for n in range(workers)] if workers > 1 else [port]
    deadline = time.monotonic() + limit_s
    async with httpx.AsyncClient() as client:
        while True:
            left = sum([(await client.get(f"http://127.0.0.1:{each}/health")).json()["calls"] for each in ports])
            if left == 0 or time.monotonic() > deadline:
                return left
            await asyncio.sleep(0.05)


async def read_figures(port: int, workers: int) -> tuple[list[dict[str, Any]], str]:
    """Each worker's /stats (from its own port) and the summed /metrics."""
    ports = [port + 1 + n for n in range(workers)] if workers > 1 else [port]
    stats = []
    async with httpx.AsyncClient() as client:
        for each in ports:
            body = (await client.get(f"http://127.0.0.1:{each}/stats")).json()
            body["handled"] = max(row.get("count", 0) for row in [body["latency"].get("start_to_first_audio", {})])
            stats.append(body)
        metrics = (await client.get(f"http://127.0.0.1:{ports[0]}/metrics")).text
    return stats, metrics


def merge_latency(parts: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per measure: the worst p50 and p99 over the workers (each reports its own reservoir)."""
    merged: dict[str, dict[str, float]] = {}
    for part in parts:
        for measure, row in part.items():
            into = merged.setdefault(measure, {"p50_ms": 0.0, "p99_ms": 0.0})
            into["p50_ms"] = max(into["p50_ms"], row["p50_ms"])
            into["p99_ms"] = max(into["p99_ms"], row["p99_ms"])
    return merged


# --- report ----------------------------------------------------------------------------------------------


MEASURES = ("frame_to_send", "caller_audio_to_model", "speech_audio_to_model", "audio_to_frame", "barge_in_to_clear",
            "turn")  # fmt: skip
HEADER = (
    "variant          | wk | calls | CPU/call | per worker    | RSS/call | frame->send | audio->model | "
    "speech->model | audio->frame | barge->clear | turn->audio | pre-warm hits | nova CPU | nginx | errors"
)


def cell(latency: dict[str, dict[str, float]], measure: str) -> str:
    row = latency.get(measure)
    return f"{row['p50_ms']:.1f} / {row['p99_ms']:.1f}" if row else "-"


def line(rows: list[Result]) -> str:
    """The median over rounds of one variant at one load."""
    first = rows[0]

    def med(values: list[float]) -> float:
        return statistics.median(values) if values else 0.0

    latency = {
        measure: {
            "p50_ms": med([r.latency[measure]["p50_ms"] for r in rows if measure in r.latency]),
            "p99_ms": med([r.latency[measure]["p99_ms"] for r in rows if measure in r.latency]),
        }
        for measure in MEASURES
        if any(measure in r.latency for r in rows)
    }
    per_worker = " ".join(
        f"{med([r.worker_cpu_per_call[i] for r in rows]):.2f}" for i in range(len(first.worker_cpu_per_call))
    )
    hits = sum(r.prewarm.get("hit", 0) for r in rows)
    taken = sum(r.prewarm.get("hit", 0) + r.prewarm.get("miss", 0) + r.prewarm.get("late", 0) for r in rows)
    rate = f"{100 * hits / taken:.0f} % ({int(hits)}/{int(taken)})" if taken else "-"
    return (
        f"{first.variant:<16} | {first.workers:>2} | {first.calls:>5} | {med([r.cpu_per_call for r in rows]):6.2f} % | "
        f"{per_worker or '-':>13} | {med([r.rss_per_call for r in rows]):5.2f} MB | "
        f"{cell(latency, 'frame_to_send'):>11} | "
        f"{cell(latency, 'caller_audio_to_model'):>12} | {cell(latency, 'speech_audio_to_model'):>13} | "
        f"{cell(latency, 'audio_to_frame'):>12} | {cell(latency, 'barge_in_to_clear'):>12} | "
        f"{cell(latency, 'turn'):>11} | {rate:>13} | {med([r.nova_cpu for r in rows]):6.1f} % | "
        f"{med([r.nginx_cpu for r in rows]):4.1f} % | {sum(r.errors for r in rows):>6}"
    )


async def main_async(args: argparse.Namespace) -> None:
    specs = [variant(name, args.baseline) for name in args.variants]
    print(f"{platform.platform()} | {platform.processor() or platform.machine()} | {os.cpu_count()} CPUs | "
          f"Python {platform.python_version()}")  # fmt: skip
    print(
        f"{args.seconds:.0f} s per run, CPU over the last {args.seconds - SETTLE_S:.0f} s, {args.rounds} round(s) "
        "interleaved, medians over rounds; 1 worker: server on CPU 0, callers + local Nova on CPU 1; 2 workers: "
        "the nginx serve runs in front, nothing pinned. CPU in % of one core; latencies p50 / p99 ms (worst worker)\n"
    )
    if 2 in args.workers and nginx_binary() is None:
        raise SystemExit("2 workers need nginx: apt-get install nginx-light")
    print(HEADER)
    print("-" * len(HEADER), flush=True)
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="voicebot-load-nova-") as scratch:
        for calls in args.calls:
            for workers in args.workers:
                collected: dict[str, list[Result]] = {spec.name: [] for spec in specs}
                for _ in range(args.rounds):
                    for spec in specs:
                        result = await run(spec, calls, workers, args.seconds, Path(scratch))
                        collected[spec.name].append(result)
                        if result.error_kinds:
                            notes.append(f"  {spec.name} x{workers} @ {calls}: " + "; ".join(result.error_kinds))
                for spec in specs:
                    print(line(collected[spec.name]), flush=True)
    if notes:
        print("\nerrors by kind:\n" + "\n".join(notes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[10, 40])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--variants", nargs="+", default=["fake", "nova-20-own-crt", "nova-20", "nova-60/40"])
    parser.add_argument("--baseline", type=Path, help="another source tree for the base-nova variant")
    args = parser.parse_args()
    os.sched_setaffinity(
        0, {1} if (os.cpu_count() or 1) > 1 and args.workers == [1] else set(range(os.cpu_count() or 1))
    )
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()

"""Where the real Nova Sonic client's CPU goes: the load benchmark with the real client beside the fake agent, profiled.

For the cost of chunk sizes, CRT sharing and workers side by side, see ``benchmarks/load_nova.py``.

Same callers, server and table as ``benchmarks/load.py`` (imported, not copied). For each N it runs the
server twice: with the turn-taking fake agent, and with the default agent (``agent.factory:create_agent``,
VOICEBOT_MODEL=nova), whose real ``BedrockNovaSonicModel`` (AWS SDK, CRT HTTP/2, SigV4, event stream)
talks TLS to the local Nova running in its own process (``python -m telephony.simulation.local_nova``,
on the callers' CPU, so the server's CPU figure is the server's alone). The local Nova answers every
caller turn and the greeting with 2 s of tone streamed at 4x real time, as the fake agent does (it ends
a turn after 0.6 s of silence where the fake waits 0.3 s and thinks 0.2 s).

``--profile`` samples the Nova server with py-spy (``py-spy`` on PATH, else ``uvx --from py-spy py-spy``;
never a project dependency) during the largest run's measurement window and prints where its CPU goes.

    uv run python benchmarks/nova_profile.py [--calls 10 40] [--seconds 20] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from load import FAKE_AGENT, ROOT, Run, ServerStarter, row, run, start_server

MODEL_ID = "amazon.nova-2-sonic-v1:0"
FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "AKIDLOCALNOVA0000000",
    "AWS_SECRET_ACCESS_KEY": "local-nova-secret-not-checked",
    "AWS_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/dev/null",
    "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    "AWS_EC2_METADATA_DISABLED": "true",
}
COMPONENTS = (
    ("awscrt", "awscrt (CRT HTTP/2 client, TLS)"),
    ("smithy_aws_event_stream", "smithy event stream (framing, SigV4 per event)"),
    ("smithy_aws_core", "smithy AWS core (SigV4 signing)"),
    ("smithy_http", "smithy HTTP (CRT glue)"),
    ("smithy_core", "smithy core (streams, serde)"),
    ("aws_sdk_bedrock_runtime", "Bedrock runtime SDK (event serde)"),
    ("strands/bidi/models", "strands Nova model (JSON, base64, logging)"),
    ("strands", "strands agent loop"),
    ("agent/", "agent (Nova adapter, tools)"),
    ("telephony/codec", "bridge: codec"),
    ("telephony/", "bridge: session, playback, protocol"),
    ("websockets", "WebSocket (Twilio side)"),
    ("uvicorn/protocols", "uvicorn (HTTP/WebSocket protocol)"),
    ("starlette", "starlette"),
)
LOOP_ROOTS = ("uvicorn/server.py", "uvicorn/main.py", "telephony/cli.py", "asyncio/runners.py")
"""Frames that only run the event loop: a sample whose innermost package frame is one of these is the loop's."""
LOOP = "asyncio event loop (select, scheduling, stdlib callbacks)"


async def start_local_nova(workdir: Path) -> tuple[asyncio.subprocess.Process, str, Path]:
    """The local Nova in its own process on the callers' CPU; returns it, its endpoint and its CA file."""
    ca_file = workdir / "local-nova-ca.pem"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "telephony.simulation.local_nova", "--port", "0", "--ca-out", str(ca_file),
        "--reply-s", "2", "--speedup", "4", "--log-level", "WARNING",
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=asyncio.subprocess.PIPE,
        preexec_fn=lambda: os.sched_setaffinity(0, {1} if (os.cpu_count() or 1) > 1 else {0}),
    )  # fmt: skip
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 30)
    if not line.startswith(b"LOCAL_NOVA_ENDPOINT="):
        raise RuntimeError(f"the local Nova did not start: {line!r}")
    return process, line.decode().strip().split("=", 1)[1], ca_file


def nova_server(endpoint: str, ca_file: Path) -> ServerStarter:
    """A ``ServerStarter`` for ``voicebot serve`` with the default agent on Nova at ``endpoint``."""
    env = {
        **FAKE_AWS,
        "VOICEBOT_MODEL": "nova",
        "VOICEBOT_MODEL_ID": MODEL_ID,
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": endpoint,
        "AWS_CA_BUNDLE": str(ca_file),
    }
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        os.environ.pop(name, None)

    async def start(port: int) -> asyncio.subprocess.Process:
        return await start_server(port, agent="agent.factory:create_agent", extra_env=env)

    return start


def py_spy_command() -> list[str] | None:
    if found := shutil.which("py-spy"):
        return [found]
    if found := shutil.which("uvx"):
        return [found, "--from", "py-spy", "py-spy"]
    return None


class Profile:
    """py-spy over the measurement window, as collapsed stacks, summarised by component."""

    def __init__(self, command: list[str], output: Path) -> None:
        self.command, self.output = command, output
        self.ran = False

    async def __call__(self, pid: int, seconds: float) -> None:
        process = await asyncio.create_subprocess_exec(
            *self.command, "record", "--pid", str(pid), "--duration", str(max(1, int(seconds))), "--rate", "200",
            "--format", "raw", "--output", str(self.output), "--nonblocking",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        self.ran = await process.wait() == 0

    def breakdown(self) -> list[tuple[str, float]]:
        """Share of samples per component: each sample goes to the innermost frame in a known package."""
        counts: collections.Counter[str] = collections.Counter()
        for line in self.output.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            counts[component(stack.split(";"))] += int(count)
        total = sum(counts.values()) or 1
        return [(name, 100 * value / total) for name, value in counts.most_common()]


_FILE = re.compile(r"\((?P<file>[^():]+)(?::\d+)?\)$")


def component(frames: list[str]) -> str:
    """The component of the innermost frame that belongs to one; stdlib frames count for their caller."""
    for frame in reversed(frames):
        match = _FILE.search(frame)
        path = match.group("file") if match else frame
        if any(root in path for root in LOOP_ROOTS):
            return LOOP
        for marker, name in COMPONENTS:
            if marker in path:
                return name
    return LOOP


async def main_async(counts: list[int], seconds: float, profile: bool, profile_out: Path | None = None) -> None:
    print(f"callers and the local Nova on CPU 1, server on CPU 0; {seconds:.0f} s per run; latencies p50 / p99 ms")
    print("rows: 'fake' = turn-taking fake agent; 'nova' = real BedrockNovaSonicModel -> local Nova over TLS\n")
    header = (
        "client |calls |   CPU/call | RSS/call | frame->send   | audio->frame  | barge->clear  | start->1st audio"
        " | heard 1st | dropped | late/sent      | errors"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="load-nova-") as workdir:
        nova, endpoint, ca_file = await start_local_nova(Path(workdir))
        command = py_spy_command() if profile else None
        profiler = Profile(command, profile_out or Path(workdir) / "nova.folded") if command else None
        try:
            results: list[tuple[str, Run]] = []
            for calls in counts:
                fake = await run(calls, seconds)
                print(f"fake   |{row(fake)}", flush=True)
                last = calls == max(counts)
                real = await run(calls, seconds, nova_server(endpoint, ca_file), profiler if last else None)
                print(f"nova   |{row(real)}", flush=True)
                results += [("fake", fake), ("nova", real)]
        finally:
            nova.terminate()
            await nova.wait()
        summarise(results)
        if profile and profiler is None:
            print("\n--profile: py-spy not found (install it, or uv for uvx)")
        elif profiler is not None and profiler.ran:
            print(f"\nwhere the Nova server's CPU goes at {max(counts)} calls (py-spy, {FAKE_AGENT} not involved):")
            for name, share in profiler.breakdown():
                if share >= 0.5:
                    print(f"  {share:5.1f} %  {name}")


def summarise(results: list[tuple[str, Run]]) -> None:
    by_calls: dict[int, dict[str, Run]] = collections.defaultdict(dict)
    for client, report in results:
        by_calls[report.calls][client] = report
    print("\nper call, real client vs fake agent:")
    for calls, reports in sorted(by_calls.items()):
        fake, nova = reports.get("fake"), reports.get("nova")
        if fake and nova:
            print(
                f"  {calls:>3} calls: CPU {nova.cpu_percent_per_call:.2f} % vs {fake.cpu_percent_per_call:.2f} % of a "
                f"core (x{nova.cpu_percent_per_call / max(fake.cpu_percent_per_call, 1e-9):.1f}); RSS "
                f"{nova.rss_mb_per_call:.2f} MB vs {fake.rss_mb_per_call:.2f} MB"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[10, 40])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--profile", action="store_true", help="sample the Nova server with py-spy (largest run)")
    parser.add_argument("--profile-out", type=Path, help="keep py-spy's collapsed stacks in this file")
    args = parser.parse_args()
    os.sched_setaffinity(0, {1} if (os.cpu_count() or 1) > 1 else {0})
    asyncio.run(main_async(args.calls, args.seconds, args.profile or bool(args.profile_out), args.profile_out))


if __name__ == "__main__":
    main()

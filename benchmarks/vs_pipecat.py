"""Side by side with pipecat on the same wire: our server and pipecat's, the same callers, the same local Nova.

Variants, interleaved round after round (so the noise of a shared machine falls on all alike):

- ``ours``: ``voicebot serve`` from this tree, the default agent (strands' Nova client through ``agent.nova``);
- ``base``: the same from another tree (``--baseline DIR``, e.g. ``git archive`` of main), if given;
- ``pipecat``: pipecat's own Twilio serializer, FastAPI WebSocket transport and AWS Nova Sonic service
  (``benchmarks/pipecat_nova_server.py``, in a throwaway venv with ``pipecat-ai[aws-nova-sonic]`` pinned to
  ``PIPECAT_VERSION``, built on first use under ~/.cache/voicebot-bench; never a project dependency), with
  uvicorn's defaults, as pipecat's own runner starts it;
- ``pipecat-websockets``: the same on uvicorn's older ``websockets`` implementation (``--pipecat-websockets``),
  which this benchmark used before 2026-12-05 and which costs more per frame than the default.

Each run: the local Nova (``python -m telephony.simulation.local_nova``) in its own process and the callers
on CPU 1, the server alone on CPU 0. Callers as ``benchmarks/load.py`` makes them (webhook, stream, 1 s of
speech then 3 s of listening, every third turn a barge-in), except that each caller's first words are a tone
of its own pitch, so the local Nova's record of each stream names its caller. Printed per variant and load:

- CPU per call: every process of the server (% of one core, over the window after all calls are talking);
- RSS per call beyond the idle server;
- first audio: stream opened -> first bot frame, at the caller;
- reply: the caller's last frame of a turn sent -> the first bot frame after it (the local Nova's 0.6 s
  end-pointing included: the difference between servers is what counts);
- barge-in -> clear: the caller's first frame talking over the bot sent -> ``clear`` received;
- caller audio -> model: each caller frame sent -> the ``audioInput`` that completed it parsed by the local
  Nova (frames aligned on the first tone's onset, so frames a server drops before its stream opens are skipped);
  caller speech -> model: the same for the frames that carry speech only.

    uv run python benchmarks/vs_pipecat.py [--calls 10 20 40] [--seconds 30] [--rounds 2] [--baseline DIR]
        [--pipecat-websockets]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import bisect
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import FRAMES, SILENCE, SPEECH, LightCaller, proc_cpu_seconds, proc_rss_mb, process_tree, webhook
from load_nova import NOVA_AGENT, Variant, server

from telephony.codec import pcm16_to_ulaw
from telephony.simulation.local_app.loopback import free_port_run

ROOT = Path(__file__).resolve().parent.parent
PIPECAT_VERSION = "1.14.0"
PIPECAT_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "voicebot-bench" / "pipecat-nova"
PIPECAT_SERVER = Path(__file__).resolve().with_name("pipecat_nova_server.py")
SETTLE_S = 8.0
NOVA_ENV = {"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIDLOCALNOVA", "AWS_SECRET_ACCESS_KEY": "local-secret"}


def pipecat_python() -> Path:
    """The interpreter of a venv holding pipecat-ai[aws-nova-sonic]==PIPECAT_VERSION (built once, then reused)."""
    home = PIPECAT_HOME / f"pipecat-ai-{PIPECAT_VERSION}-py{sys.version_info.major}.{sys.version_info.minor}"
    python = home / "bin" / "python"
    if (home / ".complete").is_file():
        return python
    print(f"(installing pipecat-ai=={PIPECAT_VERSION} into {home}; first run only)", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
    spec = f"pipecat-ai[aws-nova-sonic,websocket]=={PIPECAT_VERSION}"  # uvicorn serves it, as pipecat's runner does
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, spec, "uvicorn", "websockets"], check=True)
    (home / ".complete").write_text(spec + "\n", encoding="utf-8")
    return python


# --- callers -------------------------------------------------------------------------------------------------


def first_words(index: int) -> bytes:
    """One second of tone at this caller's own pitch (300 Hz + 20 Hz per index): the local Nova tells callers apart."""
    t = np.arange(8000) / 8000
    return pcm16_to_ulaw((0.3 * 32767 * np.sin(2 * math.pi * (300 + 20 * index) * t)).astype("<i2").tobytes())


@dataclass
class Timeline:
    """What one caller sent and heard, with monotonic times."""

    index: int
    sent: list[float] = field(default_factory=list)
    """Send time of each frame, in stream order."""
    speech: list[bool] = field(default_factory=list)
    """Whether each frame was speech (a tone), not silence."""
    first_tone_frame: int = -1
    turn_ends: list[float] = field(default_factory=list)
    barge_ins: list[float] = field(default_factory=list)
    media: list[float] = field(default_factory=list)
    clears: list[float] = field(default_factory=list)
    opened: float = 0.0
    error: str | None = None


class TimedCaller(LightCaller):
    """load.py's light Twilio peer, keeping when each bot frame and ``clear`` arrived (any JSON spacing)."""

    def __init__(self, timeline: Timeline, *args: Any) -> None:
        super().__init__(*args)
        self.timeline = timeline

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                kind = json.loads(raw).get("event")
                if kind == "media":
                    self.timeline.media.append(time.monotonic())
                elif kind == "clear":
                    self.timeline.clears.append(time.monotonic())
        except Exception:  # noqa: BLE001 - the connection closing ends the call
            pass
        finally:
            self.closed.set()


async def speak(caller: TimedCaller, audio: bytes, frames: dict[bytes, str]) -> None:
    """Stream ``audio`` in 20 ms frames on the call's one real-time clock, keeping each frame's send time."""
    timeline = caller.timeline
    for index in range(len(audio) // 160):
        delay = timeline.opened + len(timeline.sent) * 0.02 - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        if caller.closed.is_set():
            return
        caller.sequence += 1
        chunk = len(timeline.sent) + 1
        await caller.ws.send(
            f'{{"event":"media","sequenceNumber":"{caller.sequence}","media":{{"track":"inbound","chunk":"{chunk}",'
            f'"timestamp":"{20 * chunk}","payload":"{frames[audio[index * 160 : (index + 1) * 160]]}"}},'
            f'"streamSid":"{caller.stream_sid}"}}'
        )
        timeline.sent.append(time.monotonic())
        timeline.speech.append(audio is not SILENCE and not audio.startswith(SILENCE[:160]))


async def one_call(base: str, timeline: Timeline, seconds: float) -> None:
    """load.py's call, with this caller's own first words."""
    form = {"CallSid": f"CA{timeline.index:032x}", "AccountSid": "AC" + "0" * 32, "From": "+15550000000"}
    target = await webhook(base, form)
    if target is None:
        raise RuntimeError("turned away")
    await asyncio.sleep(1.0)
    own = first_words(timeline.index)
    frames = {**FRAMES, **{own[i : i + 160]: _b64(own[i : i + 160]) for i in range(0, len(own), 160)}}
    url = target.url.replace("wss://", "ws://", 1)
    args = (url, form["CallSid"], f"MZ{timeline.index:032x}", target.parameters)
    async with TimedCaller(timeline, *args) as caller:
        await caller.connect()
        timeline.opened = time.monotonic()
        await speak(caller, SILENCE + SILENCE[:4000], frames)  # hear the greeting out (1.5 s)
        turn, deadline = 0, time.monotonic() + seconds
        while time.monotonic() < deadline and not caller.closed.is_set():
            turn += 1
            if turn == 1:
                timeline.first_tone_frame = len(timeline.sent)
            await speak(caller, own if turn == 1 else SPEECH, frames)
            timeline.turn_ends.append(time.monotonic())
            if turn % 3 == 0:
                await speak(caller, SILENCE[: 160 * 40], frames)  # the bot starts answering...
                timeline.barge_ins.append(time.monotonic())
                await speak(caller, SPEECH[: 160 * 20], frames)  # ...and is talked over
            await speak(caller, SILENCE * 3, frames)
        if not caller.closed.is_set():
            await caller.stop()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --- processes -----------------------------------------------------------------------------------------------


@asynccontextmanager
async def local_nova(folder: Path, arrivals: Path) -> Any:
    """The local Nova on CPU 1; yields (its endpoint, its CA file, its pid). Writes ``arrivals`` as it stops."""
    ca = folder / "nova-ca.pem"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "telephony.simulation.local_nova", "--port", "0", "--ca-out", str(ca), "--reply-s", "2",
        "--speedup", "4", "--log-level", "ERROR", "--arrivals-out", str(arrivals),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, preexec_fn=lambda: os.sched_setaffinity(0, {1}),
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode().strip()
        yield line.split("=", 1)[1], ca, process.pid
    finally:
        process.terminate()
        await process.wait()


@asynccontextmanager
async def pipecat_server(port: int, endpoint: str, ca: Path, log: Path, ws: str = "auto") -> Any:
    """pipecat's server on CPU 0, pointed at the local Nova, on uvicorn's WebSocket implementation ``ws``."""
    env = {**os.environ, **NOVA_ENV, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": endpoint, "SSL_CERT_FILE": str(ca)}
    env["PIPECAT_UVICORN_WS"] = ws
    with log.open("ab") as err:
        process = await asyncio.create_subprocess_exec(
            str(pipecat_python()), str(PIPECAT_SERVER), str(port),
            env=env, stderr=err, preexec_fn=lambda: os.sched_setaffinity(0, {0}),
        )  # fmt: skip
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(600):
                try:
                    if (await client.get(f"http://127.0.0.1:{port}/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            else:
                raise RuntimeError("pipecat's server did not start")
        yield process
    finally:
        process.terminate()
        await process.wait()


# --- one run -------------------------------------------------------------------------------------------------


@dataclass
class Result:
    variant: str
    calls: int
    cpu_per_call: float = 0.0
    rss_per_call: float = 0.0
    first_audio: list[float] = field(default_factory=list)
    reply: list[float] = field(default_factory=list)
    barge_in_to_clear: list[float] = field(default_factory=list)
    to_model: list[float] = field(default_factory=list)
    speech_to_model: list[float] = field(default_factory=list)
    unmatched: int = 0
    errors: list[str] = field(default_factory=list)


async def run(variant: str, tree: Path, calls: int, seconds: float, folder: Path) -> Result:
    result = Result(variant, calls)
    port = free_port_run(1)
    arrivals = folder / f"arrivals-{variant}-{calls}.jsonl"
    os.sched_setaffinity(0, {1})
    timelines = [Timeline(index) for index in range(calls)]
    async with AsyncExitStack() as stack:
        endpoint, ca, _ = await stack.enter_async_context(local_nova(folder, arrivals))
        if variant.startswith("pipecat"):
            ws = "websockets" if variant == "pipecat-websockets" else "auto"
            process = await stack.enter_async_context(pipecat_server(port, endpoint, ca, folder / "pipecat.log", ws))
        else:
            env = {**NOVA_ENV, "VOICEBOT_MODEL": "nova", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": endpoint,
                   "AWS_CA_BUNDLE": str(ca)}  # fmt: skip
            spec = Variant(variant, NOVA_AGENT, tree=tree, model="nova")
            process = await stack.enter_async_context(server(spec, port, 1, env, {0}, folder / f"{variant}.log"))
        await asyncio.sleep(0.5)
        pids = process_tree(process.pid)
        idle_rss = sum(proc_rss_mb(pid) for pid in pids)
        base = f"http://127.0.0.1:{port}"

        async def staggered(timeline: Timeline) -> None:
            await asyncio.sleep(timeline.index * 0.05)
            try:
                await one_call(base, timeline, seconds)
            except Exception as error:  # noqa: BLE001 - reported
                timeline.error = repr(error)

        tasks = [asyncio.create_task(staggered(timeline)) for timeline in timelines]
        await asyncio.sleep(SETTLE_S)
        pids = process_tree(process.pid)
        before = {pid: proc_cpu_seconds(pid) for pid in pids}
        started = time.monotonic()
        await asyncio.sleep(max(1.0, seconds - SETTLE_S))
        elapsed = time.monotonic() - started
        used = sum(proc_cpu_seconds(pid) - before[pid] for pid in pids if Path(f"/proc/{pid}").exists())
        rss = sum(proc_rss_mb(pid) for pid in pids if Path(f"/proc/{pid}").exists())
        await asyncio.gather(*tasks)
        await asyncio.sleep(1.0)
    result.cpu_per_call = used / elapsed * 100 / calls
    result.rss_per_call = (rss - idle_rss) / calls
    result.errors = sorted({t.error for t in timelines if t.error})
    for timeline in timelines:
        caller_side(timeline, result)
    model_side(timelines, arrivals, result)
    return result


def caller_side(timeline: Timeline, result: Result) -> None:
    """First audio, reply and barge-in -> clear, as this caller heard them."""
    if timeline.media:
        result.first_audio.append(timeline.media[0] - timeline.opened)
    for ended in timeline.turn_ends:
        at = bisect.bisect_right(timeline.media, ended)
        if at < len(timeline.media) and timeline.media[at] - ended < 3.0:
            result.reply.append(timeline.media[at] - ended)
    for began in timeline.barge_ins:
        at = bisect.bisect_right(timeline.clears, began)
        if at < len(timeline.clears) and timeline.clears[at] - began < 2.0:
            result.barge_in_to_clear.append(timeline.clears[at] - began)


def model_side(timelines: list[Timeline], arrivals: Path, result: Result) -> None:
    """Each caller frame sent -> the local Nova parsing the ``audioInput`` that completed it.

    A stream is matched to its caller by the pitch of its first tone; its frames are aligned on that tone's onset."""
    by_pitch = {300 + 20 * t.index: t for t in timelines if t.first_tone_frame >= 0}
    for line in arrivals.read_text(encoding="utf-8").splitlines():
        stream = json.loads(line)
        if not stream.get("tones") or not stream["arrivals"]:
            continue
        found = [(onset, hz) for onset, hz in stream["tones"] for pitch in by_pitch if abs(hz - pitch) <= 8]
        if not found:
            result.unmatched += 1
            continue
        onset_s, hz = found[0]
        timeline = by_pitch.pop(min(by_pitch, key=lambda pitch: abs(hz - pitch)))
        bytes_per_s = 2 * stream["rate"]
        times = [at for at, _ in stream["arrivals"]]
        ends = [received / bytes_per_s for _, received in stream["arrivals"]]
        offset = timeline.first_tone_frame * 0.02 - onset_s  # caller stream time - model stream time
        for frame, sent in enumerate(timeline.sent):
            end = (frame + 1) * 0.02 - offset  # where this frame ends in the audio the model received
            if end <= 0.001:
                continue  # before the model's stream took audio
            at = bisect.bisect_left(ends, end - 0.001)
            if at < len(ends):
                result.to_model.append(times[at] - sent)
                if timeline.speech[frame]:
                    result.speech_to_model.append(times[at] - sent)
    result.unmatched += len(by_pitch)


# --- report --------------------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def row(results: list[Result]) -> str:
    """One variant at one load: the range over rounds (each round's own figure), low-high."""

    def span(values: list[float], form: str = "{:.2f}") -> str:
        low, high = min(values), max(values)
        return form.format(low) if math.isclose(low, high) else f"{form.format(low)}-{form.format(high)}"

    first = results[0]
    cells = [
        span([r.cpu_per_call for r in results]) + " %",
        span([r.rss_per_call for r in results]) + " MB",
        span([pct(r.first_audio, 0.5) for r in results], "{:.0f}"),
        span([pct(r.reply, 0.5) for r in results], "{:.0f}"),
        span([pct(r.barge_in_to_clear, 0.5) for r in results], "{:.0f}"),
        span([pct(r.to_model, 0.5) for r in results], "{:.0f}")
        + " / "
        + span([pct(r.to_model, 0.99) for r in results], "{:.0f}"),
        span([pct(r.speech_to_model, 0.5) for r in results], "{:.0f}")
        + " / "
        + span([pct(r.speech_to_model, 0.99) for r in results], "{:.0f}"),
        str(sum(r.unmatched for r in results)),
        str(sum(len(r.errors) for r in results)),
    ]
    return f"| {first.calls} | {first.variant} | " + " | ".join(cells) + " |"


HEADER = (
    "| calls | server | CPU per call | RSS per call | first audio p50 | reply p50 | barge-in→clear p50 | "
    "caller audio→model p50 / p99 | caller speech→model p50 / p99 | unmatched streams | errors |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


async def main_async(args: argparse.Namespace) -> None:
    variants = [("ours", ROOT)] + ([("base", args.baseline)] if args.baseline else []) + [("pipecat", ROOT)]
    if args.pipecat_websockets:
        variants.append(("pipecat-websockets", ROOT))
    pipecat_python()
    machine = f"{platform.platform()} | {os.cpu_count()} CPUs | Python {platform.python_version()}"
    print(f"{machine} | pipecat {PIPECAT_VERSION}")
    window = args.seconds - SETTLE_S
    print(f"{args.seconds:.0f} s per run, CPU over the last {window:.0f} s, {args.rounds} round(s) interleaved; "
          "server on CPU 0, callers + local Nova on CPU 1;\nranges over rounds; latencies ms\n")  # fmt: skip
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory(
        prefix="voicebot-vs-pipecat-", delete=not os.environ.get("VS_PIPECAT_KEEP")
    ) as scratch:
        for calls in args.calls:
            collected: dict[str, list[Result]] = {name: [] for name, _ in variants}
            for _ in range(args.rounds):
                for name, tree in variants:
                    result = await run(name, tree, calls, args.seconds, Path(scratch))
                    collected[name].append(result)
                    for error in result.errors:
                        print(f"  ({name} @ {calls}: {error})", file=sys.stderr)
            for name, _ in variants:
                print(row(collected[name]), flush=True)
            ours, theirs = collected["ours"], collected["pipecat"]
            ratios = [o.cpu_per_call / p.cpu_per_call for o, p in zip(ours, theirs, strict=True) if p.cpu_per_call]
            print(f"|   | ours / pipecat CPU per call, per round: {' '.join(f'{r:.2f}' for r in ratios)} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[10, 20, 40])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another source tree to run as 'base' (e.g. git archive of main)")
    parser.add_argument(
        "--pipecat-websockets", action="store_true", help="also run pipecat on uvicorn's older websockets code"
    )
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()

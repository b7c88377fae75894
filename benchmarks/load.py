"""Load benchmark: N simulated Twilio callers against a real `voicebot serve` process, on loopback.

The server runs pinned to CPU 0 with a fast fake agent (tests/fakes/turns.py: answers each caller
turn with generated speech, barges in when talked over); the callers run in this process on
CPU 1, at real time, the way Twilio would: webhook first (so the agent is pre-warmed), the stream
about a second later, speech and pauses, some barge-ins, then a hang-up.

Prints one table row per N: server CPU per call (% of one core), RSS per call beyond the idle
server, p50/p99 of the bridge's latencies (from GET /stats), start -> first bot audio as the
caller heard it, frames dropped, frames the callers could not send on time, errors.
Bounded: each run lasts --seconds (default 20) plus set-up; only 127.0.0.1 is contacted.

    uv run python benchmarks/load.py [--calls 1 50 200] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import math
import os
import platform
import re
import socket
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import websockets  # noqa: E402

from telephony.codec import pcm16_to_ulaw  # noqa: E402
from telephony.simulation.caller.simulated_caller import AnswerError, StreamTarget, parse_stream, twilio_signature  # noqa: E402
from telephony.twilio.security import public_url_for  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
SPEECH = pcm16_to_ulaw((0.3 * 32767 * np.sin(2 * math.pi * 300 * np.arange(8000) / 8000)).astype("<i2").tobytes())
SILENCE = b"\xff" * 8000
FRAMES = {chunk: base64.b64encode(chunk).decode() for audio in (SPEECH, SILENCE) for chunk in
          (audio[offset : offset + 160] for offset in range(0, len(audio), 160))}  # fmt: skip


@dataclass
class CallerResult:
    first_audio_s: float | None = None
    """Stream opened -> first bot frame received (what the caller waited to hear the bot)."""
    late_frames: int = 0
    frames: int = 0
    error: str | None = None
    barge_ins_tried: int = 0
    busy: bool = False
    """The webhook answered TwiML without a stream (the "all our lines are busy" message)."""
    frames_heard: int = 0
    """Bot frames received over the whole call."""


@dataclass
class Run:
    calls: int
    results: list[CallerResult] = field(default_factory=list)
    cpu_percent_per_call: float = 0.0
    rss_mb_per_call: float = 0.0
    stats: dict = field(default_factory=dict)
    metrics: str = ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_rss_mb(pid: int) -> float:
    match = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(match.group(1)) / 1024 if match else 0.0


def process_tree(pid: int) -> list[int]:
    """``pid`` and every descendant still running (a supervisor, its workers, the nginx it runs, ...)."""
    found, queue = [], [pid]
    while queue:
        each = queue.pop()
        if not Path(f"/proc/{each}").exists():
            continue
        found.append(each)
        for task in Path(f"/proc/{each}/task").glob("*"):
            try:
                queue += [int(child) for child in (task / "children").read_text().split()]
            except OSError:
                pass
    return found


def process_name(pid: int) -> str:
    """The executable's name (``nginx``, ``python3.12``, ...); empty once the process is gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


FAKE_AGENT = "tests.fakes.turns:turn_taking_agent"


async def start_server(
    port: int,
    log_level: str = "WARNING",
    log: Any = None,
    agent: str = FAKE_AGENT,
    extra_env: dict[str, str] | None = None,
) -> asyncio.subprocess.Process:
    """`voicebot serve` with ``agent`` (the turn-taking fake), pinned to CPU 0; its log goes to ``log`` if given."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "AWS_EC2_METADATA_DISABLED": "true",
        "VOICEBOT_PORT": str(port),
        "VOICEBOT_MAX_CALLS": "1000",
        "VOICEBOT_LOG_LEVEL": log_level,
        "VOICEBOT_GREETING": "Greet the caller.",
        "VOICEBOT_CALLER_SILENCE_TIMEOUT": "30",
        **(extra_env or {}),
    }
    for name in ("TWILIO_AUTH_TOKEN", "TWILIO_ACCOUNT_SID", "PUBLIC_URL", "VOICEBOT_RECORD_DIR"):
        env.pop(name, None)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "telephony.cli", "serve", "--agent", agent,
        cwd=ROOT, env=env, preexec_fn=lambda: os.sched_setaffinity(0, {0}), stderr=log,
    )  # fmt: skip
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        for _ in range(300):
            try:
                if (await client.get("/health")).status_code == 200:
                    return process
            except httpx.TransportError:
                await asyncio.sleep(0.05)
    raise RuntimeError("the server did not start")


class LightCaller:
    """A Twilio peer cut to what load needs, so 200 of them fit on one core beside the server.

    It plays what it receives the way Twilio's player does, without a task per call: each frame
    extends a playout clock, each mark is echoed by a timer when the audio before it has played,
    and ``clear`` resets the clock and echoes pending marks at once. (The full-featured peer is
    telephony.simulation.caller.SimulatedCaller; this one keeps no per-frame records.)
    """

    def __init__(
        self,
        url: str,
        call_sid: str,
        stream_sid: str,
        parameters: dict[str, str],
        headers: dict[str, str] | None = None,
    ) -> None:
        self.url, self.call_sid, self.stream_sid, self.parameters = url, call_sid, stream_sid, parameters
        self.headers = headers or {}
        self.sequence = 0
        self.playout_end = 0.0
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.first_media: float | None = None
        self.opened = 0.0
        self.closed = asyncio.Event()
        self.frames_received = 0
        self.clears: list[float] = []
        """When each ``clear`` arrived (``time.monotonic()``)."""

    async def __aenter__(self) -> LightCaller:
        self.ws = await websockets.connect(self.url, compression=None, max_size=2**20, additional_headers=self.headers)
        self.opened = time.monotonic()
        self.reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *_: object) -> None:
        self.reader.cancel()
        await asyncio.gather(self.reader, return_exceptions=True)
        for timer in self.pending.values():
            timer.cancel()
        await self.ws.close()

    async def send(self, message: dict[str, object]) -> None:
        self.sequence += 1
        await self.ws.send(json.dumps({**message, "sequenceNumber": str(self.sequence), "streamSid": self.stream_sid}))

    async def connect(self) -> None:
        await self.ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
        start = {"accountSid": "AC" + "0" * 32, "callSid": self.call_sid, "streamSid": self.stream_sid,
                 "tracks": ["inbound"], "customParameters": self.parameters,
                 "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}  # fmt: skip
        await self.send({"event": "start", "start": start})

    async def stop(self) -> None:
        await self.send({"event": "stop", "stop": {"accountSid": "AC" + "0" * 32, "callSid": self.call_sid}})

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            async for raw in self.ws:
                now = loop.time()
                if '"event":"media"' in raw:
                    self.frames_received += 1
                    if self.first_media is None:
                        self.first_media = time.monotonic() - self.opened
                    self.playout_end = max(self.playout_end, now) + 0.02
                elif '"event":"mark"' in raw:
                    name = json.loads(raw)["mark"]["name"]
                    self.pending[name] = loop.call_at(max(self.playout_end, now), self._echo, name)
                elif '"event":"clear"' in raw:
                    self.clears.append(time.monotonic())
                    self.playout_end = now
                    for name, timer in list(self.pending.items()):
                        timer.cancel()
                        self._echo(name)
        except websockets.ConnectionClosed:
            pass
        finally:
            self.closed.set()

    def _echo(self, name: str) -> None:
        self.pending.pop(name, None)
        if not self.closed.is_set():
            self.sequence += 1
            message = {"event": "mark", "sequenceNumber": str(self.sequence), "streamSid": self.stream_sid,
                       "mark": {"name": name}}  # fmt: skip
            echo = asyncio.ensure_future(self.ws.send(json.dumps(message)))
            echo.add_done_callback(lambda task: task.exception() if not task.cancelled() else None)


async def speak(caller: LightCaller, audio: bytes, result: CallerResult) -> None:
    """Stream ``audio`` in 20 ms frames at real time, counting frames sent more than 20 ms late."""
    started = time.monotonic()
    for index in range(len(audio) // 160):
        due = started + index * 0.02
        lag = time.monotonic() - due
        if lag > 0.02:
            result.late_frames += 1
        elif lag < 0:
            await asyncio.sleep(-lag)
        if caller.closed.is_set():
            return
        result.frames += 1
        caller.sequence += 1
        payload = FRAMES[audio[index * 160 : (index + 1) * 160]]
        await caller.ws.send(
            f'{{"event":"media","sequenceNumber":"{caller.sequence}","media":{{"track":"inbound",'
            f'"chunk":"{result.frames}","timestamp":"{100 + 20 * result.frames}","payload":"{payload}"}},'
            f'"streamSid":"{caller.stream_sid}"}}'
        )


ACCOUNT_SID = "AC" + "0" * 32


async def webhook(
    base: str, form: dict[str, str], auth_token: str | None = None, public_url: str | None = None
) -> StreamTarget | None:
    """POST Twilio's voice webhook to ``base``/twiml (signed over ``public_url``/twiml when a token is given).

    Returns the ``<Connect><Stream>`` it answered, or None when the server turned the call away (TwiML that
    says the busy message and hangs up instead of connecting a stream)."""
    headers = {}
    if auth_token:
        signed = public_url_for(public_url, "/twiml") if public_url else base.rstrip("/") + "/twiml"
        headers["X-Twilio-Signature"] = twilio_signature(auth_token, signed, form)
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(base.rstrip("/") + "/twiml", data=form, headers=headers)
    if response.status_code != 200:
        raise AnswerError(f"{base}/twiml answered HTTP {response.status_code}")
    if "<Stream" not in response.text and "<Say" in response.text:
        return None
    return parse_stream(response.text)


async def one_call(
    base: str,
    index: int,
    seconds: float,
    result: CallerResult,
    auth_token: str | None = None,
    public_url: str | None = None,
) -> None:
    """One call as Twilio makes it: webhook, the stream a second later, speech, barge-ins, hang-up.

    With ``auth_token`` (and the server's ``public_url``) the webhook and the stream upgrade are signed as
    Twilio signs them, and the stream goes to ``base`` with the path the TwiML named."""
    call_sid = f"CA{index:032x}"
    form = {"CallSid": call_sid, "AccountSid": ACCOUNT_SID, "From": "+15550000000", "To": "+15551111111"}
    target = await webhook(base, form, auth_token, public_url)
    if target is None:
        result.busy = True
        return
    await asyncio.sleep(1.0)  # Twilio opens the stream about a second after the webhook
    headers = {}
    if auth_token:
        headers["X-Twilio-Signature"] = twilio_signature(auth_token, target.url, {})
        url = "ws://" + base.split("://", 1)[1].rstrip("/") + "/" + target.url.split("://", 1)[1].split("/", 1)[1]
    else:
        url = target.url.replace("wss://", "ws://", 1)
    async with LightCaller(url, call_sid, f"MZ{index:032x}", target.parameters, headers) as caller:
        await caller.connect()
        await speak(caller, SILENCE + SILENCE[:4000], result)  # hear the greeting out (1.5 s)
        turn = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not caller.closed.is_set():
            turn += 1
            await speak(caller, SPEECH, result)  # 1 s of "speech"
            if turn % 3 == 0:
                await speak(caller, SILENCE[: 160 * 40], result)  # the bot starts answering...
                await speak(caller, SPEECH[: 160 * 20], result)  # ...and is talked over
                result.barge_ins_tried += 1
            await speak(caller, SILENCE * 3, result)  # listen to the answer (3 s)
        result.first_audio_s = caller.first_media
        result.frames_heard = caller.frames_received
        if not caller.closed.is_set():
            await caller.stop()


ServerStarter = Callable[[int], Awaitable[asyncio.subprocess.Process]]
Profiler = Callable[[int, float], Awaitable[None]]


async def run(
    calls: int, seconds: float, server_starter: ServerStarter = start_server, profile: Profiler | None = None
) -> Run:
    """One load run; ``profile(pid, seconds)``, if given, runs over the CPU measurement window."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = await server_starter(port)
    report = Run(calls)
    try:
        await asyncio.sleep(0.5)
        idle_rss = proc_rss_mb(server.pid)
        report.results = [CallerResult() for _ in range(calls)]

        async def staggered(index: int) -> None:
            await asyncio.sleep(index * min(5.0, calls * 0.025) / max(1, calls))
            try:
                await one_call(base, index, seconds, report.results[index])
            except Exception as error:  # noqa: BLE001 - reported in the table
                report.results[index].error = repr(error)

        tasks = [asyncio.create_task(staggered(index)) for index in range(calls)]
        await asyncio.sleep(8.0)  # every call connected and talking
        cpu_before, wall_before = proc_cpu_seconds(server.pid), time.monotonic()
        window = max(1.0, seconds - 8.0)
        await asyncio.gather(asyncio.sleep(window), *([profile(server.pid, window - 0.5)] if profile else []))
        cpu_used = proc_cpu_seconds(server.pid) - cpu_before
        report.cpu_percent_per_call = 100 * cpu_used / (time.monotonic() - wall_before) / calls
        report.rss_mb_per_call = (proc_rss_mb(server.pid) - idle_rss) / calls
        await asyncio.gather(*tasks)
        await asyncio.sleep(1.0)
        async with httpx.AsyncClient(base_url=base) as client:
            report.stats = (await client.get("/stats")).json()
            report.metrics = (await client.get("/metrics")).text
    finally:
        server.terminate()
        await server.wait()
    return report


def metric_total(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def row(report: Run) -> str:
    latency = report.stats.get("latency", {})

    def cell(measure: str) -> str:
        entry = latency.get(measure)
        return f"{entry['p50_ms']:.1f} / {entry['p99_ms']:.1f}" if entry else "-"

    firsts = [r.first_audio_s for r in report.results if r.first_audio_s is not None]
    first = f"{statistics.median(firsts) * 1000:.0f} ms" if firsts else "-"
    late = sum(r.late_frames for r in report.results)
    sent = sum(r.frames for r in report.results)
    errors = sum(1 for r in report.results if r.error) + int(metric_total(report.metrics, "voicebot_errors_total"))
    dropped = int(metric_total(report.metrics, "voicebot_frames_dropped_total"))
    return (
        f"{report.calls:>5} | {report.cpu_percent_per_call:7.3f} % | {report.rss_mb_per_call:6.2f} MB | "
        f"{cell('frame_to_send'):>13} | {cell('audio_to_frame'):>13} | {cell('barge_in_to_clear'):>13} | "
        f"{cell('start_to_first_audio'):>15} | {first:>9} | {dropped:>7} | {late:>6}/{sent:<7} | {errors:>6}"
    )


async def main_async(counts: list[int], seconds: float) -> None:
    print(f"{platform.platform()} | {platform.processor() or platform.machine()} | {os.cpu_count()} CPUs | "
          f"Python {platform.python_version()}")  # fmt: skip
    print(f"server pinned to CPU 0, callers on CPU 1; {seconds:.0f} s per run; latencies p50 / p99 in ms (GET /stats)")
    print(
        "fake agent: greets on start and answers each caller turn after 0.2 s with 2 s of speech streamed at 4x "
        "real time; every 3rd turn the caller barges in\n"
    )
    header = (
        "calls |   CPU/call | RSS/call | frame->send   | audio->frame  | barge->clear  | start->1st audio"
        " | heard 1st | dropped | late/sent      | errors"
    )
    print(header)
    print("-" * len(header))
    notes = []
    for calls in counts:
        report = await run(calls, seconds)
        print(row(report), flush=True)
        detail = [line for line in report.metrics.splitlines()
                  if line.startswith(("voicebot_errors_total", "voicebot_frames_dropped_total"))]  # fmt: skip
        errors = [r.error for r in report.results if r.error]
        if detail or errors:
            notes.append(f"  {calls} calls: " + "; ".join(detail + sorted(set(errors))[:3]))
    if notes:
        print("\nerrors and drops by kind:\n" + "\n".join(notes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[1, 50, 200])
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    os.sched_setaffinity(0, {1} if (os.cpu_count() or 1) > 1 else {0})
    asyncio.run(main_async(args.calls, args.seconds))


if __name__ == "__main__":
    main()

"""`voicebot serve` as users run it, under 50 simultaneous calls: the default (one process) and `--workers 2`.

Everything real but the phone network and the model: the installed ``voicebot`` command with only
``--host``/``--port`` (and ``--workers 2``), default settings from the environment as a ``.env`` would give
them, Twilio's REST API served locally (the bot's hang-ups go through the SDK's own HTTP layer), and 50
simulated Twilio callers that sign their webhooks and stream upgrades and play what they get at real time.
The agent is the fast turn-taking fake (``VOICEBOT_AGENT=tests.fakes.turns:goodbye_agent``): 50 calls through
the real Nova client cost a whole core of this 2-core machine on their own (benchmarks/workers.py), which
would leave the test measuring the machine. The default agent itself, the real Nova Sonic client against the
local Nova in its own process, carries 10 such calls in the last test.

Each call: the greeting, a question and its answer, a talk-over that must make the bridge send ``clear``,
the answer to that, then "goodbye" (a 660 Hz turn: the agent says goodbye and calls ``end_conversation``),
heard in full, and the bot hangs up over REST. Checked for every call: answered (not "busy"), the stream URL
(``wss://PUBLIC/media-stream`` by default), reply heard, barge-in cleared, goodbye heard, hung up by the bot
(over REST, and its stream closed by the bot);
for the server: every pre-warmed agent used, none refused, exactly one agent (model connection) per call.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest
import websockets

from telephony.codec import pcm16_to_ulaw
from telephony.simulation.caller.simulated_caller import SimulatedCaller, answer, twilio_signature
from telephony.simulation.local_app.nginx import nginx_binary
from telephony.simulation.local_twilio.api import ApiRequest

from .server_process import voicebot_serve
from .test_workers import free_ports, metric

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = "https://voice.example.com"
TOKEN = "test-auth-token-for-50-calls"
ACCOUNT = "AC" + "6" * 32
CALLS = 50
"""The default VOICEBOT_MAX_CALLS: every line of the server in use at once."""
NOVA_CALLS = 10
GOODBYE_HZ = 660.0
"""The console script `uv sync` installs: what `uv run voicebot serve` runs."""


def tone(hz: float, seconds: float) -> bytes:
    samples = np.arange(int(8000 * seconds))
    return pcm16_to_ulaw((0.3 * 32767 * np.sin(2 * math.pi * hz * samples / 8000)).astype("<i2").tobytes())


QUESTION, TALK_OVER, GOODBYE = tone(300, 0.8), tone(300, 1.2), tone(GOODBYE_HZ, 0.8)
SILENCE = b"\xff" * 800  # 0.1 s of μ-law silence
REPLY_FRAMES = GREETING_FRAMES = 95
"""The local Nova's answers (and its greeting) are 2 s tones: 100 frames, a few of which a clear may cut."""


@asynccontextmanager
async def local_nova(folder: Path) -> AsyncIterator[tuple[dict[str, str], Path]]:
    """The local Nova in its own process; yields the client environment and its log (read after it stops)."""
    log = folder / "nova.log"
    with log.open("wb") as errors:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "telephony.simulation.local_nova", "--ca-out", str(folder / "nova-ca.pem"),
            "--goodbye-hz", str(GOODBYE_HZ), "--reply-s", "2.0",
            cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=errors,
        )  # fmt: skip
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        endpoint = line.strip().partition("LOCAL_NOVA_ENDPOINT=")[2]
        assert endpoint, f"the local Nova did not start: {line!r} {log.read_text()[-2000:]}"
        yield {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": endpoint, "AWS_CA_BUNDLE": str(folder / "nova-ca.pem")}, log
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), 30)


@asynccontextmanager
async def local_twilio_api(folder: Path) -> AsyncIterator[tuple[str, Path]]:
    """Twilio's REST API in its own process (it must answer at once, however busy the callers are)."""
    log = folder / "twilio-api.jsonl"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "telephony.simulation.local_twilio_api", "--account", ACCOUNT, "--token", TOKEN,
        "--log", str(log), cwd=ROOT, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        url = line.strip().partition("LOCAL_TWILIO_API=")[2]
        assert url, f"the local Twilio API did not start: {line!r}"
        yield url, log
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), 30)


def api_requests(log: Path) -> list[ApiRequest]:
    if not log.exists():
        return []
    return [ApiRequest(**json.loads(line)) for line in log.read_text().splitlines()]


def server_environment(api_url: str, model: dict[str, str]) -> dict[str, str]:
    """What a user's `.env` (copied from .env.example and filled in) gives the server: nothing else."""
    inherited = {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "TMPDIR") if name in os.environ}
    return {
        **inherited,
        "PYTHONPATH": str(ROOT),
        "AWS_EC2_METADATA_DISABLED": "true",
        "NO_PROXY": "127.0.0.1,localhost",
        "PUBLIC_URL": PUBLIC,
        "TWILIO_ACCOUNT_SID": ACCOUNT,
        "TWILIO_AUTH_TOKEN": TOKEN,
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        "VOICEBOT_TWILIO_API_URL": api_url,
        **model,
    }


@dataclass
class CallResult:
    call_sid: str
    stream_url: str = ""
    busy: bool = False
    greeted: bool = False
    replied: bool = False
    clear_s: float | None = None
    """From the caller starting to talk over the bot to the bridge's ``clear``."""
    goodbye_frames: int = 0
    closed_by_bot: bool = False
    """The socket closed by the server within 30 s of the goodbye (after its hang-up over REST, as Twilio sees it)."""
    error: str = ""


async def say(call: SimulatedCaller, audio: bytes) -> None:
    """Speak at real time; the bot may hang up meanwhile (then the rest is not sent)."""
    try:
        await call.stream(audio)
    except websockets.ConnectionClosed:
        pass


class Clears:
    """The ``clear``s a caller has received, read incrementally (50 callers polling a growing log add up)."""

    def __init__(self, call: SimulatedCaller) -> None:
        self._call = call
        self._read = 0
        self.at: list[float] = []

    def __len__(self) -> int:
        received = self._call.received
        self.at += [item.at for item in received[self._read :] if item.message.get("event") == "clear"]
        self._read = len(received)
        return len(self.at)


async def listen(call: SimulatedCaller, done: Callable[[], bool], seconds: float) -> bool:
    """Keep the line open (a phone streams silence too) until ``done()`` or ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline and not call.closed.is_set():
        await say(call, SILENCE)
    return done()


async def one_call(public: str, index: int) -> CallResult:
    result = CallResult(f"CA{index:032x}")
    form = {"CallSid": result.call_sid, "From": "+15550001111", "To": "+15550002222", "AccountSid": ACCOUNT}
    try:
        target = await answer(public, form, TOKEN, PUBLIC)
    except Exception as error:  # noqa: BLE001 - "all lines are busy" answers TwiML without a stream
        result.busy, result.error = True, repr(error)
        return result
    result.stream_url = target.url
    signature = twilio_signature(TOKEN, target.url, {})
    url = target.url.replace("wss://voice.example.com", public.replace("http://", "ws://"))
    call = SimulatedCaller(
        url, call_sid=result.call_sid, parameters=target.parameters, headers={"X-Twilio-Signature": signature}
    )
    clears = Clears(call)
    async with call:
        await call.connect()
        result.greeted = await listen(call, lambda: len(call.heard) >= GREETING_FRAMES and not call.playing, 60)
        await say(call, QUESTION)
        before = len(call.heard)
        result.replied = await listen(call, lambda: len(call.heard) >= before + 20, 30)  # 0.4 s of the answer
        cleared = len(clears)
        talk_over = call.now()
        await say(call, TALK_OVER)
        if await listen(call, lambda: len(clears) > cleared, 15):
            result.clear_s = clears.at[cleared] - talk_over
        after = len(call.heard)
        await listen(call, lambda: len(call.heard) >= after + REPLY_FRAMES and not call.playing, 30)
        before_goodbye = len(call.heard)
        await say(call, GOODBYE)
        await listen(call, call.closed.is_set, 30)
        result.goodbye_frames = len(call.heard) - before_goodbye
        result.closed_by_bot = call.closed.is_set() and not call.hung_up
    return result


@dataclass
class Run:
    results: list[CallResult]
    metrics: str
    api: list[ApiRequest]
    log: str
    nova_log: str = ""


async def place_calls(public: str, count: int) -> tuple[list[CallResult], str]:
    """``count`` calls at once; then ``/metrics`` once every call has been counted."""
    results = await asyncio.gather(*(one_call(public, index) for index in range(count)))
    async with httpx.AsyncClient(base_url=public) as client:
        deadline = time.monotonic() + 20
        while True:  # figures are written as calls end
            text = (await client.get("/metrics")).text
            if metric(text, "voicebot_calls_total") >= count or time.monotonic() > deadline:
                return list(results), text


async def calls_on(tmp_path: Path, count: int, *flags: str) -> Run:
    """``count`` calls to `voicebot serve [flags]` with the goodbye-taking fake agent."""
    port = free_ports(4)
    public = f"http://127.0.0.1:{port}"
    async with local_twilio_api(tmp_path) as (api, api_log):
        environment = server_environment(api, {"VOICEBOT_AGENT": "tests.fakes.turns:goodbye_agent"})
        async with voicebot_serve(port, environment, tmp_path / "serve.log", *flags):
            results, text = await place_calls(public, count)
    return Run(results, text, api_requests(api_log), (tmp_path / "serve.log").read_text())


async def nova_calls_on(tmp_path: Path, count: int) -> Run:
    """``count`` calls to `voicebot serve` with the default agent, its real Nova client on the local Nova."""
    port = free_ports(4)
    public = f"http://127.0.0.1:{port}"
    async with local_twilio_api(tmp_path) as (api, api_log), local_nova(tmp_path) as (nova, nova_log):
        async with voicebot_serve(port, server_environment(api, nova), tmp_path / "serve.log"):
            results, text = await place_calls(public, count)
    return Run(results, text, api_requests(api_log), (tmp_path / "serve.log").read_text(), nova_log.read_text())


def check_every_call(run: Run, count: int, url: str) -> None:
    results = run.results
    failed = [r for r in results if r.busy or not (r.greeted and r.replied)]
    assert not failed, (len(failed), failed[:3])
    assert all(re.fullmatch(url, r.stream_url) for r in results), {r.stream_url for r in results}
    assert all(r.clear_s is not None for r in results), [r for r in results if r.clear_s is None][:5]
    assert all(r.goodbye_frames >= 50 for r in results), sorted(r.goodbye_frames for r in results)  # 1 s, in full
    hung_up = {
        request.path.rsplit("/", 1)[1].removesuffix(".json")
        for request in run.api
        if request.method == "POST" and "/Calls/" in request.path and request.value("Status") == "completed"
    }
    assert hung_up == {r.call_sid for r in results}  # every call hung up by the bot, over REST (Twilio then ends it)
    assert all(r.closed_by_bot for r in results), [r.call_sid for r in results if not r.closed_by_bot]
    assert metric(run.metrics, "voicebot_calls_refused_total") == 0
    assert metric(run.metrics, "voicebot_prewarm_total", outcome="hit") == count  # every pre-warmed agent used
    assert metric(run.metrics, "voicebot_prewarm_total") == count
    assert run.log.count("| agent started |") == count  # one agent, one model connection, per call
    assert "turned away" not in run.log and "pre-warm miss" not in run.log


async def test_fifty_calls_on_the_default_server(tmp_path: Path) -> None:
    run = await calls_on(tmp_path, CALLS)
    check_every_call(run, CALLS, r"wss://voice\.example\.com/media-stream")


@pytest.mark.skipif(nginx_binary() is None, reason="nginx is not installed: `apt-get install nginx-light`")
async def test_fifty_calls_on_two_workers(tmp_path: Path) -> None:
    run = await calls_on(tmp_path, CALLS, "--workers", "2")
    check_every_call(run, CALLS, r"wss://voice\.example\.com/w/[01]/media-stream")
    assert {r.stream_url for r in run.results} == {f"wss://voice.example.com/w/{n}/media-stream" for n in (0, 1)}


async def test_the_default_agent_through_the_real_nova_client(tmp_path: Path) -> None:
    run = await nova_calls_on(tmp_path, NOVA_CALLS)
    check_every_call(run, NOVA_CALLS, r"wss://voice\.example\.com/media-stream")
    streams = re.search(r"local nova stopping: (\d+) streams", run.nova_log)
    assert streams is not None and int(streams.group(1)) == NOVA_CALLS  # exactly one model stream per call

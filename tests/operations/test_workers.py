"""`voicebot serve --workers 2` as users run it: nginx started by serve itself in front (the default), or
behind Debian's nginx with the shipped deploy/nginx/voicebot.conf (``VOICEBOT_PROXY=external``).

Real processes end to end: the supervisor and its workers, nginx, simulated Twilio callers that sign
their webhooks and stream upgrades. Checked: everything goes to the one public port, every stream reaches
the worker that pre-warmed its agent (pre-warm hits only); a stream that lands on another worker starts
cold and still talks (a miss, logged and counted), and the worker that pre-warmed it stops that agent at
once; /metrics sums both workers; SIGTERM drains both workers together.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from telephony.operations.nginx import SHIPPED, shipped_config
from telephony.simulation.caller.simulated_caller import SimulatedCaller, StreamTarget, answer, twilio_signature
from telephony.simulation.local_app.nginx import local_nginx, nginx_binary

from ..ports import free_ports
from ..waiting import until
from .server_process import wait_until_healthy

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = "https://voice.example.com"
TOKEN = "test-auth-token-for-workers"
ACCOUNT = "AC" + "5" * 32

needs_nginx = pytest.mark.skipif(
    nginx_binary() is None,
    reason="nginx is not installed: `apt-get install nginx-light` (Debian's package; .ci/run installs it)",
)


def test_the_shipped_nginx_config_is_what_serve_renders() -> None:
    """One renderer for both (telephony.operations.nginx): the file a user copies cannot drift from it."""
    assert SHIPPED.read_text() == shipped_config(), "regenerate deploy/nginx/voicebot.conf from shipped_config()"


def metric(text: str, name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"^{name}(?:\{{(.*)\}})? (\S+)$", line)
        if match and all(f'{key}="{value}"' in (match.group(1) or "") for key, value in labels.items()):
            total += float(match.group(2))
    return total


@asynccontextmanager
async def workers(
    base: int, log: Path, agent: str = "tests.fakes.turns:turn_taking_agent", **env: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``voicebot serve --workers 2 --agent AGENT`` on ``base`` (its nginx, or ``VOICEBOT_PROXY=external``), logging
    to ``log``; ``env`` adds to or overrides the settings below."""
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "AWS_EC2_METADATA_DISABLED": "true",
        "PUBLIC_URL": PUBLIC,
        "TWILIO_ACCOUNT_SID": ACCOUNT,
        "TWILIO_AUTH_TOKEN": TOKEN,
        "VOICEBOT_GREETING": "Greet the caller.",
        "VOICEBOT_PORT": str(base),
        "VOICEBOT_LOG_LEVEL": "INFO",
        **env,
    }
    environment.pop("PROMETHEUS_MULTIPROC_DIR", None)
    with log.open("wb") as output:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "telephony.cli", "serve", "--workers", "2",
            "--agent", agent, cwd=ROOT, env=environment, stdout=output, stderr=output,
        )  # fmt: skip
    try:
        for port in (base + 1, base + 2, base):  # each worker's own port, then the public one
            await wait_until_healthy(process, f"http://127.0.0.1:{port}/health")
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def worker_of(target: StreamTarget) -> int:
    match = re.fullmatch(r"wss://voice\.example\.com/w/(\d)/media-stream", target.url)
    assert match, target.url
    return int(match.group(1))


async def webhook(server: str, call_sid: str) -> StreamTarget:
    form = {"CallSid": call_sid, "From": "+15550001111", "To": "+15550002222", "AccountSid": ACCOUNT}
    return await answer(server, form, TOKEN, PUBLIC)


def caller(connect_to: str, signed_url: str, call_sid: str, target: StreamTarget) -> SimulatedCaller:
    headers = {"X-Twilio-Signature": twilio_signature(TOKEN, signed_url, {})}
    return SimulatedCaller(connect_to, call_sid=call_sid, parameters=target.parameters, headers=headers)


async def talk(call: SimulatedCaller) -> int:
    """Listen to the greeting, then hang up; returns the frames of bot audio heard."""
    await call.connect()
    await call.silence(1.5)
    heard = len(call.media_payloads())
    await call.stop()
    return heard


async def settled_metrics(base: str, calls: int, timeout: float = 15.0) -> str:
    """``/metrics`` once every call has ended and been counted (a loaded machine writes them late)."""
    deadline = asyncio.get_running_loop().time() + timeout
    async with httpx.AsyncClient(base_url=base) as client:
        while True:
            text = (await client.get("/metrics")).text
            settled = metric(text, "voicebot_calls_total") == calls and metric(text, "voicebot_calls_active") == 0
            if settled or asyncio.get_running_loop().time() > deadline:
                return text
            await asyncio.sleep(0.2)


async def one_call(call: SimulatedCaller) -> int:
    async with call:
        return await talk(call)


@needs_nginx
async def test_serve_runs_nginx_itself_and_every_stream_reaches_its_worker(tmp_path: Path) -> None:
    """docs/operations.md's set-up (Scaling out): one public port (ngrok's), ``--workers 2``, no proxy of one's own."""
    base = free_ports(3)
    async with workers(base, tmp_path / "serve.log") as supervisor:
        public = f"http://127.0.0.1:{base}"
        sids = [f"CA{index:032x}" for index in range(6)]
        targets = await asyncio.gather(*(webhook(public, sid) for sid in sids))
        assert sorted(worker_of(t) for t in targets) == [0, 0, 0, 1, 1, 1]  # nginx spreads the webhooks
        calls = [
            caller(t.url.replace("wss://voice.example.com", f"ws://127.0.0.1:{base}"), t.url, sid, t)
            for t, sid in zip(targets, sids, strict=True)
        ]
        heard = await asyncio.gather(*(one_call(call) for call in calls))
        assert all(frames > 0 for frames in heard), heard

        # A stream that reaches the other worker (straight to its own port): cold, but it talks, and the
        # worker that pre-warmed the agent stops it at once instead of holding a model connection for its TTL.
        stray_sid = "CA" + "e" * 32
        target = await webhook(f"http://127.0.0.1:{base + 1}", stray_sid)
        assert worker_of(target) == 0
        stray = caller(f"ws://127.0.0.1:{base + 2}/w/0/media-stream", target.url, stray_sid, target)
        async with stray:
            assert await talk(stray) > 0
        log = tmp_path / "serve.log"
        moved = f"call={stray_sid} | pre-warmed agent discarded: its stream started on worker 1"
        await until(lambda: moved in log.read_text(), timeout=10)

        text = await settled_metrics(public, calls=7)  # figures are written as calls end
        assert metric(text, "voicebot_prewarm_total", outcome="hit") == 6
        assert metric(text, "voicebot_prewarm_total", outcome="miss") == 1
        assert metric(text, "voicebot_prewarm_total", outcome="discarded") == 0  # counted once, as the miss
        assert metric(text, "voicebot_calls_total") == 7  # both workers' calls, whichever answered the scrape
        assert metric(text, "voicebot_calls_active") == 0
        supervisor.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(supervisor.wait(), 30) == 0
    with socket.socket() as probe:  # nginx stopped with the server: nothing listens on the public port
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the callers' closed connections linger
        probe.bind(("127.0.0.1", base))


@needs_nginx
async def test_your_own_nginx_with_the_shipped_config_in_front(tmp_path: Path) -> None:
    """``VOICEBOT_PROXY=external``: the workers share VOICEBOT_PORT, the shipped config routes /w/<n>/."""
    base, front = free_ports(3), free_ports(1)
    async with (
        workers(base, tmp_path / "serve.log", VOICEBOT_PROXY="external"),
        local_nginx(tmp_path / "nginx", front, base),
    ):
        # Webhooks through nginx (any worker) and straight to each worker's own port (both surely used).
        servers = [f"http://127.0.0.1:{front}"] * 2 + [f"http://127.0.0.1:{base + 1 + n % 2}" for n in range(4)]
        sids = [f"CA{index:032x}" for index in range(len(servers))]
        targets = await asyncio.gather(*(webhook(server, sid) for server, sid in zip(servers, sids, strict=True)))
        assert [worker_of(t) for t in targets[2:]] == [0, 1, 0, 1]
        calls = [
            caller(t.url.replace("wss://voice.example.com", f"ws://127.0.0.1:{front}"), t.url, sid, t)
            for t, sid in zip(targets, sids, strict=True)
        ]
        heard = await asyncio.gather(*(one_call(call) for call in calls))
        assert all(frames > 0 for frames in heard), heard
        text = await settled_metrics(f"http://127.0.0.1:{front}", calls=6)
        assert metric(text, "voicebot_prewarm_total", outcome="hit") == 6
        assert metric(text, "voicebot_prewarm_total", outcome="miss") == 0


@needs_nginx
async def test_sigterm_drains_every_worker_together(tmp_path: Path) -> None:
    base = free_ports(3)
    env = {"VOICEBOT_SHUTDOWN_GRACE": "1", "VOICEBOT_WRAP_UP_SECONDS": "3"}
    async with workers(base, tmp_path / "serve.log", **env) as supervisor:
        targets = [await webhook(f"http://127.0.0.1:{base + 1 + n}", f"CA{n + 1:032x}") for n in range(2)]
        calls = [
            caller(f"ws://127.0.0.1:{base}/w/{n}/media-stream", t.url, f"CA{n + 1:032x}", t)
            for n, t in enumerate(targets)
        ]
        async with calls[0], calls[1]:
            for call in calls:
                await call.connect()
            talkers = [asyncio.create_task(call.silence(30)) for call in calls]
            await asyncio.sleep(1.0)
            supervisor.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.5)
            async with httpx.AsyncClient() as client:
                for port in (base + 1, base + 2, base):  # each worker, and whichever nginx reaches
                    assert (await client.get(f"http://127.0.0.1:{port}/health")).status_code == 503
            for call in calls:
                await call.wait_closed(15)  # ended by the server after the grace and the wrap-up
                assert not call.hung_up and len(call.media_payloads()) > 0
            for task in talkers:
                task.cancel()
        assert await asyncio.wait_for(supervisor.wait(), 30) == 0

"""Graceful shutdown of a real `voicebot serve` process: drain, wrap up, hang up, exit."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from telephony.operations.shutdown import drain

from ..bridge.test_bridge import frame_hz
from ..conftest import harness
from ..fakes.model import Hold, Say
from ..fakes.twilio import FakeTwilioCall
from ..ports import free_port
from .server_process import wait_until_healthy

ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def server_process(agent: str, **env: str) -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    port = free_port()
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "AWS_EC2_METADATA_DISABLED": "true",
        "VOICEBOT_GREETING": "",
        "VOICEBOT_PORT": str(port),
        **env,
    }
    for name in ("TWILIO_AUTH_TOKEN", "TWILIO_ACCOUNT_SID", "PUBLIC_URL"):
        environment.pop(name, None)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "telephony.cli", "serve", "--agent", agent, cwd=ROOT, env=environment
    )
    try:
        await wait_until_healthy(process, f"http://127.0.0.1:{port}/health")
        yield process, port
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_sigterm_drains_then_wraps_up_calls_and_exits_cleanly() -> None:
    env = {"VOICEBOT_SHUTDOWN_GRACE": "1", "VOICEBOT_WRAP_UP_SECONDS": "4"}
    async with server_process("tests.fakes.agents:polite_agent", **env) as (process, port):
        async with FakeTwilioCall(f"ws://127.0.0.1:{port}/media-stream") as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(20))
            await asyncio.sleep(0.6)
            signalled = time.monotonic()
            process.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.3)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                assert (await client.get("/health")).status_code == 503
                busy = await client.post("/twiml", data={"CallSid": "CA" + "7" * 32})
                assert "restarting" in busy.text and "<Hangup" in busy.text
            await call.wait_closed(15)
            closed_after = time.monotonic() - signalled
            talker.cancel()
        assert await asyncio.wait_for(process.wait(), 15) == 0
    tones = [round(frame_hz(frame.payload), -2) for frame in call.heard]
    assert 1000 in tones and 400 in tones  # the greeting, then the goodbye asked for at shutdown
    assert len(call.heard) == len(call.media_payloads())  # and the goodbye was heard in full
    assert call.close_code == 1000
    assert closed_after >= 1.0  # the call had its grace period before it was asked to wrap up


async def test_drain_ends_calls_that_do_not_say_goodbye() -> None:
    async with harness([Say("hi", 0.2, tone_hz=1000), Hold()], wrap_up_s=0.5) as h:
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(10))
            await asyncio.sleep(0.4)
            await drain(h.app, grace_s=0.3, wrap_up_s=0.5)
            await call.wait_closed(3)
            await asyncio.wait_for(talker, 3)  # the caller's audio stops at the close
            # Ended by the server, not by the caller running out: their 10 s of audio (500 frames) was cut short.
            assert len(call.said) < 500 and not call.hung_up, len(call.said)
        assert any("restarting" in text for text in h.model.texts)

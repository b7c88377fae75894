"""``voicebot serve`` as a child process: started as a user types it, waited for on ``/health``, stopped."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import httpx

VOICEBOT = Path(sys.executable).with_name("voicebot")
START_S = 90.0
"""A server process imports the SDKs first: on a loaded 2-core machine (two workers side by side) that has
taken over 30 s."""


async def healthy(client: httpx.AsyncClient, url: str) -> bool:
    try:
        return (await client.get(url)).status_code == 200
    except httpx.TransportError:
        return False


async def wait_until_healthy(
    process: asyncio.subprocess.Process | subprocess.Popen[bytes],
    url: str,
    timeout_s: float = START_S,
    log: Path | None = None,
) -> None:
    """Return once ``url`` answers 200; fail at once if the process exits, or after ``timeout_s``, showing the end
    of ``log`` (the server's output) if given.

    Not the start-up log: uvicorn says "Application startup complete" before it listens."""
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient() as client:
        while not await healthy(client, url):
            code = process.poll() if isinstance(process, subprocess.Popen) else process.returncode
            assert code is None, f"voicebot serve exited with {code}{said(log)}"
            assert time.monotonic() < deadline, f"{url} did not answer in {timeout_s:.0f} s{said(log)}"
            await asyncio.sleep(0.05)


def said(log: Path | None) -> str:
    """The end of the server's output, for a failure message."""
    return f"; it said:\n{log.read_text(errors='replace')[-3000:]}" if log is not None and log.exists() else ""


@asynccontextmanager
async def voicebot_serve(
    port: int,
    environment: dict[str, str],
    log: Path,
    *flags: str,
    log_mode: Literal["wb", "ab"] = "wb",
    stop: Literal["terminate", "kill"] = "terminate",
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``voicebot serve --host 127.0.0.1 --port PORT [flags]``, configured by the environment only, its output in
    ``log`` (``ab``: a restarted server adds to it); at the end it is terminated (and given a minute to drain) or
    killed, unless it has exited already."""
    with log.open(log_mode) as output:
        process = await asyncio.create_subprocess_exec(
            str(VOICEBOT), "serve", "--host", "127.0.0.1", "--port", str(port), *flags,
            cwd=log.parent, env=environment, stdout=output, stderr=output,
        )  # fmt: skip
    try:
        await wait_until_healthy(process, f"http://127.0.0.1:{port}/health", log=log)
        yield process
    finally:
        if process.returncode is None:
            if stop == "kill":
                process.kill()
                await process.wait()
            else:
                process.terminate()
                await asyncio.wait_for(process.wait(), 60)

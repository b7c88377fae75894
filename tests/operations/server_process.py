"""Waiting for a ``voicebot serve`` started as a child process to answer ``/health``."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import httpx

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

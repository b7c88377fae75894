"""Waiting in tests for something the server does in its own time (a session finishing, a call settling)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(condition: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> None:
    """Return once ``condition()`` is true; fail after ``timeout`` seconds, saying ``what`` never came."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)

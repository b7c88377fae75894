"""Fakes for Twilio's REST side."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field


@dataclass
class FakeCallControl:
    """Records REST hang-ups and redirects; can fail or stall to exercise the fallbacks."""

    error: Exception | None = None
    delay: float = 0.0
    calls: list[tuple[float, str]] = field(default_factory=list)
    redirects: list[tuple[float, str, str]] = field(default_factory=list)

    async def hang_up(self, call_sid: str) -> None:
        self.calls.append((time.monotonic(), call_sid))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error

    async def redirect(self, call_sid: str, twiml: str) -> None:
        self.redirects.append((time.monotonic(), call_sid, twiml))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error

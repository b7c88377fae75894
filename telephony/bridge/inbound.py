"""Caller input waiting for ``agent.send()``: bounded, so the WebSocket reader never waits on the agent.

``agent.send()`` blocks while the model reconnects (Nova restarts about every 7 minutes) and during
start-up. The reader puts audio here without awaiting; when the buffer is full the oldest audio is
dropped and counted, so the agent hears the most recent speech and the operator sees the loss.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import NamedTuple


class Inbound(NamedTuple):
    item: bytes | str
    """Caller PCM (consecutive chunks joined) or a text input."""
    received_at: float
    """When the oldest part of ``item`` arrived (monotonic), for the frame-to-send latency."""


class InboundBuffer:
    """FIFO of PCM chunks (bytes) and text inputs (str), bounded in bytes of audio."""

    def __init__(self, max_audio_bytes: int) -> None:
        self._items: deque[tuple[bytes | str, float]] = deque()
        self._audio_bytes = 0
        self._max_audio_bytes = max_audio_bytes
        self._ready = asyncio.Event()
        self.dropped_bytes = 0
        self.dropped_chunks = 0

    def put_audio(self, pcm: bytes, received_at: float | None = None) -> None:
        if not pcm:
            return
        self._items.append((pcm, time.monotonic() if received_at is None else received_at))
        self._audio_bytes += len(pcm)
        while self._audio_bytes > self._max_audio_bytes:
            self._drop_oldest_audio()
        self._ready.set()

    def put_text(self, text: str) -> None:
        """Text (a greeting instruction, a keypress) is never dropped: it is small and rare."""
        self._items.append((text, time.monotonic()))
        self._ready.set()

    async def get(self) -> Inbound:
        """Next text item, or all audio queued up to the next text item joined into one chunk."""
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        first, received_at = self._items.popleft()
        if isinstance(first, str):
            return Inbound(first, received_at)
        chunks = [first]
        while self._items and isinstance(self._items[0][0], bytes):
            chunks.append(self._items.popleft()[0])  # type: ignore[arg-type]
        audio = b"".join(chunks)
        self._audio_bytes -= len(audio)
        return Inbound(audio, received_at)

    @property
    def audio_bytes(self) -> int:
        return self._audio_bytes

    def _drop_oldest_audio(self) -> None:
        for index, (item, _) in enumerate(self._items):
            if isinstance(item, bytes):
                del self._items[index]
                self._audio_bytes -= len(item)
                self.dropped_bytes += len(item)
                self.dropped_chunks += 1
                return

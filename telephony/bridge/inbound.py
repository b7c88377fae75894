"""Caller input waiting for ``agent.send()``: bounded, so the WebSocket reader never waits on the agent.

``agent.send()`` blocks while the model reconnects (Nova restarts about every 7 minutes) and during
start-up. The reader puts audio here without awaiting; when the buffer is full the oldest audio is
dropped and counted, so the agent hears the most recent speech and the operator sees the loss.

While a connection is being replaced the buffer is told to ``hold()``: it then keeps up to a larger
bound (``VOICEBOT_RESTART_HOLD_MS``), since everything the caller says meanwhile must reach the new
connection, in order. After ``release()`` the bound comes back down only as the backlog drains, so
releasing never drops what was held. A backlog leaves in chunks of at most ``max_chunk_bytes``, so
the model never gets seconds of audio in one input event.
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

    def __init__(self, max_audio_bytes: int, max_chunk_bytes: int | None = None) -> None:
        self._items: deque[tuple[bytes | str, float]] = deque()
        self._audio_bytes = 0
        self._normal_max = max_audio_bytes
        self._max_audio_bytes = max_audio_bytes
        self._max_chunk_bytes = max_chunk_bytes
        self._holding = False
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
        """Next text item, or the audio queued up to the next text item joined into one chunk (at most
        ``max_chunk_bytes`` of it, the rest staying first in line)."""
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        first, received_at = self._items.popleft()
        if isinstance(first, str):
            return Inbound(first, received_at)
        limit = self._max_chunk_bytes
        chunks = [first]
        size = len(first)
        while self._items and isinstance(self._items[0][0], bytes) and (limit is None or size < limit):
            item, _ = self._items.popleft()
            chunks.append(item)  # type: ignore[arg-type]
            size += len(item)
        audio = b"".join(chunks)
        if limit is not None and len(audio) > limit:
            rest, audio = audio[limit:], audio[:limit]
            self._items.appendleft((rest, received_at))
        self._audio_bytes -= len(audio)
        if not self._holding:
            self._max_audio_bytes = max(self._normal_max, self._audio_bytes)
        return Inbound(audio, received_at)

    def hold(self, max_audio_bytes: int) -> None:
        """A connection is being replaced: keep up to ``max_audio_bytes`` (never less than the normal bound)."""
        self._holding = True
        self._max_audio_bytes = max(self._normal_max, max_audio_bytes, self._audio_bytes)

    def release(self) -> None:
        """The new connection takes input again: back to the normal bound once the backlog has drained."""
        self._holding = False
        self._max_audio_bytes = max(self._normal_max, self._audio_bytes)

    @property
    def holding(self) -> bool:
        return self._holding

    @property
    def audio_bytes(self) -> int:
        return self._audio_bytes

    @property
    def oldest_audio_at(self) -> float | None:
        """When the oldest queued audio arrived (monotonic), or None with no audio queued."""
        return next((at for item, at in self._items if isinstance(item, bytes)), None)

    def _drop_oldest_audio(self) -> None:
        for index, (item, _) in enumerate(self._items):
            if isinstance(item, bytes):
                del self._items[index]
                self._audio_bytes -= len(item)
                self.dropped_bytes += len(item)
                self.dropped_chunks += 1
                return

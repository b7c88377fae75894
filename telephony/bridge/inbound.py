"""Caller input waiting for ``agent.send()``: bounded, so the WebSocket reader never waits on the agent.

``agent.send()`` blocks while the model reconnects (Nova restarts about every 7 minutes) and during
start-up. The reader puts audio here without awaiting; when the buffer is full the oldest audio is
dropped and counted, so the agent hears the most recent speech and the operator sees the loss.

Audio leaves in chunks of at least a minimum size (``SendChunks``): each ``send()`` to a real model
client costs about the same whatever it carries (JSON, base64, event framing, a SigV4 signature per
event, an HTTP/2 write), so handing Nova 60 ms at a time instead of Twilio's 20 ms frames cuts that
cost threefold for 40 ms of hold on the oldest frame (the bridge sizes them by the caller's speech:
``speech_chunks.SpeechChunks``). Text never waits: it flushes the audio before it.

While a connection is being replaced the buffer is told to ``hold()``: it then keeps up to a larger
bound (``VOICEBOT_RESTART_HOLD_MS``), since everything the caller says meanwhile must reach the new
connection, in order. After ``release()`` the bound is the backlog plus the normal bound, and comes back down
only as the backlog drains, so neither what was held nor what arrives while it drains is dropped; the backlog
leaves in sends of at most ``SendChunks.most_bytes``.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple


class Inbound(NamedTuple):
    item: bytes | str
    """Caller audio (consecutive chunks joined) or a text input."""
    received_at: float
    """When the oldest part of ``item`` arrived (monotonic): how long the model waited for it."""
    newest_at: float = 0.0
    """When the newest part of ``item`` arrived: the bridge's own frame-to-send time starts here."""


@dataclass(frozen=True)
class SendChunks:
    """How much caller audio to hand the model per ``send()``: less while the bot is being heard.

    While the caller hears the bot, a barge-in is decided by the model from the caller's audio, so it
    gets small chunks then (``speaking_bytes``); otherwise larger ones (``quiet_bytes``).
    """

    quiet_bytes: int
    speaking_bytes: int
    bot_speaking: Callable[[], bool]
    most_bytes: int = 4000
    """Cap per send (500 ms of μ-law): a backlog after a reconnect goes out in several sends, since Nova
    refuses an ``audioInput`` of more than a second."""

    def __call__(self) -> int:
        return self.speaking_bytes if self.bot_speaking() else self.quiet_bytes


class InboundBuffer:
    """FIFO of PCM chunks (bytes) and text inputs (str), bounded in bytes of audio."""

    def __init__(self, max_audio_bytes: int) -> None:
        self._items: deque[tuple[bytes | str, float]] = deque()
        self._audio_bytes = 0
        self._texts = 0
        self._max_audio_bytes = max_audio_bytes
        self._normal_max = max_audio_bytes
        self._holding = False
        self._ready = asyncio.Event()
        self._wanted: int | Callable[[], int] | None = None
        """What the waiting ``get()`` asked for (None: nobody waits): a piece that does not make a send due
        leaves the sender asleep, so in long silence it wakes once per chunk, not once per 20 ms frame."""
        self.dropped_bytes = 0
        self.dropped_chunks = 0

    def put_audio(self, pcm: bytes, received_at: float | None = None) -> None:
        if not pcm:
            return
        self._items.append((pcm, time.monotonic() if received_at is None else received_at))
        self._audio_bytes += len(pcm)
        while self._audio_bytes > self._max_audio_bytes:
            self._drop_oldest_audio()
        if self._wanted is None or self._ready_to_give(self._wanted):
            self._ready.set()

    def put_text(self, text: str) -> None:
        """Text (a greeting instruction, a keypress) is never dropped: it is small and rare."""
        self._items.append((text, time.monotonic()))
        self._texts += 1
        self._ready.set()

    async def get(self, min_audio_bytes: int | Callable[[], int] = 0, most_bytes: int | None = None) -> Inbound:
        """Next text item, or the audio queued up to the next text item joined into one chunk.

        Audio waits until at least ``min_audio_bytes`` (a number, or a function asked at each new
        piece, so the size can follow the call) are queued, unless a text item is queued behind it.
        A chunk holds at most ``most_bytes`` (whole pieces; ``SendChunks.most_bytes`` when it is one).
        """
        if most_bytes is None:
            most_bytes = getattr(min_audio_bytes, "most_bytes", None)
        if not self._ready_to_give(min_audio_bytes):
            # Asked again only as pieces arrive (put_audio), never a second time for the same piece: the size can
            # follow the call (SpeechChunks answers 0 once, at the caller's onset).
            self._wanted = min_audio_bytes
            self._ready.clear()
            try:
                await self._ready.wait()
            finally:
                self._wanted = None
        first, received_at = self._items.popleft()
        if isinstance(first, str):
            self._texts -= 1
            return Inbound(first, received_at, received_at)
        chunks = [first]
        size = len(first)
        newest_at = received_at
        while self._items and isinstance(self._items[0][0], bytes):
            if most_bytes is not None and size + len(self._items[0][0]) > most_bytes:
                break
            chunk, newest_at = self._items.popleft()
            chunks.append(chunk)  # type: ignore[arg-type]
            size += len(chunk)
        audio = b"".join(chunks)
        self._audio_bytes -= len(audio)
        if not self._holding:  # a released backlog drains: the bound follows it down to the normal one
            self._max_audio_bytes = min(self._max_audio_bytes, self._audio_bytes + self._normal_max)
        return Inbound(audio, received_at, newest_at)

    def hold(self, max_audio_bytes: int) -> None:
        """A connection is being replaced: keep up to ``max_audio_bytes`` (never less than the normal bound)."""
        self._holding = True
        self._max_audio_bytes = max(self._normal_max, max_audio_bytes, self._audio_bytes)

    def release(self) -> None:
        """The new connection takes input again: back to the normal bound once the backlog has drained (until then
        the normal bound's worth of new audio may queue behind it, as behind an empty buffer)."""
        self._holding = False
        self._max_audio_bytes = self._audio_bytes + self._normal_max

    @property
    def holding(self) -> bool:
        return self._holding

    def _ready_to_give(self, min_audio_bytes: int | Callable[[], int]) -> bool:
        if not self._items:
            return False
        if self._texts:
            return True  # a text item flushes whatever audio is ahead of it, then goes itself
        wanted = min_audio_bytes() if callable(min_audio_bytes) else min_audio_bytes
        return self._audio_bytes >= wanted

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

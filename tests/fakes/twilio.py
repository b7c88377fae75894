"""A fake Twilio that speaks the exact Media Streams protocol over a real WebSocket.

It sends what Twilio sends (every scalar a string, ``connected`` then ``start`` then 20 ms
``media``), and plays what it receives the way Twilio's player does: frames play in real time
(scaled by ``speed``), a mark is echoed once the audio queued before it has played, and ``clear``
empties the buffer and echoes every pending mark at once.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets

FRAME_BYTES = 160
FRAME_SECONDS = 0.02
ULAW_SILENCE = b"\xff" * FRAME_BYTES


@dataclass
class Received:
    at: float
    message: dict[str, Any]


@dataclass
class Heard:
    """One 20 ms frame the caller's ear actually received, and when."""

    at: float
    payload: bytes


@dataclass
class FakeTwilioCall:
    url: str
    call_sid: str = "CA" + "1" * 32
    stream_sid: str = "MZ" + "2" * 32
    account_sid: str = "AC" + "3" * 32
    parameters: dict[str, str] | None = field(default_factory=lambda: {"From": "+15550001111", "To": "+15550002222"})
    speed: float = 1.0
    headers: dict[str, str] = field(default_factory=dict)

    received: list[Received] = field(default_factory=list)
    heard: list[Heard] = field(default_factory=list)
    echoed: list[str] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    close_code: int | None = None

    def __post_init__(self) -> None:
        self._ws: Any = None
        self._sequence = 0
        self._chunk = 0
        self._play_queue: deque[tuple[str, Any]] = deque()
        self._play_ready = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._t0 = time.monotonic()
        self._media_clock = 0

    # --- connection ------------------------------------------------------------------------------

    async def __aenter__(self) -> FakeTwilioCall:
        self._ws = await websockets.connect(self.url, additional_headers=self.headers, max_size=2**20)
        self._t0 = time.monotonic()
        self._tasks = [asyncio.create_task(self._receive_loop()), asyncio.create_task(self._player())]
        return self

    async def __aexit__(self, *_: Any) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._ws.close()

    def now(self) -> float:
        return time.monotonic() - self._t0

    # --- what Twilio sends -----------------------------------------------------------------------

    async def send(self, message: dict[str, Any] | str | bytes) -> None:
        await self._ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))

    def _next_sequence(self) -> str:
        self._sequence += 1
        return str(self._sequence)

    async def connect(self) -> None:
        """``connected`` then ``start``, as Twilio opens every stream."""
        await self.send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        start: dict[str, Any] = {
            "accountSid": self.account_sid,
            "streamSid": self.stream_sid,
            "callSid": self.call_sid,
            "tracks": ["inbound"],
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
        }
        if self.parameters is not None:
            start["customParameters"] = self.parameters
        await self.send(
            {"event": "start", "sequenceNumber": self._next_sequence(), "start": start, "streamSid": self.stream_sid}
        )

    async def media(self, payload: bytes) -> None:
        self._chunk += 1
        self._media_clock += 20
        await self.send(
            {
                "event": "media",
                "sequenceNumber": self._next_sequence(),
                "media": {
                    "track": "inbound",
                    "chunk": str(self._chunk),
                    "timestamp": str(100 + self._media_clock),
                    "payload": base64.b64encode(payload).decode(),
                },
                "streamSid": self.stream_sid,
            }
        )

    async def stream(self, ulaw: bytes, realtime: bool = True) -> None:
        """Caller audio in 20 ms frames, paced like a phone line (scaled by ``speed``)."""
        started = time.monotonic()
        for index, offset in enumerate(range(0, len(ulaw) - FRAME_BYTES + 1, FRAME_BYTES)):
            if self.closed.is_set():
                return
            await self.media(ulaw[offset : offset + FRAME_BYTES])
            if realtime:
                due = started + (index + 1) * FRAME_SECONDS / self.speed
                await asyncio.sleep(max(0.0, due - time.monotonic()))

    async def silence(self, seconds: float) -> None:
        await self.stream(ULAW_SILENCE * round(seconds / FRAME_SECONDS))

    async def dtmf(self, digit: str) -> None:
        await self.send(
            {
                "event": "dtmf",
                "streamSid": self.stream_sid,
                "sequenceNumber": self._next_sequence(),
                "dtmf": {"track": "inbound_track", "digit": digit},
            }
        )

    async def stop(self) -> None:
        """The caller hangs up: Twilio sends ``stop``."""
        await self.send(
            {
                "event": "stop",
                "sequenceNumber": self._next_sequence(),
                "streamSid": self.stream_sid,
                "stop": {"accountSid": self.account_sid, "callSid": self.call_sid},
            }
        )

    async def replay(self, path: Path, realtime: bool = True) -> None:
        """Send a recorded sequence of Twilio messages (JSON lines), paced by media timestamps."""
        started = time.monotonic()
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            message = json.loads(line)
            if realtime and message.get("event") == "media":
                due = started + (int(message["media"]["timestamp"]) - 100) / 1000 / self.speed
                await asyncio.sleep(max(0.0, due - time.monotonic()))
            await self.send(message)

    # --- what Twilio does with what it receives --------------------------------------------------

    async def _receive_loop(self) -> None:
        try:
            async for raw in self._ws:
                message = json.loads(raw)
                self.received.append(Received(self.now(), message))
                self._on_message(message)
        except websockets.ConnectionClosed:
            pass
        finally:
            self.close_code = self._ws.close_code
            self.closed.set()

    def _on_message(self, message: dict[str, Any]) -> None:
        event = message.get("event")
        if event == "media":
            self._play_queue.append(("frame", base64.b64decode(message["media"]["payload"])))
        elif event == "mark":
            self._play_queue.append(("mark", message["mark"]["name"]))
        elif event == "clear":
            # Every pending mark is echoed at once, ahead of anything queued after the clear.
            pending = [("mark", name) for kind, name in self._play_queue if kind == "mark"]
            self._play_queue.clear()
            self._play_queue.extend(pending)
        self._play_ready.set()

    async def _player(self) -> None:
        next_due = time.monotonic()
        while True:
            while not self._play_queue:
                self._play_ready.clear()
                await self._play_ready.wait()
                next_due = max(next_due, time.monotonic())
            kind, item = self._play_queue.popleft()
            if kind == "mark":
                await self._echo(item)
                continue
            self.heard.append(Heard(self.now(), item))
            next_due += FRAME_SECONDS / self.speed
            await asyncio.sleep(max(0.0, next_due - time.monotonic()))

    async def _echo(self, name: str) -> None:
        self.echoed.append(name)
        if self.closed.is_set():
            return
        try:
            await self.send(
                {
                    "event": "mark",
                    "sequenceNumber": self._next_sequence(),
                    "streamSid": self.stream_sid,
                    "mark": {"name": name},
                }
            )
        except websockets.ConnectionClosed:
            pass

    # --- views for assertions --------------------------------------------------------------------

    def events(self, kind: str) -> list[Received]:
        return [item for item in self.received if item.message.get("event") == kind]

    def media_payloads(self) -> list[bytes]:
        return [base64.b64decode(item.message["media"]["payload"]) for item in self.events("media")]

    async def wait_closed(self, timeout: float = 10.0) -> None:
        await asyncio.wait_for(self.closed.wait(), timeout)

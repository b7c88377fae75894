"""A simulated phone caller that talks to the bot exactly as Twilio does.

It sends what Twilio sends (every scalar a string, ``connected`` then ``start`` then 20 ms ``media``,
``dtmf``, ``stop``) and plays what it receives the way Twilio's player does: frames play in real time
(scaled by ``speed``), a mark is echoed once the audio queued before it has played, and ``clear`` empties
the buffer and echoes every pending mark at once. It records what it said and what it heard.

Used by ``voicebot replay``, and by the tests as their fake Twilio. :func:`answer` does the webhook half
of a call: POST ``/twiml`` (signed like Twilio), then follow the ``<Stream>`` it returns.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import websockets
from twilio.request_validator import RequestValidator

from telephony.bridge.observer import CallObserver
from telephony.codec import FRAME_BYTES, FRAME_SECONDS
from telephony.simulation.caller.line_conditions import ImpairedLine
from telephony.twilio.media_streams import frames_of
from telephony.twilio.security import public_url_for

ULAW_SILENCE = b"\xff" * FRAME_BYTES
FIRST_TIMESTAMP_MS = 100
"""Twilio's first media ``timestamp`` is ~100-160 ms, not 0."""


@dataclass
class Received:
    at: float
    message: dict[str, Any]


@dataclass
class Heard:
    """One 20 ms frame the caller's ear actually received (or its mouth sent), and when."""

    at: float
    payload: bytes
    timestamp: int | None = None
    """For a frame sent: its media ``timestamp`` (ms of stream time), which the bridge's recording also holds."""


# --- the webhook half --------------------------------------------------------------------------------


class AnswerError(RuntimeError):
    """``/twiml`` could not be reached or did not connect a stream (the message says what to check)."""


@dataclass(frozen=True)
class StreamTarget:
    """Where the TwiML told Twilio to stream the call, with its ``<Parameter>``s."""

    url: str
    parameters: dict[str, str]


def twilio_signature(auth_token: str, url: str, params: dict[str, str] | None = None) -> str:
    """``X-Twilio-Signature`` as Twilio computes it (the stream upgrade is signed with no params)."""
    return str(RequestValidator(auth_token).compute_signature(url, params or {}))


async def answer(
    server: str, form: dict[str, str], auth_token: str | None = None, public_url: str | None = None
) -> StreamTarget:
    """POST Twilio's voice webhook to ``server``/twiml and read the ``<Connect><Stream>`` it answers.

    With ``auth_token`` the request is signed over ``public_url``/twiml (what Twilio signs), else over
    the URL posted to.
    """
    post_url = server.rstrip("/") + "/twiml"
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if auth_token:
        signed_url = public_url_for(public_url, "/twiml") if public_url else post_url
        headers["X-Twilio-Signature"] = twilio_signature(auth_token, signed_url, form)
    body = urllib.parse.urlencode(form).encode()
    twiml = await asyncio.to_thread(_post, post_url, body, headers)
    return parse_stream(twiml)


def _post(url: str, body: bytes, headers: dict[str, str]) -> str:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return str(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        hint = (
            ": set TWILIO_AUTH_TOKEN and PUBLIC_URL to the server's values so requests are signed as it expects"
            if error.code == 403
            else ""
        )
        raise AnswerError(f"{url} answered HTTP {error.code}{hint}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise AnswerError(f"cannot reach {url} ({reason}): is `voicebot serve` running there?") from None


def parse_stream(twiml: str) -> StreamTarget:
    """The ``<Connect><Stream url>`` of a TwiML document and its ``<Parameter>``s."""
    try:
        root = ET.fromstring(twiml)
    except ET.ParseError as error:
        raise AnswerError(f"/twiml did not answer TwiML ({error})") from None
    stream = root.find("Connect/Stream")
    if stream is None or not stream.get("url"):
        raise AnswerError("/twiml answered without <Connect><Stream url=…>: it does not connect a media stream")
    parameters = {item.get("name", ""): item.get("value", "") for item in stream.findall("Parameter")}
    return StreamTarget(url=str(stream.get("url")), parameters=parameters)


# --- the media stream half ---------------------------------------------------------------------------


@dataclass
class StreamNumbers:
    """What numbers the messages of one stream: ``sequenceNumber``, the media ``chunk``, and stream time."""

    sequence: int = 0
    chunk: int = 0
    media_ms: int = 0
    """Stream time of the last frame sent, from the first frame (its ``timestamp`` is ``FIRST_TIMESTAMP_MS``)."""

    def next_sequence(self) -> str:
        self.sequence += 1
        return str(self.sequence)


class PlayQueue:
    """What Twilio's player has yet to play, in order: frames and marks. ``clear`` keeps only the marks."""

    def __init__(self) -> None:
        self._items: deque[tuple[str, Any]] = deque()
        self._ready = asyncio.Event()

    def add(self, kind: str, item: Any) -> None:
        self._items.append((kind, item))
        self._ready.set()

    def clear(self) -> None:
        """Every pending mark is echoed at once, ahead of anything queued after the clear."""
        pending = [("mark", name) for kind, name in self._items if kind == "mark"]
        self._items.clear()
        self._items.extend(pending)
        self._ready.set()

    def wake(self) -> None:
        self._ready.set()

    async def wait(self) -> bool:
        """Until something is queued; True when it had to wait (the player was idle)."""
        waited = False
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
            waited = True
        return waited

    def pop(self) -> tuple[str, Any]:
        return self._items.popleft()

    @property
    def has_audio(self) -> bool:
        return any(kind == "frame" for kind, _ in self._items)


@dataclass
class SimulatedCaller:
    """One Media Streams connection, as Twilio would open it, with a player that behaves like Twilio's."""

    url: str
    call_sid: str = "CA" + "1" * 32
    stream_sid: str = "MZ" + "2" * 32
    account_sid: str = "AC" + "3" * 32
    parameters: dict[str, str] | None = field(default_factory=lambda: {"From": "+15550001111", "To": "+15550002222"})
    speed: float = 1.0
    headers: dict[str, str] = field(default_factory=dict)
    tap: CallObserver | None = None
    """Sees every message as the bridge would (``twilio_received``: we sent it; ``twilio_sent``: we got it),
    so a :class:`~telephony.recording.recorder.CallRecorder` records the call from the caller's side."""
    line: ImpairedLine | None = None
    """A bad line between this caller and the bridge (noise, lost and late packets); None: a clean one."""

    received: list[Received] = field(default_factory=list)
    heard: list[Heard] = field(default_factory=list)
    said: list[Heard] = field(default_factory=list)
    """Caller frames sent, with when (the caller's own voice, for latency figures)."""
    echoed: list[str] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    hung_up: bool = False
    """True once this caller sent ``stop`` (the caller hung up, not the bot)."""

    def __post_init__(self) -> None:
        self._ws: Any = None
        self._numbers = StreamNumbers()
        self._queue = PlayQueue()
        self._tasks: list[asyncio.Task[None]] = []
        self.started = time.monotonic()

    # --- connection ------------------------------------------------------------------------------

    async def __aenter__(self) -> SimulatedCaller:
        self._ws = await websockets.connect(self.url, additional_headers=self.headers, max_size=2**20)
        self.started = time.monotonic()
        self._tasks = [asyncio.create_task(self._receive_loop()), asyncio.create_task(self._player())]
        return self

    async def __aexit__(self, *_: Any) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._ws.close()

    def now(self) -> float:
        return time.monotonic() - self.started

    # --- what Twilio sends -----------------------------------------------------------------------

    async def send(self, message: dict[str, Any] | str | bytes) -> None:
        """Send one message; once the line is gone, raise ``ConnectionClosed`` only after ``closed`` is set.

        websockets raises from ``send`` on a closed connection without yielding to the event loop, and possibly
        before our reader has seen the close. A caller that streams until ``closed`` (as a phone line does) would
        then spin without ever letting the reader run, and with it every other caller in the process: their
        sockets go unread (a close frame the bot sent waits in the kernel) until that caller gives up. The
        connection is lost by the time ``send`` raises, so the reader ends at once; waiting for it also keeps
        ``received`` complete whenever ``closed`` is set.
        """
        data = message if isinstance(message, (str, bytes)) else json.dumps(message)
        try:
            await self._ws.send(data)
        except websockets.ConnectionClosed:
            await self.closed.wait()
            raise
        if self.tap is not None and isinstance(data, str):
            self.tap.twilio_received(data)

    def _next_sequence(self) -> str:
        return self._numbers.next_sequence()

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

    async def media(self, payload: bytes, timestamp: int | None = None) -> None:
        """One frame of caller audio; its ``timestamp`` (ms of stream time) defaults to 20 ms after the last."""
        numbers = self._numbers
        numbers.media_ms = timestamp - FIRST_TIMESTAMP_MS if timestamp is not None else numbers.media_ms + 20
        self.said.append(Heard(self.now(), payload, FIRST_TIMESTAMP_MS + numbers.media_ms))
        if self.line is not None:
            sent = await self._through_line(payload)
            if sent is None:
                return  # lost on the way: Twilio never gets it, and the next frame's timestamp shows the gap
            payload = sent
        numbers.chunk += 1
        await self.send(
            {
                "event": "media",
                "sequenceNumber": self._next_sequence(),
                "media": {
                    "track": "inbound",
                    "chunk": str(numbers.chunk),
                    "timestamp": str(FIRST_TIMESTAMP_MS + numbers.media_ms),
                    "payload": base64.b64encode(payload).decode(),
                },
                "streamSid": self.stream_sid,
            }
        )

    async def _through_line(self, payload: bytes) -> bytes | None:
        """``payload`` as the bad line delivers it (None: lost), once it is due to arrive (jitter delays it)."""
        assert self.line is not None
        shaped = self.line.frame(payload)
        if shaped is None:
            return None
        now = time.monotonic()
        delay = self.line.release_at(self._numbers.media_ms / 1000 / self.speed, now) - now
        if delay > 0:
            await asyncio.sleep(delay)
        return shaped

    async def stream(self, ulaw: bytes, realtime: bool = True) -> None:
        """Caller audio in 20 ms frames, paced like a phone line (scaled by ``speed``); it stops where the line
        closes, whether that is seen before a frame or by the frame's send."""
        started = time.monotonic()
        for index, offset in enumerate(range(0, len(ulaw) - FRAME_BYTES + 1, FRAME_BYTES)):
            if self.closed.is_set():
                return
            try:
                await self.media(ulaw[offset : offset + FRAME_BYTES])
            except websockets.ConnectionClosed:
                return
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
        self.hung_up = True
        await self.send(
            {
                "event": "stop",
                "sequenceNumber": self._next_sequence(),
                "streamSid": self.stream_sid,
                "stop": {"accountSid": self.account_sid, "callSid": self.call_sid},
            }
        )

    async def replay_messages(self, messages: Iterable[dict[str, Any]], realtime: bool = True) -> None:
        """Send Twilio messages verbatim, media paced by their ``timestamp``."""
        started = time.monotonic()
        for message in messages:
            if realtime and message.get("event") == "media":
                due = started + (int(message["media"]["timestamp"]) - FIRST_TIMESTAMP_MS) / 1000 / self.speed
                await asyncio.sleep(max(0.0, due - time.monotonic()))
            await self.send(message)

    # --- what Twilio does with what it receives --------------------------------------------------

    async def _receive_loop(self) -> None:
        try:
            async for raw in self._ws:
                if self.tap is not None and isinstance(raw, str):
                    self.tap.twilio_sent(raw)
                message = json.loads(raw)
                self.received.append(Received(self.now(), message))
                self._on_message(message)
        except websockets.ConnectionClosed:
            pass
        finally:
            self.closed.set()

    def _on_message(self, message: dict[str, Any]) -> None:
        event = message.get("event")
        if event == "media":  # one message may carry several frames: Twilio plays each in turn
            for frame in frames_of(message):
                self._queue.add("frame", frame)
        elif event == "mark":
            self._queue.add("mark", message["mark"]["name"])
        elif event == "clear":
            self._queue.clear()
        else:
            self._queue.wake()

    async def _player(self) -> None:
        next_due = time.monotonic()
        while True:
            if await self._queue.wait():
                next_due = max(next_due, time.monotonic())
            kind, item = self._queue.pop()
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

    # --- views -----------------------------------------------------------------------------------

    @property
    def close_code(self) -> int | None:
        """The WebSocket close code once the stream has closed (None before)."""
        return int(self._ws.close_code) if self.closed.is_set() and self._ws.close_code is not None else None

    @property
    def last_timestamp(self) -> int:
        """The media ``timestamp`` of the last frame sent (ms of stream time)."""
        return FIRST_TIMESTAMP_MS + self._numbers.media_ms

    @property
    def playing(self) -> bool:
        """Audio is queued in the player (the bot is being heard)."""
        return self._queue.has_audio

    def events(self, kind: str) -> list[Received]:
        return [item for item in self.received if item.message.get("event") == kind]

    def media_payloads(self) -> list[bytes]:
        """The bot's audio as received, frame by frame (160 bytes each, however the messages joined them)."""
        return [frame for item in self.events("media") for frame in frames_of(item.message)]

    async def wait_closed(self, timeout: float = 10.0) -> None:
        await asyncio.wait_for(self.closed.wait(), timeout)

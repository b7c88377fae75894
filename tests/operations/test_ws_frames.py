"""The server's own frame cutting hands the app exactly what uvicorn's protocol hands it, and answers the same.

Each stream below goes to a real server running uvicorn's stock sans-I/O protocol, a frame per read, and to one
running ``QueuedReadsProtocol``, split at random points; the app's receive events (or, for an app that takes text
directly, those and the texts handed to it, in the order they came) and every byte the server sends back must
match. (A frame per read, because uvicorn's own protocol drops the good messages that share a read with
a bad frame: with the bad frame alone in its read, it hands over everything before it, as the cutting does.)
"""

from __future__ import annotations

import asyncio
import base64
import os
import random
import struct
from typing import Any

import pytest
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.speedups import apply_mask  # type: ignore[attr-defined]

from telephony.operations.ws_frames import FrameCutter, frame_length
from telephony.operations.ws_reading import QueuedReadsProtocol, direct_text
from telephony.simulation.local_app.loopback import serve_app

MAX_SIZE = 2**16 + 100

TEXT, BINARY, CONT, CLOSE, PING = 0x1, 0x2, 0x0, 0x8, 0x9


def frame(opcode: int, payload: bytes, *, fin: bool = True, masked: bool = True, rsv: int = 0) -> bytes:
    """A client frame as RFC 6455 lays it out (masked with a random key unless told otherwise)."""
    head = bytes([(0x80 if fin else 0) | rsv << 4 | opcode])
    size, mask_bit = len(payload), 0x80 if masked else 0
    if size < 126:
        head += bytes([mask_bit | size])
    elif size < 2**16:
        head += bytes([mask_bit | 126]) + struct.pack("!H", size)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", size)
    if not masked:
        return head + payload
    key = os.urandom(4)
    return head + key + apply_mask(payload, key)


def text(body: str) -> bytes:
    return frame(TEXT, body.encode())


MEDIA = '{"event":"media","media":{"track":"inbound","payload":"' + "A" * 216 + '"}}'

STREAMS = {
    "plain texts of every length form": [
        text(body) for body in ["", "x", "y" * 125, "z" * 126, MEDIA, "é" * 40, "w" * 65535, "v" * 65536]
    ],
    "a ping among media": [text(MEDIA), frame(PING, b"keepalive"), text(MEDIA)],
    "a fragmented message around a ping": [
        text(MEDIA),
        frame(TEXT, b"part one, ", fin=False),
        frame(PING, b"p"),
        frame(CONT, b"part two, ", fin=False),
        frame(CONT, b"the end", fin=True),
        text(MEDIA),
    ],
    "a plain text inside a fragmented message": [frame(TEXT, b"begun", fin=False), text(MEDIA), text(MEDIA)],
    "binary": [text(MEDIA), frame(BINARY, b"\x00\x01\x02"), text(MEDIA)],
    "an unmasked client frame": [text(MEDIA), frame(TEXT, b"bare", masked=False), text(MEDIA)],
    "an extension bit nobody agreed": [text(MEDIA), frame(TEXT, b"squeezed", rsv=4), text(MEDIA)],
    "invalid UTF-8": [text(MEDIA), frame(TEXT, b"\xff\xfe bad"), text(MEDIA)],
    "a frame over the size limit": [text(MEDIA), frame(TEXT, b"o" * (MAX_SIZE + 1))[:20]],  # its head is enough
    "the client closes": [text(MEDIA), frame(CLOSE, struct.pack("!H", 1000) + b"bye"), text(MEDIA)],
}


def _app(received: list[Any], *, direct: bool = False) -> Any:
    """Records what it receives; ``direct``: text messages also as the server hands them over (``direct_text``)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": message["type"] + ".complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        assert (await receive())["type"] == "websocket.connect"
        await send({"type": "websocket.accept"})
        if direct:
            set_taker = direct_text(scope)
            assert set_taker is not None
            set_taker(lambda text: received.append({"type": "websocket.receive", "text": text}))
        while True:
            message = await receive()
            received.append({key: value for key, value in message.items() if key != "reason"})
            if message["type"] == "websocket.disconnect":
                return

    return app


async def _exchange(
    protocol: type[WebSocketsSansIOProtocol], frames: list[bytes], seed: int | None, *, direct: bool = False
) -> tuple[list[Any], bytes]:
    """Send ``frames`` after a handshake, in random pieces (a frame per read for no ``seed``); what the app
    received and what the server answered."""
    received: list[Any] = []
    async with serve_app(_app(received, direct=direct), ws=protocol, ws_max_size=MAX_SIZE) as host:
        address, port = host.split(":")
        reader, writer = await asyncio.open_connection(address, int(port))
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            f"GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        assert b" 101 " in await reader.readuntil(b"\r\n\r\n")
        pieces, rng, at, stream = list(frames), random.Random(seed), 0, b"".join(frames)
        if seed is not None:
            pieces = []
            while at < len(stream):
                step = rng.choice([1, 2, 3, 7, 50, 400, 5000, 100000])
                pieces.append(stream[at : at + step])
                at += step
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            if seed is None or rng.random() < 0.3:
                await asyncio.sleep(0.005)  # a separate read on the server
        await asyncio.sleep(0.2)
        writer.close()
        answered = await asyncio.wait_for(reader.read(), 5)
        await asyncio.sleep(0.05)
    return received, answered


@pytest.mark.parametrize("direct", [False, True], ids=["through receive", "taken directly"])
@pytest.mark.parametrize("name", list(STREAMS))
async def test_the_app_and_the_client_see_what_uvicorns_own_protocol_gives_them(name: str, direct: bool) -> None:
    stock = await _exchange(WebSocketsSansIOProtocol, STREAMS[name], None)
    for seed in range(3):
        assert await _exchange(QueuedReadsProtocol, STREAMS[name], seed, direct=direct) == stock, f"seed {seed}"
    assert stock[0], "the app got nothing: the stream tests nothing"


def test_frames_are_cut_whole_however_the_bytes_arrive() -> None:
    bodies = [b"", b"a" * 125, b"b" * 126, b"c" * 70000]
    stream = b"".join(frame(TEXT, body) for body in bodies) + frame(PING, b"p")
    for step in (1, 2, 5, 13, 1000, len(stream)):
        cutter = FrameCutter(max_payload=10**6)
        cuts = [cut for at in range(0, len(stream), step) for cut in cutter.feed(stream[at : at + step])]
        assert [cut.text for cut in cuts] == [*bodies, None]  # the ping is websockets' to parse
        assert b"".join(cut.raw for cut in cuts) == stream and cutter.rest() == b""


def test_a_frame_over_the_limit_stops_the_cutting_at_its_first_byte() -> None:
    small, big = text("ok"), frame(TEXT, b"x" * 200)
    cutter = FrameCutter(max_payload=100)
    assert [cut.text for cut in cutter.feed(small + big[:3])] == [b"ok"]
    assert not cutter.oversized  # its length is not in yet
    assert cutter.feed(big[3:4]) == [] and cutter.oversized and cutter.rest() == big[:4]


def test_a_header_still_arriving_has_no_length_yet() -> None:
    header = frame(TEXT, b"y" * 300)
    assert frame_length(header[:1], 0) is None and frame_length(header[:3], 0) is None
    assert frame_length(header[:4], 0) == len(header)

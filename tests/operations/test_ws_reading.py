"""The WebSocket protocol ``voicebot serve`` runs: uvicorn's, reading on until a few messages wait for the app."""

from __future__ import annotations

import asyncio
import inspect
import logging

import pytest
import websockets
from fastapi import FastAPI, WebSocket
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from telephony.operations.ws_reading import PAUSE_AT, QueuedReadsProtocol, direct_text
from telephony.simulation.local_app.loopback import serve_app


def test_uvicorn_still_pauses_through_read_paused_and_reads_on_once_the_queue_is_empty() -> None:
    """If uvicorn changes how it pauses, this fails: the subclass relies on exactly these two lines."""
    handing = inspect.getsource(WebSocketsSansIOProtocol.send_receive_event_to_app)
    assert "if not self.read_paused:" in handing and "self.transport.pause_reading()" in handing
    receiving = inspect.getsource(WebSocketsSansIOProtocol.receive)
    assert "if self.read_paused and self.queue.empty():" in receiving and "resume_reading()" in receiving


async def test_reads_pause_only_once_the_app_is_behind_and_every_message_arrives_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paused_after: list[bool] = []
    handed = QueuedReadsProtocol.send_receive_event_to_app

    def recording(self: QueuedReadsProtocol) -> None:
        handed(self)
        paused_after.append(self.read_paused)

    monkeypatch.setattr(QueuedReadsProtocol, "send_receive_event_to_app", recording)
    go = asyncio.Event()
    got: list[str] = []
    app = FastAPI()

    @app.websocket("/ws")
    async def endpoint(socket: WebSocket) -> None:
        await socket.accept()
        await go.wait()  # the app is busy: messages queue up
        while (text := await socket.receive_text()) != "end":
            got.append(text)
        await socket.close()

    sent = [f"frame {n}" for n in range(3 * PAUSE_AT)]
    async with serve_app(app) as host, websockets.connect(f"ws://{host}/ws") as client:
        for text in sent[: PAUSE_AT - 1]:
            await client.send(text)
        await asyncio.sleep(0.2)
        assert paused_after == [False] * (PAUSE_AT - 1)  # uvicorn's own would have paused after the first
        for text in sent[PAUSE_AT - 1 :]:
            await client.send(text)
        await asyncio.sleep(0.2)
        assert paused_after[PAUSE_AT - 1] is True  # the app is behind: the socket is no longer read
        go.set()
        await client.send("end")
        await client.wait_closed()
    assert got == sent
    assert paused_after[-1] is False  # read on once the app had taken them all


async def test_text_taken_directly_comes_after_what_waited_in_the_queue_and_only_once() -> None:
    """(Without compression, as Twilio sends: compressed frames go to websockets' parser, and through the queue.)"""
    go, done = asyncio.Event(), asyncio.Event()
    got: list[tuple[str, str]] = []
    app = FastAPI()

    def keep(text: str, way: str) -> None:
        got.append((text, way))
        if text == "end":
            done.set()

    @app.websocket("/ws")
    async def endpoint(socket: WebSocket) -> None:
        await socket.accept()
        await go.wait()  # the first messages queue up meanwhile
        set_taker = direct_text(socket.scope)
        assert set_taker is not None
        set_taker(lambda text: keep(text, "direct"))

        async def read() -> None:
            while True:
                keep(await socket.receive_text(), "queue")

        reader = asyncio.create_task(read())
        await done.wait()
        set_taker(None)
        reader.cancel()
        await socket.close()

    async with serve_app(app) as host, websockets.connect(f"ws://{host}/ws", compression=None) as client:
        for n in range(5):
            await client.send(f"early {n}")
        await asyncio.sleep(0.1)
        go.set()
        await asyncio.sleep(0.1)  # the queue has drained: from here on, text is handed over as it is read
        for n in range(5):
            await client.send(f"late {n}")
        await client.send("end")
        await client.wait_closed()
    assert [text for text, _ in got] == [f"early {n}" for n in range(5)] + [f"late {n}" for n in range(5)] + ["end"]
    assert [way for _, way in got] == ["queue"] * 5 + ["direct"] * 6


async def test_a_taker_that_raises_is_logged_and_messages_go_through_receive_again() -> None:
    got: list[str] = []
    handler = _Kept()
    app = FastAPI()

    def broken(text: str) -> None:
        raise RuntimeError(f"cannot take {text}")

    @app.websocket("/ws")
    async def endpoint(socket: WebSocket) -> None:
        await socket.accept()
        set_taker = direct_text(socket.scope)
        assert set_taker is not None
        set_taker(broken)
        while (text := await socket.receive_text()) != "end":
            got.append(text)
        await socket.close()

    async with serve_app(app) as host, websockets.connect(f"ws://{host}/ws", compression=None) as client:
        logging.getLogger("uvicorn.error").addHandler(handler)  # the server's own error log (once it set it up)
        try:
            await client.send("lost in the taker")
            await asyncio.sleep(0.05)
            await client.send("kept")
            await client.send("end")
            await client.wait_closed()
        finally:
            logging.getLogger("uvicorn.error").removeHandler(handler)
    assert got == ["kept"]  # the connection reads on; the message the taker broke on is not handed over twice
    assert any("text taker" in record.getMessage() and record.exc_info for record in handler.records)


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_server_that_is_not_ours_offers_no_direct_text() -> None:
    assert direct_text({"type": "websocket", "extensions": {"websocket.http.response": {}}}) is None
    assert direct_text({"type": "websocket"}) is None

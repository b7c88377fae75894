"""The WebSocket protocol ``voicebot serve`` runs: uvicorn's, reading on until a few messages wait for the app."""

from __future__ import annotations

import asyncio
import inspect

import pytest
import websockets
from fastapi import FastAPI, WebSocket
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from telephony.operations.ws_reading import PAUSE_AT, QueuedReadsProtocol
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

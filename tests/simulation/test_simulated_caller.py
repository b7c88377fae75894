"""The simulated caller on a line that drops: a caller that streams until ``closed`` must not spin."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import websockets
from websockets.asyncio.server import ServerConnection, serve

from telephony.simulation.caller.simulated_caller import ULAW_SILENCE, SimulatedCaller


async def _hold(connection: ServerConnection) -> None:
    await connection.wait_closed()


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with serve(_hold, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/media-stream"


async def test_a_send_on_a_lost_line_raises_only_once_closed_is_set(url: str) -> None:
    """The race of 50 callers in one process: websockets' send fails without yielding once the connection is
    lost, and here our reader has not run yet. Streaming until ``closed`` would spin and starve the process."""
    async with SimulatedCaller(url) as call:
        await call.connect()
        call._ws.transport.abort()  # the line drops: connection_lost runs on the loop's next turn
        await asyncio.sleep(0)  # ... ahead of us; the reader it wakes runs after us
        with pytest.raises(websockets.ConnectionClosed):
            await call.media(ULAW_SILENCE)
        assert call.closed.is_set()

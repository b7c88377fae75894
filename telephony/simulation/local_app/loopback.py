"""The app on a loopback port inside the current event loop: for the demo, offline replays and tests."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from telephony.operations.ws_reading import QueuedReadsProtocol


@asynccontextmanager
async def serve_app(app: Any, **options: Any) -> AsyncIterator[str]:
    """Run ``app`` with uvicorn on an ephemeral loopback port in this event loop; yields ``host:port``.

    ``options`` go to ``uvicorn.Config`` over the defaults (``log_level="info", log_config=None`` to see
    request lines through this process's logging, as ``voicebot serve`` does).
    """
    defaults: dict[str, Any] = {
        "log_level": "warning",
        "ws": QueuedReadsProtocol,  # as voicebot serve runs
        "ws_max_size": 2**20,
        "lifespan": "on",
    }
    config = uvicorn.Config(app, host="127.0.0.1", port=0, **{**defaults, **options})
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("the local server stopped before it started")
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


def free_port_run(count: int) -> int:
    """A free loopback port with the ``count - 1`` ports above it free too (``serve --workers``'s own ports)."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = int(probe.getsockname()[1])
        if base + count >= 65535:
            continue
        try:
            for port in range(base, base + count):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError("no run of free ports")

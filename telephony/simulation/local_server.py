"""The app on a loopback port inside the current event loop: for the demo, offline replays and tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn


@asynccontextmanager
async def serve_app(app: Any, **options: Any) -> AsyncIterator[str]:
    """Run ``app`` with uvicorn on an ephemeral loopback port in this event loop; yields ``host:port``.

    ``options`` go to ``uvicorn.Config`` over the defaults (``log_level="info", log_config=None`` to see
    request lines through this process's logging, as ``voicebot serve`` does).
    """
    defaults: dict[str, Any] = {"log_level": "warning", "ws_max_size": 2**20, "lifespan": "on"}
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

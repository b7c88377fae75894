"""awscrt's HTTP/2 response stream without a connection: :class:`CrtBodyStream`.

A response reader sees a stream through its body state (the deques, their lock, the two completion futures),
the callbacks awscrt's I/O thread runs on it, and ``get_next_response_chunk``. This class carries that state
and borrows those methods from awscrt itself, so a reader is tested and timed against awscrt's own code.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from concurrent.futures import Future
from typing import Any

from awscrt.aio.http import AIOHttpClientStreamUnified

__all__ = ["CrtBodyStream"]

_AWSCRT = AIOHttpClientStreamUnified


class CrtBodyStream:
    """The body state of awscrt's stream, with awscrt's own ``_on_body``, completion callbacks and chunk read."""

    _on_body = _AWSCRT._on_body
    _on_complete = _AWSCRT._on_complete
    _on_h2_remote_end_stream = _AWSCRT._on_h2_remote_end_stream
    _resolve_pending_chunk_futures = _AWSCRT._resolve_pending_chunk_futures
    get_next_response_chunk = _AWSCRT.get_next_response_chunk

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop
        self._deque_lock = threading.Lock()
        self._chunk_futures: collections.deque[Any] = collections.deque()
        self._received_chunks: collections.deque[bytes] = collections.deque()
        self._completion_future: Future[int] = Future()
        self._remote_completion_future: Future[None] = Future()
        self._status_code = 200

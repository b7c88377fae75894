"""Nova's request body written one event at a time, without a wait between threads for each: :class:`WriteBehind`.

awscrt's HTTP/2 stream writes its request body in a task that, for every chunk the SDK hands it (one event
each, about ten a second on every call), builds a ``concurrent.futures.Future``, queues the write on the CRT's
I/O thread and waits there until that thread says the write is done: the I/O thread sets the future, the
future's callbacks wake the event loop through its self-pipe, and the task runs again, only to wait for the
next event. Nothing reads that completion but the next write.

:class:`WriteBehind` stands in for the stream's ``_write_data``. It still keeps one write at a time on the I/O
thread, as awscrt does (HTTP/2 writes queue in order, and the I/O thread sees exactly the same sequence), but it
waits for a write's completion only when the next write is ready, or at the end of the body. By then the write
is almost always done, so the completion wakes nobody: the I/O thread only sets a flag. A failed write fails the
next one (or the end), as it would have failed its own.

Upstream: awscrt's ``_write_data`` could take a completion callback instead of a future per write.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from io import BytesIO
from typing import Any

import _awscrt  # type: ignore[import-not-found]  # awscrt's native module, as awscrt.aio.http imports it
import awscrt.exceptions
from awscrt.io import InputStream

__all__ = ["WriteBehind", "writes_directly"]

NativeWrite = Callable[[Any, Any, bool, Callable[[int], None]], None]


class WriteBehind:
    """The ``_write_data`` of one awscrt HTTP/2 stream: one write at a time, its completion awaited lazily."""

    def __init__(
        self,
        stream: Any,
        loop: asyncio.AbstractEventLoop,
        *,
        write_data: NativeWrite = _awscrt.http2_client_stream_write_data,
        on_io_thread: Callable[[], None] | None = None,
    ) -> None:
        self._stream = stream
        self._loop = loop
        self._write_data = write_data
        """awscrt's native write (queue on the I/O thread, call back when done); tests pass their own."""
        self._on_io_thread = on_io_thread
        """Run at the first completion, on the I/O thread (``crt_loop.settle_io_thread`` on a shared loop)."""
        self._lock = threading.Lock()
        self._busy = False
        """A write is queued on the I/O thread and not yet complete."""
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None

    @property
    def busy(self) -> bool:
        """Whether a write is still on the I/O thread."""
        return self._busy

    async def write(self, body: BytesIO | None, end_stream: bool) -> None:
        """Queue ``body`` (None: no data) once the previous write is done; ``end_stream`` waits for its own too."""
        await self._idle()
        self._raise_failure()
        body_stream = None if body is None else InputStream.wrap(body)
        self._busy = True  # no completion can race this: nothing is in flight
        try:
            self._write_data(self._stream, body_stream, end_stream, self._on_complete)
        except BaseException:
            self._busy = False
            raise
        if end_stream:
            await self._idle()
            self._raise_failure()

    async def _idle(self) -> None:
        """Until no write is on the I/O thread."""
        with self._lock:
            if not self._busy:
                return
            waiter = self._waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            with self._lock:
                self._waiter = None

    def _on_complete(self, error_code: int) -> None:
        """The write is done (awscrt's I/O thread, holding the GIL): wake the writer only if it waits."""
        if self._on_io_thread is not None:
            self._on_io_thread()
            self._on_io_thread = None
        with self._lock:
            self._busy = False
            if error_code and self._error is None:
                self._error = awscrt.exceptions.from_code(error_code)
            waiter = self._waiter
        if waiter is None:
            return
        try:
            self._loop.call_soon_threadsafe(_wake, waiter)
        except RuntimeError:  # the loop is closed: nobody is left to wake
            pass

    def _raise_failure(self) -> None:
        if self._error is not None:
            raise self._error


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def writes_directly(stream: Any) -> bool:
    """Whether ``stream`` is an awscrt HTTP/2 stream whose body is written through its own ``_write_data``."""
    return getattr(stream, "_request_body_generator", None) is not None and callable(
        getattr(type(stream), "_write_data", None)
    )

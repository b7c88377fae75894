"""Nova's response body read without a task and a wait per chunk: :class:`BodyResponse`.

awscrt's HTTP/2 stream hands each body chunk, from its I/O thread, to the first ``concurrent.futures.Future``
a reader has queued on the stream (``_chunk_futures``), or keeps it (``_received_chunks``) when none waits.
``get_next_response_chunk`` awaits that future through ``asyncio.wrap_future``, and cancelling the wait cancels
the future, so the chunk handed to it later is lost. strands therefore reads every chunk in a task of its own
and waits for it with ``asyncio.wait``: a task, a wait, a thread-safe future with its lock and condition, and a
chain of callbacks, for each of the tens of chunks a second of every call.

Here a :class:`BodySink` stands in that queue instead of a future. It keeps what it is handed, whether or not
a read still waits, and wakes the reader's loop; a cancelled read leaves it queued, and the next read finds
its chunk. Order holds: a chunk goes to the stream's own deque only while the sink is not queued, the sink is
queued again only once that deque is empty, and the stream's one I/O thread hands chunks over one at a time,
so what the sink holds always comes first.

Upstream: ``get_next_response_chunk`` could keep a chunk whose reader was cancelled (the stream's own deque
is the place for it); strands' per-chunk task would then be unnecessary.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncGenerator, Callable
from typing import Any

from smithy_http.aio.crt import AWSCRTHTTPResponse

__all__ = ["STREAM_ATTRIBUTES", "BodyResponse", "BodySink", "reads_directly"]

STREAM_ATTRIBUTES = frozenset(
    {"_deque_lock", "_chunk_futures", "_received_chunks", "_completion_future", "_remote_completion_future"}
)
"""What :class:`BodyResponse` uses of awscrt's ``AIOHttpClientStreamUnified`` (a test checks it still has them)."""


class BodySink:
    """Queued on the stream in place of a future: holds the chunks it is handed and wakes the reader's loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_io_thread: Callable[[], None] | None = None) -> None:
        self._loop = loop
        self._on_io_thread = on_io_thread
        """Run first in the first hand-over, on the I/O thread (``crt_loop.settle_io_thread`` on a shared loop)."""
        self.chunks: collections.deque[bytes] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None

    def set_result(self, chunk: bytes) -> None:
        """A chunk (``b""`` at the end of the body), from awscrt's I/O thread."""
        if self._on_io_thread is not None:  # once: a stream's chunks all come from its connection's one thread
            self._on_io_thread()
            self._on_io_thread = None
        self.chunks.append(chunk)
        try:
            self._loop.call_soon_threadsafe(self._wake)
        except RuntimeError:  # the loop is closed: nobody is left to read
            pass

    async def wait(self) -> None:
        """Until a chunk has been handed over (or may have been: the caller looks again)."""
        if self.chunks:
            return
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class BodyResponse(AWSCRTHTTPResponse):
    """smithy's CRT response whose body is read through a :class:`BodySink` (cancellable at any point)."""

    def __init__(
        self, *, status: int, fields: Any, stream: Any, on_io_thread: Callable[[], None] | None = None
    ) -> None:
        super().__init__(status=status, fields=fields, stream=stream)
        self._sink = BodySink(asyncio.get_running_loop(), on_io_thread)
        self._ended = False
        """Set from either completion future's callback, which runs before awscrt hands queued readers ``b""``."""
        stream._completion_future.add_done_callback(self._end)
        stream._remote_completion_future.add_done_callback(self._end)

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        while chunk := await self.next_chunk():
            yield chunk

    async def next_chunk(self) -> bytes:
        """The next body chunk, or ``b""`` at the end of the body (as ``get_next_response_chunk``)."""
        stream, sink = self._stream, self._sink
        while True:
            with stream._deque_lock:
                if sink.chunks:
                    return sink.chunks.popleft()
                if stream._received_chunks:
                    return stream._received_chunks.popleft()
                if sink not in stream._chunk_futures:
                    if self._ended:
                        return b""
                    stream._chunk_futures.append(sink)
            await sink.wait()

    def _end(self, _: Any) -> None:
        """A completion future is done (on the I/O thread, or at once if it already was).

        A flag, not ``done()`` under the lock for every chunk (two more locks each): a future runs its callbacks
        before awscrt resolves the queued readers, so a sink queued while the flag was unset still gets ``b""``.
        """
        self._ended = True


def reads_directly(stream: Any) -> bool:
    """Whether ``stream`` keeps its body the way :class:`BodyResponse` reads it (awscrt's async HTTP stream)."""
    return all(hasattr(stream, name) for name in STREAM_ATTRIBUTES)

"""What the adapter adds to strands' Nova stream handling so that stopping a stream always ends.

strands' ``stop()`` sends the closing events, closes the SDK's input stream (flushing it) and closes the
client. Three ways a stream can keep that waiting forever, each seen under load against the local Nova:

- the stream never got an answer (awscrt does not finish a TLS handshake it rejected): :func:`answers`
  tells the model to drop it instead;
- the stream was reset or ended by the service: nothing reads its input any more, so a flushing close
  waits forever; :func:`drop_unsent_input` closes it without flushing;
- awscrt leaves a request-writer task waiting on a write the finished HTTP/2 stream never completes:
  :func:`watch_writers` remembers those tasks and :func:`end_orphan_writers` cancels the ones left over.

:class:`SendsInFlight` lets a send already under way finish before the closing events go out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

from .log import log

__all__ = [
    "ANSWER_WAIT_S",
    "CANCEL_TRIES",
    "CANCEL_WAIT_S",
    "WRITER_GRACE_S",
    "SendsInFlight",
    "answers",
    "drop_unsent_input",
    "end_orphan_writers",
    "watch_writers",
]

WRITER_GRACE_S = 0.5
"""How long stop() lets a closed stream's request writer finish on its own before cancelling it."""
CANCEL_TRIES = 3
CANCEL_WAIT_S = 0.2
ANSWER_WAIT_S = 2.0
"""How long stop() lets a stream that has had no answer yet get one, before giving it up as dead."""


def watch_writers(transport: Any, writers: set[asyncio.Task[Any]]) -> None:
    """Remember each stream's CRT request-writer task, so the model's stop() can end one its stream left behind."""
    original = getattr(transport, "_await_response", None)
    if original is None:
        return

    async def await_response(stream: Any) -> Any:
        task = getattr(stream, "_writer", None)
        if isinstance(task, asyncio.Task):
            writers.add(task)
            task.add_done_callback(writers.discard)
        return await original(stream)

    transport._await_response = await_response


async def end_orphan_writers(writers: set[asyncio.Task[Any]]) -> None:
    """Cancel request writers still waiting after their stream was closed.

    awscrt can leave a writer waiting forever on a write that the finished HTTP/2 stream never completes (seen
    after Nova ends a stream at its connection limit, about one restart in ten on a busy machine): one task and
    its connection leaked per restart. Once strands' stop() has closed the stream, nothing writes to it again.
    """
    pending = [task for task in writers if not task.done()]
    if not pending:
        return
    _, stuck = await asyncio.wait(pending, timeout=WRITER_GRACE_S)
    if not stuck:
        return
    count = len(stuck)
    for _ in range(CANCEL_TRIES):  # the writer's ``finally`` awaits one more write, which may hang the same way
        for task in stuck:
            task.cancel()
        _, stuck = await asyncio.wait(stuck, timeout=CANCEL_WAIT_S)
        if not stuck:
            break
    if stuck:
        log.warning("nova sonic: %d request writer(s) of a closed stream ignore cancellation", len(stuck))
    else:
        log.info("nova sonic: ended %d request writer(s) a closed stream left waiting", count)


async def answers(stream: Any) -> bool:
    """Whether the service has answered ``stream`` (HTTP 200 and headers), waiting up to ``ANSWER_WAIT_S``.

    A stream stopped right after it was opened (a restart, an early hang-up) usually gets its answer in
    milliseconds and is then closed the regular way; one whose connection never completes (awscrt does
    not finish a TLS handshake it rejected) would make strands' stop() wait forever.
    """
    if stream.output_stream is not None:
        return True
    waiting = asyncio.ensure_future(stream.await_output())
    done, _ = await asyncio.wait({waiting}, timeout=ANSWER_WAIT_S)
    if not done:
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        return False
    return not waiting.cancelled() and waiting.exception() is None  # cancelled: the SDK gave the stream up


async def drop_unsent_input(stream: Any) -> None:
    """Close a failed, reset (HTTP/2 RST_STREAM) or never-connected stream without flushing its input.

    smithy's ``close(flush=True)`` waits for buffered input to be read: after a reset nothing reads it.
    """
    log.info("nova sonic stream ended without a stop: dropping its unsent input")
    writer = getattr(stream.input_stream, "_writer", None)
    try:
        if writer is not None and callable(getattr(writer, "close", None)):
            await writer.close(flush=False)
        output = getattr(stream, "output_stream", None)
        if output is not None:
            await output.close()
    except Exception as error:  # noqa: BLE001 - the stream is gone either way
        log.debug("closing the lost nova stream: %r", error)


class SendsInFlight:
    """Counts the model's sends under way, so that stop() can let one finish before the closing events.

    strands closes its send gate before a restart, but a send already past it could otherwise open an audio
    content after the closing events (Nova: ``promptEnd`` with a content still open).
    """

    def __init__(self) -> None:
        self._count = 0
        self._none = asyncio.Event()
        self._none.set()

    @contextlib.contextmanager
    def counting(self) -> Iterator[None]:
        """Count one send for as long as the block runs."""
        self._count += 1
        self._none.clear()
        try:
            yield
        finally:
            self._count -= 1
            if not self._count:
                self._none.set()

    async def drain(self, timeout: float) -> None:
        """Wait until no send is under way, for at most ``timeout`` seconds."""
        if not self._none.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._none.wait(), timeout)

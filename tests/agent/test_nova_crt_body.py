"""Nova's response body read through a sink on awscrt's stream: in order, nothing lost to a cancelled read.

The stream here (``CrtBodyStream``) runs awscrt's own body callbacks (``_on_body``, ``_on_complete``, ...) over
the state they keep, without a connection; the calls tests (``tests/bridge/test_nova_calls.py``) read real streams.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import threading
import time

import pytest
from awscrt.aio.http import AIOHttpClientStreamUnified

from agent.nova.crt_body import STREAM_ATTRIBUTES, BodyResponse, reads_directly
from tests.fakes.crt_stream import CrtBodyStream

_AWSCRT = AIOHttpClientStreamUnified


def _response(stream: CrtBodyStream) -> BodyResponse:
    return BodyResponse(status=200, fields=None, stream=stream)


def test_awscrt_streams_keep_the_body_where_the_reader_looks() -> None:
    """If awscrt renames what the reader uses, this fails (and the client falls back to strands' reads)."""
    source = inspect.getsource(_AWSCRT.__init__)
    assert all(f"self.{name} =" in source for name in STREAM_ATTRIBUTES)
    assert reads_directly(CrtBodyStream())
    assert not reads_directly(object())


async def test_chunks_come_in_order_from_the_io_thread_however_often_reads_are_cancelled() -> None:
    stream = CrtBodyStream()
    response = _response(stream)
    sent = [f"chunk {n}".encode() for n in range(400)]
    draw = random.Random(7)
    pauses = [draw.choice((0, 0, 0.00005, 0.0003)) for _ in sent]

    def io_thread() -> None:
        for chunk, pause in zip(sent, pauses, strict=True):
            time.sleep(pause)
            stream._on_body(chunk)
        stream._on_complete(0)

    thread = threading.Thread(target=io_thread)
    thread.start()
    received: list[bytes] = []
    cancelled = 0
    while True:
        try:
            chunk = await asyncio.wait_for(response.next_chunk(), timeout=draw.choice((0.00001, 0.0001, 0.01)))
        except TimeoutError:
            cancelled += 1
            continue
        if not chunk:
            break
        received.append(chunk)
    thread.join()
    assert received == sent
    assert cancelled > 10  # the test did cancel reads while chunks were on their way


async def test_a_read_cancelled_while_it_waits_loses_nothing() -> None:
    stream = CrtBodyStream()
    response = _response(stream)
    waiting = asyncio.create_task(response.next_chunk())
    await asyncio.sleep(0)
    assert len(stream._chunk_futures) == 1  # the sink is queued on the stream
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    threading.Thread(target=lambda: (stream._on_body(b"one"), stream._on_body(b"two"))).start()
    assert await response.next_chunk() == b"one"
    assert await response.next_chunk() == b"two"


@pytest.mark.parametrize("end", ["_on_h2_remote_end_stream", "_on_complete"])
async def test_the_end_of_the_body_ends_the_chunks(end: str) -> None:
    stream = CrtBodyStream()
    response = _response(stream)
    stream._on_body(b"last words")

    async def end_later() -> None:
        await asyncio.sleep(0.01)
        getattr(stream, end)(*([0] if end == "_on_complete" else []))

    ender = asyncio.create_task(end_later())
    assert [chunk async for chunk in response.body] == [b"last words"]
    await ender
    assert await response.next_chunk() == b""  # and stays ended


@pytest.mark.parametrize("end", ["_on_h2_remote_end_stream", "_on_complete"])
def test_awscrt_marks_its_stream_ended_before_it_answers_waiting_readers(end: str) -> None:
    """The reader's end flag is set by a completion future's callback: awscrt must complete that future (which
    runs the callbacks) before it resolves the queued readers, or a reader queued in between would wait forever."""
    source = inspect.getsource(getattr(_AWSCRT, end))
    completes = min(source.index(call) for call in ("set_result", "set_exception") if call in source)
    assert completes < source.index("_resolve_pending_chunk_futures")


async def test_a_body_that_ended_before_the_response_was_made_reads_as_ended() -> None:
    stream = CrtBodyStream()
    stream._on_body(b"all of it")
    stream._on_complete(0)
    response = _response(stream)
    assert await asyncio.wait_for(response.next_chunk(), 2) == b"all of it"
    assert await asyncio.wait_for(response.next_chunk(), 2) == b""
    assert not stream._chunk_futures  # nothing left queued on an ended stream


async def test_the_end_reaches_a_reader_queued_from_another_thread_at_any_moment() -> None:
    """The stream completes on the I/O thread while reads queue and read on the loop: each run ends, never hangs."""
    for attempt in range(200):
        stream = CrtBodyStream()
        response = _response(stream)
        thread = threading.Thread(target=_ends_after, args=(stream, attempt % 7 * 0.00002))
        thread.start()
        chunks = await asyncio.wait_for(_all_chunks(response), 2)
        thread.join()
        assert chunks == [b"x"]


def _ends_after(stream: CrtBodyStream, pause: float) -> None:
    time.sleep(pause)
    stream._on_body(b"x")
    stream._on_complete(0)


async def _all_chunks(response: BodyResponse) -> list[bytes]:
    return [chunk async for chunk in response.body]


def test_a_chunk_after_the_loop_closed_is_dropped_without_an_error_in_awscrts_thread() -> None:
    stream = CrtBodyStream()
    loop = asyncio.new_event_loop()
    try:
        response = loop.run_until_complete(_made_on_a_loop(stream))
    finally:
        loop.close()
    stream._chunk_futures.append(response._sink)
    stream._on_body(b"after the call ended")  # raises nothing
    assert list(response._sink.chunks) == [b"after the call ended"]


async def _made_on_a_loop(stream: CrtBodyStream) -> BodyResponse:
    return _response(stream)

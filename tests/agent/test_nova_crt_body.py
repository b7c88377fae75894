"""Nova's response body read through a sink on awscrt's stream: in order, nothing lost to a cancelled read.

The stream here runs awscrt's own body callbacks (``_on_body``, ``_on_complete``, ...) over the state they
keep, without a connection; the calls tests (``tests/bridge/test_nova_calls.py``) read real streams.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import random
import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest
from awscrt.aio.http import AIOHttpClientStreamUnified

from agent.nova.crt_body import STREAM_ATTRIBUTES, BodyResponse, reads_directly

_AWSCRT = AIOHttpClientStreamUnified


class AwscrtStream:
    """awscrt's body callbacks and reader, on the state they use."""

    _on_body = _AWSCRT._on_body
    _on_complete = _AWSCRT._on_complete
    _on_h2_remote_end_stream = _AWSCRT._on_h2_remote_end_stream
    _resolve_pending_chunk_futures = _AWSCRT._resolve_pending_chunk_futures

    def __init__(self) -> None:
        self._deque_lock = threading.Lock()
        self._chunk_futures: collections.deque[Any] = collections.deque()
        self._received_chunks: collections.deque[bytes] = collections.deque()
        self._completion_future: Future[int] = Future()
        self._remote_completion_future: Future[None] = Future()
        self._status_code = 200


def _response(stream: AwscrtStream) -> BodyResponse:
    return BodyResponse(status=200, fields=None, stream=stream)


def test_awscrt_streams_keep_the_body_where_the_reader_looks() -> None:
    """If awscrt renames what the reader uses, this fails (and the client falls back to strands' reads)."""
    source = inspect.getsource(_AWSCRT.__init__)
    assert all(f"self.{name} =" in source for name in STREAM_ATTRIBUTES)
    assert reads_directly(AwscrtStream())
    assert not reads_directly(object())


async def test_chunks_come_in_order_from_the_io_thread_however_often_reads_are_cancelled() -> None:
    stream = AwscrtStream()
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
    stream = AwscrtStream()
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
    stream = AwscrtStream()
    response = _response(stream)
    stream._on_body(b"last words")

    async def end_later() -> None:
        await asyncio.sleep(0.01)
        getattr(stream, end)(*([0] if end == "_on_complete" else []))

    ender = asyncio.create_task(end_later())
    assert [chunk async for chunk in response.body] == [b"last words"]
    await ender
    assert await response.next_chunk() == b""  # and stays ended


def test_a_chunk_after_the_loop_closed_is_dropped_without_an_error_in_awscrts_thread() -> None:
    stream = AwscrtStream()
    loop = asyncio.new_event_loop()
    try:
        response = loop.run_until_complete(_made_on_a_loop(stream))
    finally:
        loop.close()
    stream._chunk_futures.append(response._sink)
    stream._on_body(b"after the call ended")  # raises nothing
    assert list(response._sink.chunks) == [b"after the call ended"]


async def _made_on_a_loop(stream: AwscrtStream) -> BodyResponse:
    return _response(stream)

"""The Nova request writer: one write at a time on the I/O thread, its completion awaited only when needed."""

from __future__ import annotations

import asyncio
import threading
from io import BytesIO
from typing import Any

import pytest
from awscrt.aio.http import AIOHttp2ClientStream
from awscrt.exceptions import AwsCrtError

from agent.nova.crt_write import WriteBehind, writes_directly

HTTP_STREAM_HAS_COMPLETED = 2080


class FakeIoThread:
    """awscrt's native write as the I/O thread runs it: queued, read later, completed from another thread."""

    def __init__(self) -> None:
        self.queued: list[tuple[bytes | None, bool, Any]] = []
        self.in_flight_most = 0
        self._in_flight = 0

    def write_data(self, stream: Any, body: Any, end_stream: bool, on_complete: Any) -> None:
        data = None if body is None else body._stream.read()  # what the I/O thread reads from the InputStream
        self.queued.append((data, end_stream, on_complete))
        self._in_flight += 1
        self.in_flight_most = max(self.in_flight_most, self._in_flight)

    def complete(self, index: int, error_code: int = 0) -> None:
        """Complete write ``index`` on a thread of its own, as awscrt's I/O thread does (holding the GIL)."""
        self._in_flight -= 1
        thread = threading.Thread(target=self.queued[index][2], args=(error_code,))
        thread.start()
        thread.join()


def _writer(io: FakeIoThread, on_io_thread: Any = None) -> WriteBehind:
    return WriteBehind(object(), asyncio.get_running_loop(), write_data=io.write_data, on_io_thread=on_io_thread)


async def test_a_write_returns_at_once_and_the_next_waits_for_it() -> None:
    io = FakeIoThread()
    writer = _writer(io)
    await asyncio.wait_for(writer.write(BytesIO(b"one"), False), 1)  # not waiting for its completion
    assert writer.busy and [data for data, _, _ in io.queued] == [b"one"]
    second = asyncio.ensure_future(writer.write(BytesIO(b"two"), False))
    await asyncio.sleep(0.01)
    assert not second.done() and len(io.queued) == 1  # one write at a time on the I/O thread
    io.complete(0)
    await asyncio.wait_for(second, 1)
    assert [data for data, _, _ in io.queued] == [b"one", b"two"] and io.in_flight_most == 1


async def test_a_completion_nobody_waits_for_wakes_no_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    io = FakeIoThread()
    writer = _writer(io)
    loop = asyncio.get_running_loop()
    wakes: list[object] = []
    original = loop.call_soon_threadsafe
    monkeypatch.setattr(loop, "call_soon_threadsafe", lambda *args: wakes.append(args) or original(*args))
    for index, data in enumerate([b"a", b"b", b"c"]):
        await writer.write(BytesIO(data), False)
        io.complete(index)  # done before the next event is ready: the common case
    assert wakes == [] and not writer.busy
    await writer.write(BytesIO(b"d"), False)
    waiting = asyncio.ensure_future(writer.write(BytesIO(b"e"), False))
    await asyncio.sleep(0.01)
    io.complete(3)  # now the writer waits: this one wakes it
    await asyncio.wait_for(waiting, 1)
    assert len(wakes) == 1


async def test_the_end_of_the_body_waits_for_its_own_write() -> None:
    io = FakeIoThread()
    writer = _writer(io)
    await writer.write(BytesIO(b"last event"), False)
    io.complete(0)
    ending = asyncio.ensure_future(writer.write(None, True))
    await asyncio.sleep(0.01)
    assert io.queued[-1][:2] == (None, True) and not ending.done()  # as awscrt: the end is awaited
    io.complete(1)
    await asyncio.wait_for(ending, 1)


async def test_a_failed_write_fails_the_next_one() -> None:
    io = FakeIoThread()
    writer = _writer(io)
    await writer.write(BytesIO(b"one"), False)
    io.complete(0, HTTP_STREAM_HAS_COMPLETED)
    with pytest.raises(AwsCrtError) as raised:
        await writer.write(BytesIO(b"two"), False)
    assert raised.value.name == "AWS_ERROR_HTTP_STREAM_HAS_COMPLETED"
    assert len(io.queued) == 1  # nothing more was written to the finished stream


async def test_a_write_the_native_call_refuses_leaves_the_writer_free() -> None:
    def refusing(*_: Any) -> None:
        raise AwsCrtError(code=HTTP_STREAM_HAS_COMPLETED, name="AWS_ERROR_HTTP_STREAM_HAS_COMPLETED", message="done")

    writer = WriteBehind(object(), asyncio.get_running_loop(), write_data=refusing)
    with pytest.raises(AwsCrtError):
        await writer.write(BytesIO(b"one"), False)
    assert not writer.busy


async def test_the_io_thread_settles_in_at_its_first_completion_only() -> None:
    io = FakeIoThread()
    settled: list[int | None] = []
    writer = _writer(io, on_io_thread=lambda: settled.append(threading.get_ident()))
    for index in range(3):
        await writer.write(BytesIO(b"x"), False)
        io.complete(index)
    assert len(settled) == 1 and settled[0] != threading.get_ident()


def test_awscrts_http2_stream_writes_through_its_own_write_data() -> None:
    """What the seam replaces: awscrt's HTTP/2 stream looks ``_write_data`` up on itself for every chunk."""
    stream = AIOHttp2ClientStream.__new__(AIOHttp2ClientStream)
    stream._request_body_generator = object()  # type: ignore[assignment]
    assert writes_directly(stream)
    stream._write_data = lambda body, end: None  # type: ignore[method-assign]  # an instance may take its own
    assert "_write_data" in AIOHttp2ClientStream._set_request_body_generator.__code__.co_names

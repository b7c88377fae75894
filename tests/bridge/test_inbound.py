"""The caller-audio buffer in front of agent.send()."""

from __future__ import annotations

import asyncio

from telephony.bridge.inbound import InboundBuffer


async def test_joins_audio_and_keeps_text_in_order() -> None:
    buffer = InboundBuffer(max_audio_bytes=1000)
    buffer.put_audio(b"a" * 10)
    buffer.put_audio(b"b" * 10)
    buffer.put_text("pressed 1")
    buffer.put_audio(b"c" * 10)
    assert (await buffer.get()).item == b"a" * 10 + b"b" * 10
    assert (await buffer.get()).item == "pressed 1"
    assert (await buffer.get()).item == b"c" * 10
    assert buffer.audio_bytes == 0


async def test_drops_oldest_audio_when_full_and_counts_it() -> None:
    buffer = InboundBuffer(max_audio_bytes=30)
    buffer.put_text("hello")
    for index in range(5):
        buffer.put_audio(bytes([index]) * 10)
    assert buffer.dropped_chunks == 2 and buffer.dropped_bytes == 20
    assert (await buffer.get()).item == "hello"
    assert (await buffer.get()).item == b"\x02" * 10 + b"\x03" * 10 + b"\x04" * 10


async def test_get_waits_without_busy_looping() -> None:
    buffer = InboundBuffer(max_audio_bytes=100)
    getter = asyncio.create_task(buffer.get())
    await asyncio.sleep(0.01)
    assert not getter.done()
    buffer.put_audio(b"x")
    assert (await asyncio.wait_for(getter, 1)).item == b"x"


async def test_a_joined_chunk_carries_the_arrival_time_of_its_oldest_part() -> None:
    buffer = InboundBuffer(max_audio_bytes=100)
    buffer.put_audio(b"a", received_at=1.0)
    buffer.put_audio(b"b", received_at=2.0)
    assert await buffer.get() == (b"ab", 1.0)


async def test_a_held_backlog_is_kept_whole_and_leaves_in_bounded_chunks_in_order() -> None:
    """While a connection is replaced the bound rises; releasing never drops what was held."""
    buffer = InboundBuffer(max_audio_bytes=20, max_chunk_bytes=25)
    buffer.hold(1000)
    for index in range(10):
        buffer.put_audio(bytes([index]) * 10)
    buffer.release()
    assert buffer.dropped_chunks == 0 and buffer.audio_bytes == 100
    chunks = [(await buffer.get()).item for _ in range(4)]
    assert [len(chunk) for chunk in chunks] == [25, 25, 25, 25]
    assert b"".join(chunks) == b"".join(bytes([index]) * 10 for index in range(10))  # type: ignore[arg-type]
    buffer.put_audio(b"x" * 15)
    buffer.put_audio(b"y" * 15)  # the normal bound is back once the backlog has drained
    assert buffer.dropped_chunks == 1


async def test_hold_records_when_the_oldest_held_audio_arrived() -> None:
    buffer = InboundBuffer(max_audio_bytes=100)
    buffer.put_text("hello")
    buffer.put_audio(b"a", received_at=5.0)
    assert buffer.oldest_audio_at == 5.0

"""The caller-audio buffer in front of agent.send()."""

from __future__ import annotations

import asyncio

from telephony.bridge.inbound import InboundBuffer, SendChunks


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
    assert await buffer.get() == (b"ab", 1.0, 2.0)


async def test_audio_waits_for_a_whole_chunk_and_text_flushes_it() -> None:
    buffer = InboundBuffer(max_audio_bytes=10_000)
    getter = asyncio.create_task(buffer.get(480))  # 60 ms of μ-law
    for index in range(2):
        buffer.put_audio(bytes([index]) * 160, received_at=float(index))
    await asyncio.sleep(0.01)
    assert not getter.done()  # 40 ms is not a chunk yet
    buffer.put_audio(b"\x02" * 160, received_at=2.0)
    assert await asyncio.wait_for(getter, 1) == (b"\x00" * 160 + b"\x01" * 160 + b"\x02" * 160, 0.0, 2.0)
    buffer.put_audio(b"\x03" * 160, received_at=3.0)
    buffer.put_text("The caller pressed 5.")
    assert (await asyncio.wait_for(buffer.get(480), 1)).item == b"\x03" * 160  # text never waits on audio
    assert (await asyncio.wait_for(buffer.get(480), 1)).item == "The caller pressed 5."


async def test_chunks_are_smaller_while_the_bot_is_heard() -> None:
    speaking = False
    chunks = SendChunks(quiet_bytes=480, speaking_bytes=160, bot_speaking=lambda: speaking)
    buffer = InboundBuffer(max_audio_bytes=10_000)
    buffer.put_audio(b"a" * 160)
    getter = asyncio.create_task(buffer.get(chunks))
    await asyncio.sleep(0.01)
    assert not getter.done()
    speaking = True  # the bot starts talking: the next frame is sent at once, with what waited
    buffer.put_audio(b"b" * 160)
    assert (await asyncio.wait_for(getter, 1)).item == b"a" * 160 + b"b" * 160
    buffer.put_audio(b"c" * 160)
    assert (await asyncio.wait_for(buffer.get(chunks), 1)).item == b"c" * 160


async def test_a_backlog_goes_out_in_sends_of_at_most_the_cap() -> None:
    chunks = SendChunks(quiet_bytes=480, speaking_bytes=320, bot_speaking=lambda: False, most_bytes=800)
    buffer = InboundBuffer(max_audio_bytes=16_000)
    for _ in range(12):  # 240 ms queued while the model was reconnecting
        buffer.put_audio(b"x" * 160)
    sizes = [len((await asyncio.wait_for(buffer.get(chunks), 1)).item) for _ in range(2)]
    assert sizes == [800, 800] and buffer.audio_bytes == 320  # the rest waits to fill a chunk


async def test_a_held_backlog_is_kept_whole_and_leaves_in_bounded_chunks_in_order() -> None:
    """While a connection is replaced the bound rises; releasing never drops what was held."""
    buffer = InboundBuffer(max_audio_bytes=20)
    buffer.hold(1000)
    for index in range(10):
        buffer.put_audio(bytes([index]) * 10)
    buffer.release()
    assert buffer.dropped_chunks == 0 and buffer.audio_bytes == 100
    chunks = [(await buffer.get(most_bytes=25)).item for _ in range(5)]
    assert [len(chunk) for chunk in chunks] == [20, 20, 20, 20, 20]  # whole pieces, at most the cap
    assert b"".join(chunks) == b"".join(bytes([index]) * 10 for index in range(10))  # type: ignore[arg-type]
    buffer.put_audio(b"x" * 15)
    buffer.put_audio(b"y" * 15)  # the normal bound is back once the backlog has drained
    assert buffer.dropped_chunks == 1


async def test_audio_arriving_as_a_released_backlog_drains_is_not_dropped() -> None:
    """Found by the long-call benchmark on OpenAI: 4.3 s held (over the 2 s normal bound), then a frame came before
    the first send after the swap took any of it, and the oldest held chunk was dropped."""
    buffer = InboundBuffer(max_audio_bytes=20)
    buffer.hold(1000)
    for index in range(10):
        buffer.put_audio(bytes([index]) * 10)
    buffer.release()
    buffer.put_audio(b"n" * 10)  # the caller goes on talking before the sender has taken anything
    assert buffer.dropped_chunks == 0 and buffer.audio_bytes == 110
    await buffer.get(most_bytes=50)
    buffer.put_audio(b"m" * 10)
    assert buffer.dropped_chunks == 0 and buffer.audio_bytes == 70
    buffer.put_audio(b"o" * 15)  # but no more than the normal bound's worth behind the backlog
    assert buffer.dropped_chunks == 1


async def test_hold_records_when_the_oldest_held_audio_arrived() -> None:
    buffer = InboundBuffer(max_audio_bytes=100)
    buffer.put_text("hello")
    buffer.put_audio(b"a", received_at=5.0)
    assert buffer.oldest_audio_at == 5.0


async def test_a_waiting_sender_is_woken_once_a_send_is_due_not_at_every_frame() -> None:
    """In long silence a chunk is ten frames: the sender sleeps through the first nine (a wake-up per frame
    costs more than the frame's own work)."""
    buffer = InboundBuffer(max_audio_bytes=10_000)
    getter = asyncio.ensure_future(buffer.get(1600))
    await asyncio.sleep(0)
    for _ in range(9):
        buffer.put_audio(b"\xff" * 160)
        assert not buffer._ready.is_set()
    buffer.put_audio(b"\xff" * 160)
    assert buffer._ready.is_set()
    item = await asyncio.wait_for(getter, 1.0)
    assert len(item.item) == 1600

"""Playback bookkeeping: what was sent, what was heard, and what a clear throws away."""

from __future__ import annotations

import asyncio
import base64
import json
import time

from telephony.bridge.playback import MAX_FRAMES_PER_MESSAGE, MarkState, Playback


def frames(message: dict) -> int:
    return len(base64.b64decode(message["media"]["payload"])) // 160


async def drain(playback: Playback) -> list[dict]:
    messages = []
    while True:
        try:
            messages.append(json.loads((await asyncio.wait_for(playback.next_message(), 0.01)).text))
        except TimeoutError:
            return messages


async def test_frames_and_progress_marks() -> None:
    playback = Playback("MZ1", mark_interval_s=0.1)
    assert playback.play(b"\x01" * 160 * 12 + b"\x02" * 100, utterance="u1") == 12  # partial frame ignored
    end = playback.end_utterance("u1")
    messages = await drain(playback)
    kinds = [message["event"] for message in messages]
    assert kinds == ["media", "mark", "media", "mark", "media", "mark"]  # 5 frames joined, a mark, ..., the end
    assert [frames(message) for message in messages if message["event"] == "media"] == [5, 5, 2]
    assert playback.frames_sent == 12
    assert messages[-1]["mark"]["name"] == end
    assert not playback.idle and playback.pending_marks == 3
    for message in messages:
        if message["event"] == "mark":
            playback.on_echo(message["mark"]["name"])
    assert playback.idle
    utterance = playback.utterances["u1"]
    assert utterance.heard_in_full and abs(utterance.heard_seconds - 0.24) < 1e-9


async def test_interrupt_flags_marks_cleared_before_their_echo() -> None:
    playback = Playback("MZ1", mark_interval_s=0.1)
    playback.play(b"\x01" * 160 * 20, utterance="u1")
    first = await drain(playback)
    first_mark = next(message["mark"]["name"] for message in first if message["event"] == "mark")
    playback.on_echo(first_mark)  # the first 100 ms really played
    playback.play(b"\x01" * 160 * 20, utterance="u1")  # more queued, not yet sent
    dropped = playback.interrupt()
    assert dropped == 20
    rest = await drain(playback)
    assert [message["event"] for message in rest] == ["clear"]
    # Twilio echoes every pending mark on clear; none of them counts as heard.
    for message in first:
        if message["event"] == "mark" and message["mark"]["name"] != first_mark:
            record = playback.on_echo(message["mark"]["name"])
            assert record is not None and record.state is MarkState.CLEARED
    utterance = playback.utterances["u1"]
    assert utterance.interrupted and not utterance.heard_in_full
    assert abs(utterance.heard_seconds - 0.1) < 1e-9
    assert playback.idle


async def test_frames_join_up_to_the_limit_in_order() -> None:
    playback = Playback("MZ1", mark_interval_s=10.0)
    audio = bytes(range(160)) * (MAX_FRAMES_PER_MESSAGE + 3)
    playback.play(audio)
    first, second = await playback.next_message(), await playback.next_message()
    assert (first.frames, second.frames) == (MAX_FRAMES_PER_MESSAGE, 3)
    payloads = [base64.b64decode(json.loads(each.text)["media"]["payload"]) for each in (first, second)]
    assert b"".join(payloads) == audio and playback.frames_sent == MAX_FRAMES_PER_MESSAGE + 3


async def test_paced_playback_sends_one_frame_a_message() -> None:
    playback = Playback("MZ1", pace_lead_s=1.0)
    playback.play(b"\x01" * 160 * 4)
    assert [(await playback.next_message()).frames for _ in range(4)] == [1, 1, 1, 1]


async def test_queue_is_bounded() -> None:
    playback = Playback("MZ1", max_queued_frames=10)
    assert playback.play(b"\x00" * 160 * 15) == 10
    assert playback.frames_dropped == 5


async def test_latency_stamps_ride_on_the_first_frame_and_the_clear() -> None:
    playback = Playback("MZ1")
    playback.play(b"\x01" * 160 * 3, utterance="u1", stamps=(("audio_to_frame", 1.0),))
    playback.play(b"\x02" * 160 * 2, utterance="u1", stamps=(("audio_to_frame", 1.5),))
    joined = await playback.next_message()  # both chunks, one message: each stamp ends when it is written
    assert joined.frames == 5 and joined.stamps == (("audio_to_frame", 1.0), ("audio_to_frame", 1.5))
    playback.play(b"\x01" * 160 * 2, utterance="u1")
    assert (await playback.next_message()).stamps == ()
    playback.interrupt(stamps=(("barge_in_to_clear", 2.0),))
    clear = await playback.next_message()
    assert json.loads(clear.text)["event"] == "clear" and clear.stamps == (("barge_in_to_clear", 2.0),)


async def test_paced_playback_keeps_only_the_lead_ahead_and_a_clear_jumps_the_wait() -> None:
    playback = Playback("MZ1", pace_lead_s=0.1)
    playback.play(b"\x01" * 160 * 30, utterance="u1")  # 0.6 s of audio
    started = time.monotonic()
    for _ in range(15):
        await playback.next_message()
    assert time.monotonic() - started >= 0.15  # 0.3 s of audio written, at most 0.1 s of it ahead
    waiting = asyncio.create_task(playback.next_message())
    await asyncio.sleep(0.005)
    playback.interrupt()
    clear = await asyncio.wait_for(waiting, 0.05)
    assert json.loads(clear.text)["event"] == "clear"


async def test_settled_waits_for_the_last_mark_and_the_grace_then_gives_up_at_the_cap() -> None:
    playback = Playback("MZ1")
    playback.play(b"\x01" * 160 * 5, utterance="bye")
    goodbye = playback.mark("goodbye")
    await drain(playback)
    busy = [True]
    waiting = asyncio.create_task(playback.settled(0.1, 5.0, busy=lambda: busy[0]))
    await asyncio.sleep(0.15)
    assert not waiting.done(), "the goodbye mark has not come back"
    playback.on_echo(goodbye)
    await asyncio.sleep(0.15)
    assert not waiting.done(), "the model is still answering"
    busy[0] = False
    began = time.monotonic()
    assert await waiting is True
    assert time.monotonic() - began >= 0.1, "the grace is kept after the last word"

    playback.play(b"\x01" * 160, utterance="lost")
    lost = playback.mark("lost")
    await drain(playback)
    assert await playback.settled(0.0, 0.2, busy=lambda: False) is False, "marks never came back: give up"
    assert await playback.heard(lost, 0.1) is False
    playback.on_echo(lost)
    assert await playback.heard(lost, 0.1) is True


async def test_while_twilio_has_plenty_to_play_frames_wait_to_fill_a_message() -> None:
    """The model speaks faster than real time, a few frames at a time: once Twilio holds more than the gather
    threshold, frames leave a full message at a time, or when Twilio's audio runs down to it, or before a mark."""
    playback = Playback("MZ1", mark_interval_s=10.0, gather_ahead_s=0.1)
    playback.play(b"\x01" * 160 * 10, utterance="u1")  # 200 ms: the reply's first audio leaves at once
    assert (await asyncio.wait_for(playback.next_message(), 0.01)).frames == 10
    playback.play(b"\x01" * 160 * 2, utterance="u1")
    writer = asyncio.ensure_future(playback.next_message())
    await asyncio.sleep(0.03)
    assert not writer.done()  # Twilio still holds about 170 ms: wait for more
    for _ in range(4):
        playback.play(b"\x01" * 160 * 2, utterance="u1")
    assert (await asyncio.wait_for(writer, 0.01)).frames == 10  # a message's worth: sent at once
    playback.play(b"\x01" * 160 * 3, utterance="u1")
    started = time.monotonic()
    assert (await asyncio.wait_for(playback.next_message(), 1)).frames == 3  # Twilio's audio ran down to 100 ms
    assert playback.playout_end - started > 0.1  # and it still had audio to play when they left
    playback.play(b"\x01" * 160 * 2, utterance="u1")
    end = playback.end_utterance("u1")  # the end of the utterance: nothing more is coming
    assert (await asyncio.wait_for(playback.next_message(), 0.01)).frames == 2
    assert json.loads((await asyncio.wait_for(playback.next_message(), 0.01)).text)["mark"]["name"] == end


async def test_a_barge_in_clears_frames_that_were_waiting_at_once() -> None:
    playback = Playback("MZ1", mark_interval_s=10.0, gather_ahead_s=0.1)
    playback.play(b"\x01" * 160 * 20, utterance="u1")
    assert len(await drain(playback)) == 2  # 400 ms with Twilio, in two whole messages
    playback.play(b"\x01" * 160 * 2, utterance="u1")
    writer = asyncio.ensure_future(playback.next_message())
    await asyncio.sleep(0.02)
    assert playback.interrupt() == 2
    assert json.loads((await asyncio.wait_for(writer, 0.01)).text)["event"] == "clear"


async def test_without_gathering_every_frame_leaves_as_it_comes() -> None:
    playback = Playback("MZ1", mark_interval_s=10.0, gather_ahead_s=None)
    playback.play(b"\x01" * 160 * 25)
    await drain(playback)
    playback.play(b"\x01" * 160 * 2)
    assert (await asyncio.wait_for(playback.next_message(), 0.01)).frames == 2

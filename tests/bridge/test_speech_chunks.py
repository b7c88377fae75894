"""Sends follow the caller's speech: large in long silence, flushed at the onset, small around speech."""

from __future__ import annotations

import asyncio

from telephony.bridge.inbound import InboundBuffer
from telephony.bridge.speech_chunks import SpeechChunks

FRAME = 160  # 20 ms of μ-law


class _Call:
    """A call's clock and speech, moved by hand."""

    def __init__(self) -> None:
        self.now = 100.0
        self.voiced_at: float | None = None
        self.bot_heard = False

    def chunks(self, window_s: float = 2.0, bot_window_s: float | None = None) -> SpeechChunks:
        return SpeechChunks(
            quiet_bytes=3 * FRAME,
            speaking_bytes=2 * FRAME,
            silence_bytes=10 * FRAME,
            window_s=window_s,
            bot_window_s=bot_window_s,
            bot_speaking=lambda: self.bot_heard,
            last_voiced_at=lambda: self.voiced_at,
            clock=lambda: self.now,
        )

    def frame(self, buffer: InboundBuffer, voiced: bool = False) -> None:
        """One 20 ms caller frame arrives (voiced ones are marked, as the bridge's level does, before queueing)."""
        self.now += 0.02
        if voiced:
            self.voiced_at = self.now
        buffer.put_audio(b"v" * FRAME if voiced else b"s" * FRAME, received_at=self.now)


async def _sizes_of(buffer: InboundBuffer, chunks: SpeechChunks, frames: list[bool], call: _Call) -> list[int]:
    """Feed ``frames`` (True: voiced) one at a time and collect what each send would carry."""
    sizes: list[int] = []
    for voiced in frames:
        call.frame(buffer, voiced)
        while True:
            getter = asyncio.ensure_future(buffer.get(chunks))
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            if not getter.done():
                getter.cancel()  # and let it go: a waiting getter is asked at each new piece
                await asyncio.gather(getter, return_exceptions=True)
                break
            sizes.append(len(getter.result().item) // FRAME)
    return sizes


async def test_long_silence_goes_in_large_chunks_at_real_time() -> None:
    call = _Call()
    buffer, chunks = InboundBuffer(max_audio_bytes=100_000), call.chunks()
    assert await _sizes_of(buffer, chunks, [False] * 35, call) == [10, 10, 10]
    assert buffer.audio_bytes == 5 * FRAME and not chunks.around_speech


async def test_the_onset_flushes_at_once_then_small_chunks_through_the_window() -> None:
    call = _Call()
    buffer, chunks = InboundBuffer(max_audio_bytes=100_000), call.chunks(window_s=1.0)
    assert await _sizes_of(buffer, chunks, [False] * 7, call) == []  # 140 ms of silence held
    assert await _sizes_of(buffer, chunks, [True], call) == [8]  # the first voiced frame: everything, now
    assert chunks.onset_flush and chunks.around_speech
    sizes = await _sizes_of(buffer, chunks, [True] * 12 + [False] * 48, call)
    assert sizes == [3] * 20  # speech, then the end-pointing window (1 s after the last voiced frame): small
    assert not chunks.onset_flush
    sizes = await _sizes_of(buffer, chunks, [False] * 22, call)
    assert sizes == [10, 10]  # the window has passed: large again


async def test_a_barge_in_is_as_fast_as_before() -> None:
    """While the caller hears the bot: the onset still flushes at once, then the small barge-in chunks."""
    call = _Call()
    call.bot_heard = True
    buffer, chunks = InboundBuffer(max_audio_bytes=100_000), call.chunks()
    assert await _sizes_of(buffer, chunks, [False] * 13, call) == [10]  # the caller is silent: large, bot or not
    assert await _sizes_of(buffer, chunks, [True], call) == [4]
    assert await _sizes_of(buffer, chunks, [True] * 6, call) == [2, 2, 2]


async def test_while_the_bot_answers_a_listening_caller_costs_large_chunks_and_a_barge_in_still_flushes() -> None:
    call = _Call()
    buffer, chunks = InboundBuffer(max_audio_bytes=100_000), call.chunks(window_s=2.0, bot_window_s=0.3)
    assert await _sizes_of(buffer, chunks, [True] * 6, call) == [1] + [3] * 1  # the caller asks (+2 frames queued)
    call.bot_heard = True  # the model answers: it has end-pointed the question
    sizes = await _sizes_of(buffer, chunks, [False] * 45, call)
    small = [size for size in sizes if size < 10]
    assert sizes == [*small, 10, 10, 10]  # small sends through the 0.3 s hangover only, then large ones
    assert sum(small) == 2 + 15  # what was queued, and the hangover's 15 frames
    assert not chunks.around_speech
    queued = buffer.audio_bytes // FRAME
    assert await _sizes_of(buffer, chunks, [True], call) == [queued + 1]  # the barge-in's onset: everything, now
    assert chunks.onset_flush
    assert await _sizes_of(buffer, chunks, [True] * 4, call) == [2, 2]  # then the small barge-in chunks


async def test_speech_the_bot_answered_brings_no_small_chunks_back_when_it_stops_but_new_speech_does() -> None:
    call = _Call()
    buffer, chunks = InboundBuffer(max_audio_bytes=100_000), call.chunks(window_s=2.0, bot_window_s=0.3)
    await _sizes_of(buffer, chunks, [True] * 5, call)
    call.bot_heard = True
    await _sizes_of(buffer, chunks, [False] * 20, call)  # 0.4 s of answer
    call.bot_heard = False  # the answer has played; the question was 0.4 s ago, inside the 2 s window
    assert await _sizes_of(buffer, chunks, [False] * 20, call) == [10, 10]  # still large: it was answered
    assert not chunks.onset_flush and not chunks.around_speech
    queued = buffer.audio_bytes // FRAME
    assert (await _sizes_of(buffer, chunks, [True] + [False] * 20, call))[0] == queued + 1  # a new question: flushed
    assert chunks.around_speech  # and its end-pointing window is the full one (small sends)


async def test_a_pause_inside_the_window_is_no_new_onset() -> None:
    call = _Call()
    buffer, chunks = InboundBuffer(max_audio_bytes=100_000), call.chunks()
    assert await _sizes_of(buffer, chunks, [True], call) == [1]
    assert await _sizes_of(buffer, chunks, [False] * 20 + [True] * 4, call) == [3] * 8
    assert not chunks.onset_flush


async def test_a_backlog_still_leaves_in_sends_of_at_most_the_cap() -> None:
    call = _Call()
    chunks = call.chunks()
    chunks.most_bytes = 25 * FRAME
    buffer = InboundBuffer(max_audio_bytes=100_000)
    for _ in range(60):
        buffer.put_audio(b"s" * FRAME)
    got = [len((await asyncio.wait_for(buffer.get(chunks), 1)).item) // FRAME for _ in range(2)]
    assert got == [25, 25] and buffer.audio_bytes == 10 * FRAME

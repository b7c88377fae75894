"""Barge-in on audio the model has already finished: the bridge clears on the model's earliest sign of caller
speech (a user transcript opening), once per interruption, never on noise, and tells a model that wants to
know how much of the cut answer the caller heard."""

from __future__ import annotations

import asyncio
import base64
import logging
import math
from typing import Any

import httpx
import numpy as np
import pytest
from strands.bidi.types import BidiAudioDeltaEvent

from agent.heard import HeardAudio
from telephony.bridge.playback import Playback
from telephony.bridge.protocol import mark_message
from telephony.codec import FRAME_BYTES, pcm16_to_ulaw

from ..audio import frame_hz
from ..conftest import harness
from ..fakes.model import (
    BargeIn,
    Hold,
    Say,
    ScriptedModel,
    Step,
    UserSaid,
    UserStarts,
    WaitForAudio,
    WaitForSpeech,
)
from .test_caller_speech import Notes


class HeardModel(ScriptedModel):
    """A scripted model that wants to know what the caller heard of a cut answer (as OpenAI Realtime does)."""

    def __init__(self, script: list[Step], block_s: float = 0.0, error: Exception | None = None) -> None:
        super().__init__(script)
        self.heard: list[tuple[str, int]] = []
        self.audio_ids: list[str] = []
        self.block_s = block_s
        self.error = error

    def emit(self, item: Any) -> None:
        if isinstance(item, BidiAudioDeltaEvent) and item.content_id not in self.audio_ids:
            self.audio_ids.append(item.content_id)
        super().emit(item)

    async def audio_heard(self, content_id: str, heard_ms: int) -> None:
        self.heard.append((content_id, heard_ms))
        await asyncio.sleep(self.block_s)
        if self.error is not None:
            raise self.error


def caller_tone(seconds: float, hz: float = 300.0) -> bytes:
    samples = 0.3 * 32767 * np.sin(2 * math.pi * hz * np.arange(round(seconds * 8000)) / 8000)
    return pcm16_to_ulaw(samples.astype("<i2").tobytes())


def noise(seconds: float) -> bytes:
    samples = np.random.default_rng(7).normal(0, 0.05 * 32767, round(seconds * 8000))
    return pcm16_to_ulaw(np.clip(samples, -32767, 32767).astype("<i2").tobytes())


def heard_at(call: Any, hz: float) -> float:
    """Seconds of bot audio at ``hz`` the caller heard."""
    return sum(1 for frame in call.heard if round(frame_hz(frame.payload), -2) == hz) * 0.02


def media_after(call: Any, at: float) -> set[float]:
    return {
        round(frame_hz(base64.b64decode(item.message["media"]["payload"])), -2)
        for item in call.received
        if item.at > at and item.message["event"] == "media"
    }


def with_notes(seen: list[Notes]) -> Any:
    def observer(call: object) -> Notes:
        seen.append(Notes(call))
        return seen[-1]

    return observer


async def latency(h: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=f"http://{h.base}") as client:
        return dict((await client.get("/stats")).json()["latency"])


def test_the_heard_audio_protocol_is_what_the_fake_implements() -> None:
    assert isinstance(HeardModel([]), HeardAudio) and not isinstance(ScriptedModel([]), HeardAudio)


async def test_a_finished_reply_still_playing_is_cleared_when_the_caller_starts_talking() -> None:
    """The reply was generated in full (its ResponseStop sent) long before the caller spoke; the model says
    only that a user transcript opened (OpenAI's speech_started). Clear at once, nothing of the old reply after
    it, and the model is told how much the caller heard."""
    seen: list[Notes] = []
    model = HeardModel([Say("a long answer", 3.0, tone_hz=400), WaitForSpeech(0.1), UserStarts(), Hold()])
    async with harness(lambda: model, observers=[with_notes(seen)]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.8)
            await call.stream(caller_tone(0.5))
            await call.silence(0.5)
            await call.stop()
            await call.wait_closed(3)
        await asyncio.sleep(0.2)  # the call's samples join the server's once it has ended
        stats = await latency(h)
    clears = call.events("clear")
    assert len(clears) == 1
    assert media_after(call, clears[0].at) <= {0.0}, "stale audio after the clear"
    heard_s = heard_at(call, 400)
    assert 0.7 < heard_s < 1.3, heard_s  # the caller began at 0.8 s: heard that plus the model's detection
    ((content_id, heard_ms),) = model.heard
    assert content_id == model.audio_ids[0]
    assert abs(heard_ms / 1000 - heard_s) < 0.15, (heard_ms, heard_s)  # what the caller really heard
    assert heard_ms >= 500 * math.floor((heard_s - 0.1) / 0.5)  # never less than its echoed marks confirm
    assert [kind for kind, _ in seen[0].notes if kind in ("barge_in", "caller_spoke")] == ["barge_in"]
    assert stats["speech_signal_to_clear"]["count"] == 1 and "barge_in_to_clear" not in stats
    onset = stats["caller_onset_to_clear"]
    assert onset["count"] == 1 and 50 < onset["max_ms"] < 600, onset  # VAD-like detection: 0.1 s of speech


async def test_a_transcript_opening_after_the_bot_was_heard_in_full_clears_nothing() -> None:
    model = HeardModel(
        [
            Say("hello", 0.4, tone_hz=400),
            WaitForSpeech(0.1),
            UserStarts(),
            UserSaid("what are your hours"),
            Say("nine to five", 0.4, tone_hz=600),
            Hold(),
        ]
    )
    async with harness(lambda: model) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(1.0)
            await call.stream(caller_tone(0.4))
            await call.silence(1.0)
            await call.stop()
    assert call.events("clear") == [] and model.heard == []
    assert heard_at(call, 400) >= 0.38 and heard_at(call, 600) >= 0.38


@pytest.mark.parametrize("model_first", [False, True], ids=["transcript-then-barge-in", "barge-in-then-transcript"])
async def test_one_interruption_is_one_clear_whichever_signal_comes_first(model_first: bool) -> None:
    signals: list[Step] = [BargeIn(), WaitForAudio(0.1), UserStarts()]
    if not model_first:
        signals = [UserStarts(), WaitForAudio(0.1), BargeIn()]
    seen: list[Notes] = []
    script = [Say("a long answer", 3.0, tone_hz=400), WaitForSpeech(0.1), *signals, Say("go on", 0.4, 1000), Hold()]
    model = HeardModel(script)
    async with harness(lambda: model, observers=[with_notes(seen)]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.8)
            await call.stream(caller_tone(0.4))
            await call.silence(0.8)
            await call.stop()
    clears = call.events("clear")
    assert len(clears) == 1
    assert media_after(call, clears[0].at) <= {0.0, 1000.0}
    assert heard_at(call, 1000) >= 0.38  # the new reply plays in full
    assert len(model.heard) == 1
    kinds = [kind for kind, _ in seen[0].notes]
    assert kinds.count("barge_in") == 1 and "caller_spoke" not in kinds
    assert kinds.count("barge_in_confirmed") == (0 if model_first else 1)


async def test_noise_over_the_bot_without_a_model_speech_signal_clears_nothing() -> None:
    async with harness([Say("an answer", 1.2, tone_hz=400), Hold()]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.3)
            await call.stream(noise(0.5))
            await call.silence(1.0)
            await call.stop()
    assert call.events("clear") == []
    assert heard_at(call, 400) >= 1.15


async def test_a_late_transcript_of_the_question_does_not_cut_its_answer() -> None:
    """Some models (Gemini) transcribe the caller late, while the answer already plays: that transcript is of
    speech that began before the answer, so it is no barge-in."""
    script: list[Step] = [
        WaitForSpeech(0.3),
        WaitForAudio(0.3),
        Say("the answer", 1.2, tone_hz=400),
        UserSaid("when?"),  # the transcript opens now, as the answer plays
        Hold(),
    ]
    async with harness(script) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.2)
            await call.stream(caller_tone(0.4))
            await call.silence(1.8)
            await call.stop()
    assert call.events("clear") == []
    assert heard_at(call, 400) >= 1.15


@pytest.mark.parametrize("block_s, error", [(30.0, None), (0.0, RuntimeError("no such item"))], ids=["slow", "fails"])
async def test_a_model_slow_or_failing_to_take_note_of_what_was_heard_never_holds_the_call_up(
    block_s: float, error: Exception | None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="telephony")
    model = HeardModel(
        [Say("a long answer", 3.0, tone_hz=400), WaitForSpeech(0.1), UserStarts(), Say("yes?", 0.4, 1000), Hold()],
        block_s=block_s,
        error=error,
    )
    async with harness(lambda: model) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.6)
            await call.stream(caller_tone(0.3))
            await call.silence(0.8)
            await call.stop()
            await call.wait_closed(3)
    assert len(call.events("clear")) == 1 and len(model.heard) == 1
    assert heard_at(call, 1000) >= 0.38  # the next reply played while the model was still busy
    assert ("could not tell the model what the caller heard" in caplog.text) == (error is not None)
    assert "call ended" in caplog.text and "internal error" not in caplog.text


async def test_heard_of_an_utterance_lies_between_its_marks_and_what_was_queued() -> None:
    playback = Playback("MZ1", mark_interval_s=0.5)
    playback.play(b"\x00" * FRAME_BYTES * 50, utterance="u")  # 1 s: marks after 0.5 s and 1.0 s
    playback.end_utterance("u")
    written = [await playback.next_message()]
    while '"end-3"' not in written[-1].text:  # 50 frames (joined into fewer messages) and 3 marks
        written.append(await asyncio.wait_for(playback.next_message(), 1.0))
    assert sum(message.frames for message in written) == 50
    marks = [message.text for message in written if '"mark"' in message.text]
    assert marks == [mark_message("MZ1", name) for name in ("at-1", "at-2", "end-3")]
    assert playback.heard_of("u") < 0.1  # all written a moment ago: Twilio has played next to nothing
    playback.on_echo("at-1")
    assert 0.5 <= playback.heard_of("u") < 0.6
    playback.on_echo("at-2")
    playback.on_echo("end-3")
    assert playback.heard_of("u") == pytest.approx(1.0) and playback.heard_of("unknown") == 0.0

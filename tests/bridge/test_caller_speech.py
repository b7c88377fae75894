"""Caller speech as the bridge hears it, response latency from it, and barge-ins only when audio was lost."""

from __future__ import annotations

import math

import numpy as np

from telephony.bridge.caller_speech import CallerSpeech, SpeechSpan
from telephony.bridge.observer import QuietObserver
from telephony.codec import pcm16_to_ulaw

from ..conftest import harness
from ..fakes.model import BargeIn, Hold, Say, WaitForAudio

SILENT = b"\xff" * 160


def tone_frames(seconds: float, hz: float = 300.0, amplitude: float = 0.3) -> list[bytes]:
    samples = amplitude * 32767 * np.sin(2 * math.pi * hz * np.arange(round(seconds * 8000)) / 8000)
    ulaw = pcm16_to_ulaw(samples.astype("<i2").tobytes())
    return [ulaw[offset : offset + 160] for offset in range(0, len(ulaw), 160)]


def feed(speech: CallerSpeech, frames: list[bytes], first_ms: int = 100) -> list[SpeechSpan]:
    spans = []
    for index, frame in enumerate(frames):
        span = speech.frame(frame, first_ms + 20 * index, now=index * 0.02)
        if span is not None:
            spans.append(span)
    return spans


def test_spans_follow_the_speech_on_the_stream_clock_and_short_pauses_stay_inside() -> None:
    frames = [SILENT] * 50 + tone_frames(1.0) + [SILENT] * 15 + tone_frames(0.5) + [SILENT] * 40 + tone_frames(0.3)
    speech = CallerSpeech()
    spans = feed(speech, frames)
    assert len(spans) == 1  # the 0.3 s pause is inside the turn; the 0.8 s one ends it
    assert (spans[0].start_s, spans[0].end_s) == (1.1, 2.9)  # 100 ms first timestamp + 1 s of silence
    last = speech.finish()
    assert last is not None and last.start_s == 3.7 and last.end_s == 4.0
    assert speech.finish() is None


def test_latency_is_counted_once_per_caller_turn_and_never_while_the_caller_talks() -> None:
    speech = CallerSpeech()
    assert speech.answered(now=0.5) is None  # the greeting answers nobody
    feed(speech, tone_frames(0.4))  # last voiced frame arrives at t = 0.38
    assert speech.answered(now=1.0) == 0.38
    assert speech.answered(now=1.5) is None  # a second utterance of the bot is no new answer
    feed(speech, tone_frames(0.2))
    assert speech.answered(now=0.19) is None  # the bot starts while the caller is still talking


class Notes(QuietObserver):
    def __init__(self, call: object) -> None:
        self.notes: list[tuple[str, str]] = []
        self.spans: list[SpeechSpan] = []
        self.latencies: list[float] = []
        self.info: dict[str, str] = {}

    def note(self, kind: str, detail: str) -> None:
        self.notes.append((kind, detail))

    def caller_speech(self, span: SpeechSpan) -> None:
        self.spans.append(span)

    def response_latency(self, seconds: float) -> None:
        self.latencies.append(seconds)

    def agent_info(self, info: dict[str, str]) -> None:
        self.info = info


async def test_a_barge_in_after_the_bot_was_heard_in_full_is_only_a_note_and_latency_runs_from_speech() -> None:
    """The model reports a barge-in when the caller speaks after the greeting has played: nothing is
    cleared, nothing counted; the answer's latency runs from the end of the caller's speech."""
    seen: list[Notes] = []
    script = [Say("hello", 0.4, tone_hz=1000), WaitForAudio(2.0), BargeIn(), Say("answer", 0.4, tone_hz=600), Hold()]

    def observer(call: object) -> Notes:
        seen.append(Notes(call))
        return seen[-1]

    async with harness(script, observers=[observer]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.6)
            await call.stream(b"".join(tone_frames(1.0)))
            await call.silence(1.8)
            await call.stop()
    notes = seen[0]
    assert call.events("clear") == []
    assert [kind for kind, _ in notes.notes if kind in ("barge_in", "caller_spoke")] == ["caller_spoke"]
    assert len(notes.spans) == 1 and abs(notes.spans[0].start_s - 0.7) < 0.03 and abs(notes.spans[0].end_s - 1.7) < 0.03
    assert len(notes.latencies) == 1 and 0.2 < notes.latencies[0] < 1.0, notes.latencies
    assert notes.info["model"] == "ScriptedModel"


async def test_a_barge_in_while_audio_plays_is_counted_with_what_was_lost() -> None:
    seen: list[Notes] = []
    script = [Say("a long answer", 3.0, tone_hz=400), WaitForAudio(0.6), BargeIn(), Hold()]
    async with harness(script, observers=[lambda call: seen.append(Notes(call)) or seen[-1]]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(1.2)
            await call.stop()
    barge_ins = [detail for kind, detail in seen[0].notes if kind == "barge_in"]
    assert len(call.events("clear")) == 1 and len(barge_ins) == 1
    unheard = float(barge_ins[0].split()[1])
    assert 1.5 < unheard < 3.0, barge_ins  # about 2.4 s of the 3 s answer had not played

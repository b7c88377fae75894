"""Each caller utterance is heard whole and exactly once across a connection swap, whatever order the model's
events come in (telephony.bridge.continuity, telephony.bridge.utterance_keeper).

Unit level, on a fake clock: a caller's utterances are fed to the continuity 20 ms at a time as the bridge sends
them; a model end-points each one after its own hangover (sooner or later than the bridge does), answers it, and
transcribes it early (while the caller still speaks), at its end-point, at the start of its answer, late, or
never. At a swap, the audio given to the new connection must hold every utterance the old one had not taken,
whole, and nothing of one it had taken (answered, or transcribed before it answered).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strands.bidi.types import (
    BidiAudioStopEvent,
    BidiResponseStartEvent,
    BidiResponseStopEvent,
    BidiTranscriptStartEvent,
)

from telephony.bridge.answer import AnswerState
from telephony.bridge.continuity import Continuity

RATE = 16000
FRAME_S = 0.02
FRAME = int(RATE * FRAME_S) * 2
MODES = ("early", "endpoint", "answer", "late", "never")


@dataclass(frozen=True)
class Turn:
    """One caller utterance and what the model does with it (seconds)."""

    loud_s: float
    model_hangover_s: float
    """The model's end-pointing: sooner or later than the bridge's (0.5 s)."""
    reply_after_s: float
    """From the model's end-point to the start of its answer."""
    answer_s: float
    mode: str
    """When the model transcribes the caller: see MODES."""
    late_s: float
    gap_s: float
    """From the start of the answer to the caller's next utterance (the caller may talk over it)."""


@dataclass
class Timeline:
    loud: list[tuple[int, int]]
    """Each utterance's loud audio, in bytes sent."""
    events: list[tuple[float, int, Any]]
    """(time, order, event) the model sends."""
    taken_at: list[float]
    """When the old connection took each utterance (its answer, or a transcript before it)."""
    end_s: float


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def build(turns: list[Turn]) -> Timeline:
    loud: list[tuple[int, int]] = []
    events: list[tuple[float, int, Any]] = []
    taken_at: list[float] = []
    t = 0.4
    for index, turn in enumerate(turns):
        start, end = t, t + turn.loud_s
        frames = (round(start / FRAME_S), round(end / FRAME_S))
        loud.append((frames[0] * FRAME, frames[1] * FRAME))
        start, end = frames[0] * FRAME_S, frames[1] * FRAME_S
        endpoint = end + turn.model_hangover_s
        answer = endpoint + turn.reply_after_s
        transcript = {
            "early": start + min(0.2, turn.loud_s - 0.1),
            "endpoint": endpoint,
            "answer": answer,
            "late": answer + turn.answer_s + turn.late_s,
            "never": None,
        }[turn.mode]
        order = 2 if turn.mode in ("answer", "late") else 0
        events.append((answer, 1, BidiResponseStartEvent(response_id=f"r{index}")))
        events.append((answer + turn.answer_s, 3, BidiAudioStopEvent(content_id=f"a{index}")))
        events.append((answer + turn.answer_s, 4, BidiResponseStopEvent(response_id=f"r{index}")))
        if transcript is not None:
            events.append((transcript, order, BidiTranscriptStartEvent(role="user", content_id=f"t{index}")))
        taken_at.append(endpoint if turn.mode == "endpoint" else answer)
        t = answer + turn.gap_s
    events.sort(key=lambda item: (item[0], item[1]))
    return Timeline(loud, events, taken_at, max(time for time, _, _ in events) + 1.0)


def continuity(clock: FakeClock) -> Continuity:
    return Continuity(
        cast(Any, None),
        None,
        cast(Any, None),
        cast(Any, logging.getLogger("test_exactly_once")),
        answer=AnswerState(),
        sample_rate=RATE,
        hold_bytes=0,
        clock=clock,
    )


def play_until(timeline: Timeline, swap_at: float) -> tuple[bytes, int]:
    """Feed the caller's audio and the model's events up to the swap; (carried, bytes sent)."""
    clock = FakeClock()
    side = continuity(clock)
    pending = list(timeline.events)
    loud = np.zeros(round(swap_at / FRAME_S) + 1, dtype=bool)
    for first, last in timeline.loud:
        loud[first // FRAME : last // FRAME] = True
    frame = (0.3 * 32767 * np.sin(2 * math.pi * 300 * np.arange(FRAME // 2) / RATE)).astype("<i2").tobytes()
    sent = 0
    for index in range(round(swap_at / FRAME_S)):
        clock.now = (index + 1) * FRAME_S
        side.audio_sent(frame if loud[index] else bytes(FRAME))
        sent += FRAME
        while pending and pending[0][0] <= clock.now + 1e-9:
            side.agent_event(pending.pop(0)[2])
    return side.keeper.unheard(clock.now), sent


def check_exactly_once(turns: list[Turn], swap_at: float) -> None:
    timeline = build(turns)
    carried, sent = play_until(timeline, swap_at)
    from_byte = sent - len(carried)
    now = round(swap_at / FRAME_S) * FRAME_S
    for index, ((first, last), taken_at) in enumerate(zip(timeline.loud, timeline.taken_at, strict=True)):
        if first >= sent:
            break  # not said yet
        if taken_at <= now + 1e-9:
            assert from_byte >= last, f"utterance {index} was taken by the old connection but given again"
        else:
            assert from_byte <= first, f"utterance {index} was not taken, but not all of it was given again"


turn_strategy = st.builds(
    Turn,
    loud_s=st.floats(0.3, 1.6),
    model_hangover_s=st.floats(0.15, 1.0),
    reply_after_s=st.floats(0.0, 0.8),
    answer_s=st.floats(0.3, 2.5),
    mode=st.sampled_from(MODES),
    late_s=st.floats(0.0, 3.0),
    gap_s=st.floats(0.05, 2.5),
)


@settings(max_examples=300, deadline=None)
@given(turns=st.lists(turn_strategy, min_size=1, max_size=4), swap_share=st.floats(0.0, 1.0))
def test_every_utterance_is_given_once_whatever_the_order_of_events(turns: list[Turn], swap_share: float) -> None:
    turns = [Turn(**{**turn.__dict__, "mode": turns[0].mode}) for turn in turns]  # one model, one habit
    turns = transcribed_in_turn(turns)
    timeline = build(turns)
    check_exactly_once(turns, max(FRAME_S, swap_share * timeline.end_s))


def transcribed_in_turn(turns: list[Turn]) -> list[Turn]:
    """A late transcript still comes before the caller's next utterance has ended.

    Nothing ties a transcript to its utterance, so one that arrives after the next utterance is over is read as
    that utterance's (see test_a_transcript_two_turns_late_is_taken_for_the_wrong_utterance)."""
    kept = []
    for turn, following in zip(turns, [*turns[1:], None], strict=True):
        if following is not None:
            latest = turn.gap_s + following.loud_s - turn.answer_s
            turn = Turn(**{**turn.__dict__, "late_s": max(0.0, min(turn.late_s, latest))})
        kept.append(turn)
    return kept


@pytest.mark.xfail(strict=True, reason="open: a transcript arriving after the next utterance ended is taken for it")
def test_a_transcript_two_turns_late_is_taken_for_the_wrong_utterance() -> None:
    """Found by the property test above (before its bound): the first turn's transcript comes 3 s after its
    answer, after the caller's third utterance has ended, and the continuity counts that utterance as heard."""
    first = Turn(1.0, 1.0, 0.0, 1.0, "late", 3.0, 0.25)
    turns = [first, Turn(1.0, 0.5, 0.0, 1.0, "late", 0.0, 1.0), *[Turn(1.0, 1.0, 0.0, 1.0, "late", 0.0, 1.0)] * 2]
    check_exactly_once(turns, 6.82875)


@settings(max_examples=100, deadline=None)
@given(turn=turn_strategy, mode=st.sampled_from(MODES), swap_after_answer_s=st.floats(0.0, 4.0))
def test_a_swap_after_an_answer_gives_nothing_again(turn: Turn, mode: str, swap_after_answer_s: float) -> None:
    """Two turns; the swap comes after the second answer started, whenever the model transcribed."""
    first = Turn(1.0, 0.6, 0.3, 1.2, "endpoint", 0.0, 1.0)
    second = Turn(turn.loud_s, turn.model_hangover_s, turn.reply_after_s, turn.answer_s, mode, turn.late_s, 5.0)
    timeline = build([first, second])
    check_exactly_once([first, second], timeline.taken_at[1] + 0.02 + swap_after_answer_s)


def test_the_case_found_a_model_transcribing_at_its_answer_swapped_2_2_s_later() -> None:
    """The model end-points sooner than the bridge (0.2 s), transcribes the caller only as it starts answering,
    and the scheduled swap comes 2.2 s after it answered: the question must not be given again."""
    turns = [Turn(1.0, 0.2, 0.05, 1.2, "answer", 0.0, 1.5), Turn(0.8, 0.2, 0.05, 1.0, "answer", 0.0, 5.0)]
    timeline = build(turns)
    answered = timeline.taken_at[1] + 1.0
    check_exactly_once(turns, answered + 2.2)


def test_a_late_transcript_does_not_take_the_start_of_the_next_utterance() -> None:
    """The transcript of the first turn arrives after its answer, while the caller is pausing in the next."""
    turns = [Turn(1.0, 0.6, 0.1, 0.5, "late", 1.3, 0.3), Turn(1.4, 0.6, 0.1, 0.5, "never", 0.0, 5.0)]
    timeline = build(turns)
    check_exactly_once(turns, timeline.taken_at[1] - 0.05)

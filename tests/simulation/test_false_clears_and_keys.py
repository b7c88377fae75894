"""What the caller really said, against what the bridge did: false clears (the model took noise for a barge-in),
barge-ins on a lossy line, a recorded caller's barge-ins, and keypresses the bot must answer (synthetic calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from telephony.simulation.caller.simulated_caller import ULAW_SILENCE, Heard
from telephony.simulation.scenarios.caller_truth import SpeechSpan, speech_spans, talking_over_the_bot
from telephony.simulation.scenarios.expectations import CallOutcome, barge_ins, evaluate
from telephony.simulation.scenarios.false_clears import false_clears
from telephony.simulation.scenarios.scenario import CallerStep
from telephony.simulation.scenarios.scenario_caller import StepLog
from telephony.simulation.scenarios.scenario_file import load_scenario

LOUD = b"\x10" * 160
"""A loud μ-law frame (about -8 dBFS)."""


def media(t: float, stamp: int) -> dict[str, Any]:
    return {"t": t, "kind": "twilio_in", "message": {"event": "media", "media": {"timestamp": str(stamp)}}}


def clear(t: float) -> dict[str, Any]:
    return {"t": t, "kind": "twilio_out", "message": {"event": "clear"}}


def frames_until(seconds: float) -> list[dict[str, Any]]:
    """A caller frame every 20 ms, arriving on time (timestamp 120 at 0 s)."""
    return [media(index * 0.02, 120 + index * 20) for index in range(int(seconds / 0.02))]


async def expect_findings(tmp_path: Path, expect: str, outcome: CallOutcome) -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text("caller:\n  - say: hi\nexpect:\n" + expect, encoding="utf-8")
    return [str(finding) for finding in await evaluate(load_scenario(path).expect, outcome)]


async def test_a_clear_with_the_caller_silent_is_false_and_one_during_speech_is_not(tmp_path: Path) -> None:
    records = sorted(
        [*frames_until(12.0), clear(1.0), clear(4.0), clear(5.6), clear(9.0)], key=lambda record: record["t"]
    )
    speech = [SpeechSpan(start_ms=3120, end_ms=5120, at_s=3.0)]  # the caller spoke from 3 s to 5 s
    outcome = CallOutcome(transcript={}, records=records, caller_speech=speech)
    # 1.0: before any speech; 4.0: during it; 5.6: 0.6 s after it (a late detector); 9.0: long after.
    assert false_clears(outcome) == [1.0, 9.0]
    found = await expect_findings(tmp_path, "  barge_in: {max_false_clears: 1}\n", outcome)
    assert found == [
        f"{tmp_path / 's.yaml'}:4 expect.barge_in.max_false_clears: 2 clear(s) with the caller silent (at 1.0 s, "
        "9.0 s); at most 1 expected: the model took the line's noise for the caller talking over it"
    ]
    assert await expect_findings(tmp_path, "  barge_in: {max_false_clears: 2}\n", outcome) == []


def test_speech_is_read_from_the_callers_clean_frames_and_over_the_bot_when_it_was_heard() -> None:
    said = [Heard(index * 0.02, ULAW_SILENCE, 120 + index * 20) for index in range(300)]
    for index in (*range(50, 100), *range(110, 120), *range(200, 230)):  # 1-2 s (and a 0.2 s pause), 4-4.6 s
        said[index] = Heard(index * 0.02, LOUD, 120 + index * 20)
    spans = speech_spans(said)
    assert spans == [SpeechSpan(1120, 2500, 1.0), SpeechSpan(4120, 4700, 4.0)]
    bot = [Heard(3.5 + index * 0.02, LOUD) for index in range(60)]  # the caller hears the bot from 3.5 s to 4.7 s
    assert talking_over_the_bot(spans, bot) == [spans[1]]


def test_on_a_lossy_line_a_barge_in_is_timed_from_the_first_frame_that_arrived() -> None:
    records = [media(4.98, 5080), media(5.04, 5140), clear(5.3)]  # the frame stamped 5100 was lost
    step = StepLog(CallerStep("say", text="stop", over_the_bot_ms=800), at=5.0, timestamp=5100)
    [(_, spoke, cleared, _)] = barge_ins(CallOutcome(transcript={}, records=records, steps=[step]))
    assert (spoke, cleared) == (5.04, 5.3)


def told(t: float, digit: str) -> dict[str, Any]:
    return {"t": t, "kind": "agent_text", "text": f"The caller pressed {digit} on their keypad."}


def answer(t: float) -> dict[str, Any]:
    return {"t": t, "kind": "agent", "event": {"type": "bidi_response_start"}}


async def test_keys_must_reach_the_agent_and_be_answered(tmp_path: Path) -> None:
    answered = CallOutcome(transcript={}, records=[told(3.0, "1"), answer(3.1), told(6.0, "2"), answer(6.2)])
    assert await expect_findings(tmp_path, "  keys: '12'\n", answered) == []
    ignored = CallOutcome(transcript={}, records=[told(3.0, "1"), told(6.0, "2"), answer(6.2)])
    [found] = await expect_findings(tmp_path, "  keys: '12'\n", ignored)
    assert found.endswith(
        "the caller pressed 1 (the agent was told at 3.0 s) and the bot did not answer before the next key"
    )
    [missing] = await expect_findings(tmp_path, "  keys: '3'\n", answered)
    assert missing.endswith("the agent was never told of key 3 (keys it was told of: 12)")

"""Verdicts that survive real models and never pass a call that did nothing: argument matching (sets, case,
regular expressions), what every call must do with or without `expect:`, and `heard:` checked against what the
caller said. On synthetic calls; real ones are in test_scenarios.py and test_own_agent.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from telephony.simulation.scenarios.arguments import arguments_match
from telephony.simulation.scenarios.call_checks import call_findings
from telephony.simulation.scenarios.expectations import CallOutcome, evaluate
from telephony.simulation.scenarios.scenario_caller import StepLog
from telephony.simulation.scenarios.scenario_file import load_scenario


@pytest.mark.parametrize(
    ("actual", "expected", "ordered", "matches"),
    [
        (["Tuesday", "monday"], ["Monday", "tuesday"], False, True),  # a set: any order, any case
        (["Tuesday", "monday"], ["Monday", "tuesday"], True, False),  # ordered_lists: item by item
        (["Monday", "Tuesday"], ["monday", "TUESDAY"], True, True),
        (["Monday", "Tuesday", "Friday"], ["Monday", "Tuesday"], False, False),  # every item must be expected
        (["Monday"], ["Monday", "Tuesday"], False, False),
        ([{"day": "Monday", "time": "9:00"}], [{"day": "monday"}], False, True),  # items match as subsets
        ("9.30", "re:^9[:.]?30$", False, True),
        ("9:30 am", "re:^9[:.]?30$", False, False),
        (930, "re:^9:?30$", False, True),  # any argument, as text
        (["9:30", "10:00"], ["re:^10", "re:^9"], False, True),
        ("Jane Doe", "re:(?-i:jane)", False, False),  # case only when asked
        ("2", 2, False, True),
        (2.0, 2, False, True),
        ("Tuesday", "Tuesday ", False, True),
        (True, "true", False, True),
        ("Tuesday", ["Tuesday"], False, False),
    ],
)
def test_arguments_match_the_way_the_reference_says(actual: Any, expected: Any, ordered: bool, matches: bool) -> None:
    assert arguments_match(actual, expected, ordered) is matches


TRANSCRIPT: dict[str, Any] = {
    "duration_s": 12.0,
    "ended": {"reason": "agent ended the call (bye)", "by": "agent"},
    "turns": [
        {"role": "bot", "text": "Hello.", "start": 0.5, "end": 1.5},
        {"role": "tool", "name": "pick_days", "input": {"days": ["Tuesday", "Monday"], "time": "9.30"}, "start": 4.0},
    ],
    "notes": [],
}


async def test_expected_lists_and_patterns_in_a_scenario(tmp_path: Path) -> None:
    def expect(tool: str) -> Any:
        path = tmp_path / "s.yaml"
        path.write_text(f"caller:\n  - say: hi\nexpect:\n  tools:\n    - {tool}\n", encoding="utf-8")
        return load_scenario(path).expect

    outcome = CallOutcome(transcript=TRANSCRIPT, records=[])
    loose = "{name: pick_days, input: {days: [monday, tuesday], time: 're:^9[:.]30$'}}"
    assert await evaluate(expect(loose), outcome) == []
    strict = "{name: pick_days, input: {days: [monday, tuesday]}, ordered_lists: true}"
    [finding] = await evaluate(expect(strict), outcome)
    assert "pick_days was called at 4.0 s with (days=['Tuesday', 'Monday'], time='9.30'), not with" in str(finding)


def scenario(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return load_scenario(path)


def test_a_call_whose_agent_failed_fails_though_nothing_was_expected(tmp_path: Path) -> None:
    bare = scenario(tmp_path, "caller:\n  - say: hi\n")
    failed = dict(TRANSCRIPT, notes=[{"t": 0.4, "note": "error", "detail": "agent failed to start: no credentials"}])
    [finding] = call_findings(bare, CallOutcome(transcript=failed, records=[]), brain_played=False)
    assert str(finding) == (
        "the agent failed at 0.4 s and the caller heard the bridge's apology: agent failed to start: no credentials"
    )
    assert call_findings(bare, CallOutcome(transcript=TRANSCRIPT, records=[]), brain_played=False) == []


def test_a_prompt_field_the_brain_could_not_fill_fails_the_call(tmp_path: Path) -> None:
    brain = "brain:\n  - on: greeting\n    say: 'Welcome to {prompt:Shop}.'\n"
    brainy = scenario(tmp_path, "caller:\n  - say: hi\n" + brain)
    outcome = CallOutcome(transcript=TRANSCRIPT, records=[], brain_notes=["prompt field 'Shop'"])
    [finding] = call_findings(brainy, outcome, brain_played=True)
    assert "the scripted brain had nothing to say for {prompt:Shop}: the agent's system prompt has no such" in str(
        finding
    )


HEARD = """\
caller:
  - say: I would like to book on Tuesday.
  - say: Nine thirty please.
brain:
  - on: caller
    heard: book on Tuesday
    say: Which time?
  - on: caller
    heard: Nine thirty please.
    say: Booked.
"""


def media(t: float, stamp: int) -> dict[str, Any]:
    return {"t": t, "kind": "twilio_in", "message": {"event": "media", "media": {"timestamp": str(stamp)}}}


def test_heard_is_checked_against_what_the_caller_had_said(tmp_path: Path) -> None:
    """The brain answers caller turns in order; when a pause split the first line in two, it is out of step."""
    written = scenario(tmp_path, HEARD)
    steps = [StepLog(step, at=2.0 + 6 * n, timestamp=2000 + 6000 * n) for n, step in enumerate(written.caller)]
    records = [media(2.01, 2000), media(8.01, 8000)]

    def outcome(*recognised: float) -> CallOutcome:
        callers = [
            {"role": "caller", "text": text, "start": at - 1, "end": at, "recognised_at": at}
            for text, at in zip(("book on Tuesday", "Nine thirty please."), recognised, strict=True)
        ]
        return CallOutcome(transcript=dict(TRANSCRIPT, turns=callers), records=records, steps=steps)

    assert call_findings(written, outcome(5.0, 10.5), brain_played=True) == []
    # The first line was heard as two turns: the brain's second turn answered it before the caller's second line.
    [finding] = call_findings(written, outcome(4.0, 5.0), brain_played=True)
    text = str(finding)
    assert text.startswith(f"{tmp_path / 's.yaml'}:8 brain[1]: heard: the brain answered with this turn at 5.0 s")
    assert "as if the caller had said 'Nine thirty please.', but since its previous caller turn the caller" in text
    assert "nothing: the brain is out of step with the caller" in str(finding)
    assert call_findings(written, outcome(5.0, 10.5), brain_played=False) == []  # a real model: no brain to check


async def test_findings_come_in_the_order_of_the_file_not_of_the_checks(tmp_path: Path) -> None:
    expect = scenario(
        tmp_path,
        "caller:\n  - say: hi\nexpect:\n  hang_up: {by: caller}\n  tools: [transfer_call]\n  bot_says: [Goodbye]\n",
    ).expect
    found = await evaluate(expect, CallOutcome(transcript=TRANSCRIPT, records=[]))
    assert [finding.where.field for finding in found if finding.where] == [
        "expect.hang_up.by",
        "expect.tools[0]",
        "expect.bot_says[0]",
    ]

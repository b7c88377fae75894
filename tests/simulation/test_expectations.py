"""Expectations checked against a finished call (synthetic ones here; real calls in test_scenarios.py)."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from telephony.simulation.scenarios.expectations import CallOutcome, barge_ins, evaluate
from telephony.simulation.scenarios.goal_caller import PatternJudge, RuleCaller
from telephony.simulation.scenarios.junit import junit_xml
from telephony.simulation.scenarios.runner import RunResult, ScenarioResult
from telephony.simulation.scenarios.scenario import CallerStep, GoalCaller
from telephony.simulation.scenarios.scenario_caller import StepLog
from telephony.simulation.scenarios.scenario_file import load_scenario

TRANSCRIPT: dict[str, Any] = {
    "duration_s": 20.0,
    "ended": {"reason": "agent ended the call (bye)", "by": "agent"},
    "turns": [
        {"role": "bot", "text": "Thank you for calling Riverside Family Clinic.", "start": 0.5, "end": 3.0},
        {"role": "caller", "text": "book Tuesday", "start": 5.0, "end": 5.0},
        {
            "role": "tool",
            "name": "find_open_slots",
            "input": {"day": "Tuesday"},
            "start": 5.0,
            "end": 5.1,
            "status": "success",
        },
        {"role": "bot", "text": "Open on Tuesday: 9:30.", "start": 5.6, "end": 8.0},
        {
            "role": "tool",
            "name": "book_appointment",
            "input": {"day": "Tuesday", "time": "9:30"},
            "start": 10.0,
            "status": "error",
        },
        {"role": "bot", "text": "Sorry, that slot has gone. Goodbye!", "start": 10.5, "end": 14.0},
        {"role": "tool", "name": "end_conversation", "input": {"reason": "bye"}, "start": 14.0, "status": "success"},
    ],
    "barge_ins": [],
    "notes": [{"t": 20.0, "note": "hangup", "detail": "agent ended the call (bye)"}],
}


CALLER = "caller:\n  - say: hi\n"
TALKS_OVER = "caller:\n  - say: stop\n    over_the_bot_ms: 800\n"


def scenario(tmp_path: Path, expect: str, caller: str = CALLER) -> Any:
    path = tmp_path / "s.yaml"
    path.write_text(caller + "expect:\n" + expect, encoding="utf-8")
    return load_scenario(path)


async def findings(tmp_path: Path, expect: str, outcome: CallOutcome | None = None, caller: str = CALLER) -> list[str]:
    outcome = outcome or CallOutcome(transcript=TRANSCRIPT, records=[], latencies=[0.6, 0.7, 2.5])
    expectations = scenario(tmp_path, expect, caller).expect
    return [str(finding) for finding in await evaluate(expectations, outcome, PatternJudge())]


async def test_a_call_that_did_what_was_expected_has_no_findings(tmp_path: Path) -> None:
    expect = """\
  bot_says:
    - contains: riverside family clinic
      turn: 1
    - matches: "open on tuesday: 9:30"
  tools:
    - name: find_open_slots
      input: {day: tuesday}
    - end_conversation
  no_tools: [transfer_call]
  hang_up: {by: bot}
  latency: {max_s: 3}
  duration: {max_s: 30}
"""
    assert await findings(tmp_path, expect) == []


async def test_each_failure_names_the_expectation_and_the_moment(tmp_path: Path) -> None:
    expect = """\
  bot_says:
    - contains: Riverside
      turn: 2
    - contains: booked
  tools:
    - name: book_appointment
      input: {day: Tuesday}
    - name: transfer_call
  hang_up: {by: caller, within_s: 2}
  no_apology: true
  latency: {turn_max_s: 1.0}
  duration: {max_s: 10}
"""
    found = await findings(tmp_path, expect)
    path = str(tmp_path / "s.yaml")
    assert (
        found[0] == f"{path}:5 expect.bot_says[0]: expected bot turn 2 (at 5.6 s) to say 'Riverside'; "
        "it said 'Open on Tuesday: 9:30.'"
    )
    assert found[1].startswith(f"{path}:7 expect.bot_says[1]: the bot never said 'booked' (bot turns: 1 at 0.5 s:")
    assert any("apologised ('Sorry') in bot turn 3 (at 10.5 s)" in item for item in found)
    assert f"{path}:9 expect.tools[0]: book_appointment was called at 10.0 s but failed (status error)" in found
    assert any(item.startswith(f"{path}:11 expect.tools[1]: transfer_call was never called") for item in found)
    assert any("expected the caller to end the call; it was ended by bot at 20.0 s" in item for item in found)
    assert any("the line closed 6.0 s after the bot's last words ended (at 14.0 s)" in item for item in found)
    assert any("took 2.50 s to answer caller turn 3; budget 1 s" in item for item in found)
    assert any("the call lasted 20.0 s; expected at most 10 s" in item for item in found)


async def test_tool_order_and_argument_subsets(tmp_path: Path) -> None:
    out_of_order = "  tools:\n    - book_appointment\n    - find_open_slots\n"
    assert "find_open_slots was called, but not after the tools before it" in " ".join(
        await findings(tmp_path, out_of_order)
    )
    assert await findings(tmp_path, out_of_order + "  tools_in_order: false\n") == [
        f"{tmp_path / 's.yaml'}:5 expect.tools[0]: book_appointment was called at 10.0 s but failed (status error)"
    ]
    wrong = await findings(tmp_path, "  tools:\n    - name: find_open_slots\n      input: {day: Friday}\n")
    assert "find_open_slots was called at 5.0 s with (day='Tuesday'), not with (day='Friday')" in wrong[0]


def media(t: float, stamp: int) -> dict[str, Any]:
    return {
        "t": t,
        "kind": "twilio_in",
        "message": {"event": "media", "media": {"timestamp": str(stamp), "payload": ""}},
    }


def out(t: float, event: str) -> dict[str, Any]:
    """A message to Twilio; a media one carries one 20 ms frame."""
    message: dict[str, Any] = {"event": event}
    if event == "media":
        message["media"] = {"payload": base64.b64encode(b"\xff" * 160).decode()}
    return {"t": t, "kind": "twilio_out", "message": message}


async def test_barge_in_is_timed_from_the_callers_first_frame_to_the_clear(tmp_path: Path) -> None:
    records = [
        media(4.98, 5080),
        out(5.0, "media"),
        media(5.00, 5100),
        out(5.02, "media"),
        out(5.31, "clear"),
        out(5.32, "media"),  # a frame of the interrupted reply: stale
        {"t": 6.5, "kind": "agent", "event": {"type": "bidi_response_start"}},
        out(6.6, "media"),
    ]
    step = StepLog(CallerStep("say", text="stop", over_the_bot_ms=800), at=5.0, timestamp=5100)
    outcome = CallOutcome(transcript=TRANSCRIPT, records=records, steps=[step])
    [(_, spoke, cleared, stale)] = barge_ins(outcome)
    assert (spoke, cleared, stale) == (5.0, 5.31, 1)
    found = await findings(tmp_path, "  barge_in: {clear_within_ms: 200, nothing_stale: true}\n", outcome, TALKS_OVER)
    assert "clear came 310 ms after the caller started talking at 5.00 s; expected within 200 ms" in found[0]
    assert "1 frame(s) of the interrupted reply were sent after the clear at 5.31 s" in found[1]
    no_barge = CallOutcome(transcript=TRANSCRIPT, records=records)
    assert (
        "no caller step talks over the bot"
        in (await findings(tmp_path, "  barge_in: {nothing_stale: true}\n", no_barge, TALKS_OVER))[0]
    )


async def test_checks_run_user_functions_with_the_call(tmp_path: Path) -> None:
    expect = "  checks:\n    - call: tests.simulation.test_expectations:needs_a_tool\n      with: {name: ask_policy}\n"
    assert (await findings(tmp_path, expect))[0].endswith("needs_a_tool: ask_policy was not used")
    missing = "  checks:\n    - call: tests.simulation.test_expectations:no_such_function\n"
    assert "cannot load tests.simulation.test_expectations:no_such_function" in (await findings(tmp_path, missing))[0]


def needs_a_tool(call: CallOutcome, name: str) -> None:
    assert any(tool["name"] == name for tool in call.tool_calls), f"{name} was not used"


async def test_the_offline_judge_and_goal_caller_follow_the_scenarios_rules(tmp_path: Path) -> None:
    expect = """\
  judge:
    rubric:
      - criterion: the bot greets with the clinic's name
        offline: "^bot: .*Riverside"
      - criterion: the bot books the slot
        offline: "^bot: .*booked"
      - criterion: the bot is polite
"""
    found = await findings(tmp_path, expect)
    assert len(found) == 2 and "'the bot books the slot' failed: nothing in the transcript matches" in found[0]
    assert "no offline pattern: run with --text-model" in found[1]
    caller = RuleCaller(
        GoalCaller(
            goal="book Tuesday",
            opening="Hi, I need a check-up.",
            rules=(("which day", "Tuesday, please."),),
            done_when="booked",
        )
    )
    assert await caller.next_line([]) == "Hi, I need a check-up."
    assert await caller.next_line([("bot", "Which day suits you?")]) == "Tuesday, please."
    assert await caller.next_line([("bot", "You are booked for Tuesday.")]) == "Thank you, that's everything. Goodbye."
    assert await caller.next_line([("bot", "Goodbye!")]) is None


def test_junit_xml_has_a_case_per_scenario_with_its_failures(tmp_path: Path) -> None:
    passing = scenario(tmp_path, "  duration: {max_s: 5}\n")
    results = [
        ScenarioResult(passing, [RunResult(1, seconds=12.5, model="scripted brain", recording=tmp_path / "rec")]),
        ScenarioResult(passing, [RunResult(1, seconds=3.0, error="cannot load the agent factory x:y: boom")]),
    ]
    root = ET.fromstring(junit_xml(results))
    assert root.get("tests") == "2" and root.get("failures") == "1"
    cases = root.findall("testsuite/testcase")
    assert cases[0].get("time") == "12.500" and cases[0].find("failure") is None
    assert "model: scripted brain" in (cases[0].findtext("system-out") or "")
    failure = cases[1].find("failure")
    assert failure is not None and failure.get("message") == "cannot load the agent factory x:y: boom"

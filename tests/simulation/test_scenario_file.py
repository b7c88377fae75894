"""Scenario files: what they mean, and mistakes reported as file:line: field: what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from telephony.simulation.scenarios.scenario import ScenarioError
from telephony.simulation.scenarios.scenario_file import find_scenarios, load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "clinic" / "scenarios"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(write(tmp_path, text))
    return str(caught.value)


def test_every_example_scenario_loads() -> None:
    scenarios = [load_scenario(path) for path in find_scenarios([EXAMPLES])]
    assert len(scenarios) >= 7
    assert all(
        scenario.brain is not None and scenario.agent == "examples.clinic.agent:create_agent" for scenario in scenarios
    )


def test_a_scenario_reads_caller_brain_and_expectations(tmp_path: Path) -> None:
    scenario = load_scenario(
        write(
            tmp_path,
            """\
name: booking
runs: 5
pass_threshold: 0.8
caller:
  - say: hello there
  - say: stop talking
    over_the_bot_ms: 700
  - press: "12#"
  - silence_s: 1.5
  - hang_up
brain:
  - on: greeting
    say: "{prompt:Greeting}"
  - on: key
    key: "1"
    tools: [find_open_slots]
    say: "{result}"
    then:
      - name: end_conversation
        input: {reason: done}
expect:
  bot_says:
    - Riverside
    - matches: "book(ed)? .* Tuesday"
      turn: 2
  tools:
    - name: book_appointment
      input: {day: Tuesday}
  transfer: "+15005550010"
  hang_up: {by: bot, within_s: 2}
  barge_in: {clear_within_ms: 500, nothing_stale: true}
  latency: {turn_max_s: 3, p50_max_s: 1.5}
""",
        )
    )
    assert [step.kind for step in scenario.caller] == ["say", "say", "press", "silence", "hang_up"]
    assert scenario.caller[1].over_the_bot_ms == 700 and scenario.caller[2].text == "12#"
    assert scenario.caller[1].where is not None and scenario.caller[1].where.line == 6
    assert scenario.runs == 5 and scenario.passes_needed == 4
    assert scenario.brain is not None and [turn.on for turn in scenario.brain.turns] == ["greeting", "key"]
    assert scenario.brain.turns[1].then[0].input == {"reason": "done"}
    expect = scenario.expect
    assert expect.says[0].pattern.search("at riverside") and expect.says[1].turn == 2
    assert expect.tools[0].input == {"day": "Tuesday"} and expect.tools[0].where.line == 27
    assert expect.transfer is not None and expect.transfer[0] == "+15005550010"
    assert expect.clear_within_ms is not None and expect.clear_within_ms[0] == 500 and expect.nothing_stale


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("caller:\n  - say: hi\n  - shout: hello\n", ":3: caller[1].shout: unknown field"),
        ("caller:\n  - say: hi\n    over_the_bot_ms: soon\n", ":3: caller[0].over_the_bot_ms: expected a whole number"),
        ('caller:\n  - press: "12x"\n', ":2: caller[0].press: keypad digits are 0-9, * and #"),
        (
            "caller:\n  - say: hi\nexpect:\n  tools:\n    - input: {day: Monday}\n",
            ":5: expect.tools[0].name: is required",
        ),
        (
            'caller:\n  - say: hi\nexpect:\n  bot_says:\n    - matches: "(unclosed"\n',
            ":5: expect.bot_says[0].matches: not a regular expression",
        ),
        (
            "caller:\n  - say: hi\nexpect:\n  hang_up: {by: robot}\n",
            ":4: expect.hang_up.by: expected bot, caller or server",
        ),
        (
            "caller:\n  - say: hi\nbrain:\n  - on: whenever\n    say: x\n",
            ":4: brain[0].on: expected one of greeting, caller, key, text",
        ),
        ("caller:\n  - say: hi\nbrain:\n  - on: caller\n", ":4: brain[0]: does nothing"),
        ("caller:\n  - say: hi\nruns: 0\n", ":3: scenario.runs: must be at least 1"),
        (
            "caller:\n  - say: hi\nsetup:\n  - call: not a function\n",
            ":4: setup[0].call: expected 'package.module:function'",
        ),
        ("caller:\n  - say: [unclosed\n", ":3: not valid YAML"),
        ("name: nothing to do\n", ":1: caller: is required"),
        ("caller:\n  - play: missing.wav\n", ":2: caller[0].play: "),
    ],
)
def test_mistakes_name_the_file_line_and_field(tmp_path: Path, text: str, message: str) -> None:
    error = error_of(tmp_path, text)
    assert error.startswith(str(tmp_path / "scenario.yaml")), error
    assert message in error, error


def test_yes_no_on_and_off_stay_words(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, "caller:\n  - say: no\nbrain:\n  - on: caller\n    say: yes\n"))
    assert scenario.caller[0].text == "no" and scenario.brain is not None and scenario.brain.turns[0].say == "yes"


def test_folders_are_searched_and_missing_paths_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.yaml").write_text("caller: [{say: hi}]\n")
    (tmp_path / "a" / "notes.txt").write_text("not a scenario\n")
    assert [path.name for path in find_scenarios([tmp_path])] == ["one.yaml"]
    with pytest.raises(ScenarioError, match="no such file or folder"):
        find_scenarios([tmp_path / "nowhere"])

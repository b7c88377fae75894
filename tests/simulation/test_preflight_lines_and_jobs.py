"""The checks before any call cover what a run on a bad line, side by side or with ``--check`` adds: ``line:`` and
its voice, ``expect.keys`` and ``expect.barge_in.max_false_clears``, every mistake in every file (``-k`` or not),
and a scenario written from a recording that reads out a tool's result only where the brain has it. No call is
placed by these tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from telephony.cli import main
from telephony.recording.format import Recording
from telephony.simulation.replay.from_recording import brain_from
from telephony.simulation.scenarios.scenario_file import read_scenario

CLINIC = "agent: examples.clinic.agent:create_agent\n"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_every_mistake_of_a_line_is_reported_at_once_with_the_rest_of_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.yaml",
        "caller: [{say: hi}]\n"
        "line:\n"
        "  noise: {kind: rain, level_dbfs: -40}\n"
        "  packet_loss: 1.5\n"
        "  voice: xx-nowhere\n"
        "  echo: true\n"
        "expect:\n"
        "  keys: '12a'\n"
        "  barge_in: {max_false_clears: -1}\n",
    )
    _, problems = read_scenario(path)
    found = [str(problem) for problem in problems]
    assert [problem.line for problem in problems] == [3, 4, 5, 6, 8, 9], found
    assert found[0].endswith("line.noise.kind: expected one of white, babble, hum, got 'rain'")
    assert "line.voice: espeak-ng has no voice 'xx-nowhere'" in found[2]
    assert found[3].endswith(
        "line.echo: unknown field; expected one of noise, packet_loss, jitter_ms, loudness, voice, seed"
    )
    assert found[4].endswith("expect.keys: keypad digits are 0-9, * and #, got '12a'")
    assert found[5].endswith("expect.barge_in.max_false_clears: must be at least 0, got -1")


def test_false_clears_need_no_step_over_the_bot_but_clear_timing_does(tmp_path: Path) -> None:
    """False clears are counted against whatever the caller said; a clear's timing needs a barge-in to time."""
    quiet = write(tmp_path, "quiet.yaml", "caller: [{say: hi}]\nexpect:\n  barge_in: {max_false_clears: 0}\n")
    scenario, problems = read_scenario(quiet)
    assert scenario is not None and problems == []
    assert scenario.expect.barge_in.max_false_clears is not None
    timed = write(tmp_path, "timed.yaml", "caller: [{say: hi}]\nexpect:\n  barge_in: {clear_within_ms: 600}\n")
    [problem] = read_scenario(timed)[1]
    assert str(problem).startswith(f"{timed}:3: expect.barge_in: no caller step talks over the bot")


def test_keys_are_refused_of_a_caller_with_a_goal(tmp_path: Path) -> None:
    path = write(tmp_path, "goal.yaml", "caller: {goal: Book a check-up.}\nexpect:\n  keys: '1'\n")
    [problem] = read_scenario(path)[1]
    assert str(problem) == (
        f"{path}:3: expect.keys: a caller with a goal never presses keys: write the caller as steps, with a press "
        "step for each key"
    )


def test_check_runs_the_checks_against_the_agent_in_every_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--check`` is the run's own preflight: the agent's prompt, and the other file's mistakes, even with -k."""
    brain = 'brain:\n  - on: greeting\n    say: "Welcome to {prompt:Clinic nam}."\n'
    write(tmp_path, "a.yaml", "name: prompt\n" + CLINIC + "caller:\n  - say: hi\n" + brain)
    write(tmp_path, "b.yaml", "name: other\ncaller: [{say: hi}]\nline: {jitter_ms: lots}\n")
    assert main(["test", str(tmp_path), "--check", "-k", "prompt"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("voicebot test: 2 mistake(s) in the scenarios, so no call was placed:\n"), err
    assert f"{tmp_path / 'a.yaml'}:6: brain[0].say: {{prompt:Clinic nam}}: the system prompt of " in err
    assert f"{tmp_path / 'b.yaml'}:3: line.jitter_ms: expected a number, got str 'lots'" in err
    write(tmp_path, "a.yaml", "name: prompt\n" + CLINIC + "caller:\n  - say: hi\n" + brain.replace("nam}", "name}"))
    write(tmp_path, "b.yaml", "name: other\ncaller: [{say: hi}]\nline: {jitter_ms: 40}\n")
    assert main(["test", str(tmp_path), "--check", "-k", "prompt"]) == 0
    out = capsys.readouterr().out
    assert "1 scenario(s) read and checked, no call placed" in out and "b.yaml" not in out


def test_a_recorded_reply_references_only_results_the_brain_has_when_it_speaks(tmp_path: Path) -> None:
    """A tool called after the reply began (``then:``) has no result to read out yet: its text stays as said."""

    def agent(event: dict[str, object]) -> dict[str, object]:
        return {"t": 1.0, "kind": "agent", "event": event}

    def said(role: str, text: str) -> dict[str, object]:
        return agent({"type": "bidi_transcript_block", "role": role, "transcript": text})

    def used(name: str) -> dict[str, object]:
        return agent({"type": "bidi_tool_use_blocks", "tool_uses": [{"toolUseId": name, "name": name, "input": {}}]})

    def result(name: str, text: str) -> dict[str, object]:
        return agent({"type": "tool_result", "tool_result": {"toolUseId": name, "content": [{"text": text}]}})

    records = [
        {"t": 0.0, "kind": "agent_text", "text": "Greet the caller."},
        said("assistant", "Hello."),
        said("user", "Any slots on Monday?"),
        used("find_open_slots"),
        result("find_open_slots", "Open on Monday: 9:00."),
        said("assistant", "Open on Monday: 9:00. Shall I book it?"),
        said("user", "What is the policy?"),
        said("assistant", "Cancel 24 hours ahead."),
        used("ask_policy"),
        result("ask_policy", "Cancel 24 hours ahead."),
    ]
    turns = brain_from(Recording(header={}, records=records))
    assert turns[1]["say"] == "{find_open_slots}. Shall I book it?"
    assert turns[2]["say"] == "Cancel 24 hours ahead." and turns[2]["then"][0]["name"] == "ask_policy"

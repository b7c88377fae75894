"""From a recorded call to a scenario that is safe to run and to commit, end to end: two clinic calls recorded on
the scripted brain (a barge-in with a booking, a keypad menu), each turned into a scenario with
``--from-recording --write``, and both scenarios run and passing, their bookings in the run's own database."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from telephony.cli import main
from telephony.simulation.scenarios.scenario_file import load_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "clinic" / "scenarios"


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


def test_a_recorded_call_becomes_a_portable_scenario_that_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The appointment book the agent uses when nothing points it elsewhere: a replay must never write to it.
    everyday = tmp_path / "everyday.sqlite3"
    monkeypatch.setenv("CLINIC_DB", str(everyday))
    recordings = tmp_path / "recordings"
    originals = [SCENARIOS / "barge_in.yaml", SCENARIOS / "keypad.yaml"]
    code, output = run(["test", *map(str, originals), "--jobs", "2", "--out", str(recordings)])
    assert code == 0, output

    written = tmp_path / "committed"
    for folder in sorted(recordings.iterdir()):
        stem = Path(json.loads((folder / "scenario.json").read_text())["scenario"]).stem
        code, output = run(["test", "--from-recording", str(folder), "--write", str(written / f"{stem}.yaml")])
        assert code == 0, output

    barge_in, keypad = load_scenario(written / "barge_in.yaml"), load_scenario(written / "keypad.yaml")
    # Portable: the caller's audio is beside the scenario, and nothing points into recordings/.
    assert barge_in.recording == written / "barge_in.caller.jsonl" and barge_in.recording.is_file()
    fields = [line for line in (written / "barge_in.yaml").read_text().splitlines() if not line.startswith("#")]
    assert not [line for line in fields if str(recordings) in line]  # only the comment says where it came from
    caller_side = {json.loads(line).get("kind") for line in barge_in.recording.read_text().splitlines()[1:]}
    assert caller_side == {"twilio_in"}  # the caller's side only: none of the bot's audio or the model's events
    # Safe: the agent and the set-up of the run that made the call are carried over.
    assert barge_in.agent == keypad.agent == "examples.clinic.agent:create_agent"
    assert [check.function for check in barge_in.setup] == ["examples.clinic.testing:fresh_database"]
    # Tool results are referenced, not pasted: the brain reads out what the tool says on the day.
    assert barge_in.brain is not None
    says = [turn.say for turn in barge_in.brain.turns]
    assert says[1].startswith("{find_open_slots}. Both doctors") and says[2] == "{book_appointment}."
    assert "Open on Monday" not in (written / "barge_in.yaml").read_text()
    # What the call had is expected again: its barge-in and its keypress.
    assert barge_in.expect.clear_within_ms is not None and barge_in.expect.clear_within_ms[0] >= 1000
    assert keypad.expect.keys is not None and keypad.expect.keys[0] == "2"

    code, output = run(["test", str(written), "--jobs", "2", "--out", str(tmp_path / "replays")])
    assert code == 0, output
    assert "replay of caller barges in" in output and "barge-in to clear" in output
    assert "2 passed, 0 failed" in output
    assert not everyday.exists(), "a replay booked into the everyday appointment book"

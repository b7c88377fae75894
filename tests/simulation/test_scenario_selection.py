"""Choosing what ``voicebot test`` runs, with no call placed: ``-k`` by name, ``--check`` to read the files only,
and mistakes in every file reported at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from telephony.cli import main
from telephony.simulation.scenarios.name_filter import NameFilter, NameFilterError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "clinic" / "scenarios"


@pytest.mark.parametrize(
    ("expression", "chosen"),
    [
        ("booking", {"booking succeeds"}),
        ("BOOKING", {"booking succeeds"}),
        ("barge_in", {"caller barges in"}),  # the file's name counts too
        ("caller barges", {"caller barges in"}),  # words side by side are one phrase
        ("caller and not goal", {"caller barges in"}),
        ("goodbye or transfer", {"goodbye hang-up", "transfer to a human"}),
        ("not (caller or book or goodbye or transfer or key or slot or policy)", set()),
        ("(no slot or policy) and not barge", {"no slot available", "policy question"}),
    ],
)
def test_k_matches_parts_of_names_with_and_or_not(expression: str, chosen: set[str]) -> None:
    scenarios = {
        "caller barges in": "barge_in.yaml",
        "booking succeeds": "booking.yaml",
        "caller with a goal": "goal_caller.yaml",
        "goodbye hang-up": "goodbye.yaml",
        "keypad menu": "keypad.yaml",
        "no slot available": "no_slot.yaml",
        "policy question": "policy_question.yaml",
        "transfer to a human": "transfer.yaml",
    }
    select = NameFilter(expression)
    assert {name for name, file in scenarios.items() if select.matches(name, file)} == chosen


@pytest.mark.parametrize(
    ("expression", "problem"),
    [("", "the expression is empty"), ("(book", "a '(' is never closed"), ("book or", "found 'the end'")],
)
def test_k_says_what_is_wrong_with_an_expression(expression: str, problem: str) -> None:
    with pytest.raises(NameFilterError, match=problem.replace("(", r"\(")):
        NameFilter(expression)


def test_check_reads_the_chosen_scenarios_and_places_no_call(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["test", str(EXAMPLES), "--check", "-k", "book or barge"]) == 0
    output = capsys.readouterr().out
    assert "2 scenario(s) read and checked, no call placed" in output
    assert f"{EXAMPLES / 'barge_in.yaml'}: caller barges in" in output and "booking succeeds" in output
    assert "keypad" not in output


def test_check_reports_the_mistakes_of_every_file_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.yaml").write_text("caller:\n  - shout: hello\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("caller: [{say: hi}]\nline: {packet_loss: 1.5}\n", encoding="utf-8")
    (tmp_path / "c.yaml").write_text("caller: [{say: hi}]\n", encoding="utf-8")
    assert main(["test", str(tmp_path), "--check"]) == 1
    errors = capsys.readouterr().err
    assert f"{tmp_path / 'a.yaml'}:2: caller[0].shout: unknown field" in errors
    assert f"{tmp_path / 'b.yaml'}:2: line.packet_loss: is a share below 1" in errors


def test_nothing_chosen_or_a_bad_flag_is_said_before_any_call(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["test", str(EXAMPLES), "-k", "dentist"]) == 1
    assert "-k 'dentist' matches none of 'caller barges in', 'booking succeeds'" in capsys.readouterr().err
    assert main(["test", str(EXAMPLES), "-k", "not"]) == 2
    assert main(["test", str(EXAMPLES), "--line", "{noise: {kind: rain, level_dbfs: -40}}"]) == 2
    assert "--line: line.noise.kind: expected one of white, babble, hum, got 'rain'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["test", str(EXAMPLES), "--jobs", "0"])

"""``expect.dead_air``: read with clear mistakes, checked against the bridge's ``dead_air`` notes (or the
transcript's ``dead_air`` when the records are not kept), on a clean line or a bad one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from telephony.simulation.caller.line_conditions import LineConditions, Noise
from telephony.simulation.scenarios.expectations import CallOutcome, evaluate
from telephony.simulation.scenarios.goal_caller import PatternJudge
from telephony.simulation.scenarios.runner import RunResult
from telephony.simulation.scenarios.scenario import ScenarioError
from telephony.simulation.scenarios.scenario_file import load_scenario

TRANSCRIPT: dict[str, Any] = {
    "duration_s": 20.0,
    "ended": {"reason": "caller hung up", "by": "caller"},
    "turns": [{"role": "bot", "text": "Hello.", "start": 0.5, "end": 1.5}],
    "notes": [],
}


def wait(t: float, seconds: float, after: str, ended_by: str = "audio") -> dict[str, Any]:
    detail = f'{{"s": {seconds}, "after": "{after}", "ended_by": "{ended_by}"}}'
    return {"t": t, "kind": "note", "note": "dead_air", "detail": detail}


RECORDS = [
    wait(1.0, 0.9, "greeting"),
    {"t": 3.0, "kind": "note", "note": "hold_sound", "detail": "started"},
    wait(8.2, 4.1, "caller", "hold"),
    {"t": 9.0, "kind": "note", "note": "dead_air", "detail": "not json"},
    wait(12.0, 3.5, "tool"),
]


def write(tmp_path: Path, expect: str, extra: str = "") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text("caller:\n  - say: hi\n" + extra + "expect:\n" + expect, encoding="utf-8")
    return path


async def findings(tmp_path: Path, expect: str, outcome: CallOutcome, extra: str = "") -> list[str]:
    expectations = load_scenario(write(tmp_path, expect, extra)).expect
    return [str(finding) for finding in await evaluate(expectations, outcome, PatternJudge())]


def test_dead_air_reads_its_limit_and_where_it_is_written(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, "  dead_air: {max_s: 3}\n"))
    assert scenario.expect.dead_air_max_s is not None
    limit, where = scenario.expect.dead_air_max_s
    assert limit == 3.0 and where.line == 4 and where.field == "expect.dead_air.max_s"
    assert load_scenario(write(tmp_path, "  no_apology: true\n")).expect.dead_air_max_s is None


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ("  dead_air: {max_s: soon}\n", ":4: expect.dead_air.max_s: expected a number, got"),
        ("  dead_air: {max_s: -1}\n", ":4: expect.dead_air.max_s: must be at least 0, got -1"),
        ("  dead_air: {max_s: true}\n", ":4: expect.dead_air.max_s: expected a number"),
        ("  dead_air: {}\n", "expect.dead_air.max_s: is required"),
        ("  dead_air: 3\n", ":4: expect.dead_air: expected a mapping"),
        ("  dead_air: {max_s: 3, longest: 2}\n", ":4: expect.dead_air.longest: unknown field; expected one of max_s"),
    ],
)
def test_dead_air_mistakes_name_the_file_line_and_field(tmp_path: Path, expect: str, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(write(tmp_path, expect))
    error = str(caught.value)
    assert error.startswith(str(tmp_path / "s.yaml")) and message in error, error


async def test_a_call_within_the_limit_passes(tmp_path: Path) -> None:
    outcome = CallOutcome(transcript=TRANSCRIPT, records=RECORDS)
    assert await findings(tmp_path, "  dead_air: {max_s: 4.5}\n", outcome) == []
    quiet = CallOutcome(transcript=TRANSCRIPT, records=[{"t": 1.0, "kind": "note", "note": "outcome", "detail": "{}"}])
    assert await findings(tmp_path, "  dead_air: {max_s: 0}\n", quiet) == [], "no wait measured: no dead air"


async def test_the_longest_wait_fails_with_what_it_came_after_and_when(tmp_path: Path) -> None:
    outcome = CallOutcome(transcript=TRANSCRIPT, records=RECORDS)
    assert await findings(tmp_path, "  dead_air: {max_s: 3}\n", outcome) == [
        f"{tmp_path / 's.yaml'}:4 expect.dead_air.max_s: the caller heard nothing for 4.10 s after the caller's "
        "turn (from 4.1 s to 8.2 s, when the hold sound started); at most 3 s expected; 1 other wait(s) over 3 s "
        "too"
    ]


async def test_without_records_the_transcripts_dead_air_is_checked(tmp_path: Path) -> None:
    waits = [{"t": 6.0, "s": 2.5, "after": "tool", "ended_by": "audio"}, {"t": 9.0, "s": "bad"}]
    outcome = CallOutcome(transcript=TRANSCRIPT | {"dead_air": {"max_s": 2.5, "waits": waits}}, records=[])
    (found,) = await findings(tmp_path, "  dead_air: {max_s: 2}\n", outcome)
    assert "the caller heard nothing for 2.50 s after a tool's result (from 3.5 s to 6.0 s" in found


async def test_on_a_bad_line_the_finding_names_the_line(tmp_path: Path) -> None:
    line = "line: {noise: {kind: babble, level_dbfs: -35}, packet_loss: 0.03}\n"
    scenario = load_scenario(write(tmp_path, "  dead_air: {max_s: 3}\n", line))
    assert scenario.line == LineConditions(Noise("babble", -35.0), 0.03)
    outcome = CallOutcome(transcript=TRANSCRIPT, records=RECORDS, line=scenario.line)
    (found,) = await findings(tmp_path, "  dead_air: {max_s: 3}\n", outcome, line)
    assert "4.10 s after the caller's turn on babble noise at -35 dBFS, 3% packet loss (from 4.1 s" in found


def test_the_run_figures_give_the_longest_dead_air() -> None:
    outcome = CallOutcome(transcript=TRANSCRIPT, records=RECORDS, latencies=[0.5])
    assert RunResult(index=1, outcome=outcome).figures() == (
        "latency median 0.50 s, max 0.50 s; longest dead air 4.10 s"
    )

"""Every mistake in every scenario file, found before any call: fields, pairings, imports, the agent's prompt and
model. No call is placed by these tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from telephony.cli import main
from telephony.config import load_settings
from telephony.simulation.scenarios.preflight import load_scenarios
from telephony.simulation.scenarios.results import RunOptions
from telephony.simulation.scenarios.scenario import ScenarioError
from telephony.simulation.scenarios.scenario_file import read_scenario

CLINIC = "agent: examples.clinic.agent:create_agent\n"

MANY_MISTAKES = """\
name: five mistakes
colour: blue
caller:
  - say: Hello, I would like to book.
brain:
  - on: caller
    heard: Goodbye.
    say: "{find_slots}."
expect:
  hang_up: {by: robot}
  barge_in: {clear_within_ms: 500}
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


async def problems_of(paths: list[Path], **options: object) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        await load_scenarios(paths, RunOptions(**options), load_settings(dotenv=None))  # type: ignore[arg-type]
    return [str(problem) for problem in caught.value.problems]


def test_every_mistake_in_a_file_is_reported_at_once_in_line_order(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", MANY_MISTAKES)
    _, problems = read_scenario(path)
    found = [str(problem) for problem in problems]
    assert [problem.line for problem in problems] == [2, 6, 6, 10, 11], found
    top = "name description agent call greeting setup caller brain expect runs pass_threshold timeout_s patience_s line"
    assert found[0] == f"{path}:2: scenario.colour: unknown field; expected one of " + ", ".join(top.split())
    assert f"{path}:6: brain[0].heard: 'Goodbye.' is not what 'on: caller' turn 1 answers: caller[0] says" in " ".join(
        found
    )
    assert any("brain[0].say: {find_slots} would be said as written: this turn calls no tools" in p for p in found)
    assert found[3] == f"{path}:10: expect.hang_up.by: expected bot, caller or server, got 'robot'"
    assert found[4].startswith(f"{path}:11: expect.barge_in: no caller step talks over the bot")


async def test_mistakes_in_every_file_are_reported_together_in_file_order(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "caller:\n  - say: hi\nruns: 0\n")
    expect = "expect:\n  latency: {max_s: 2}\n  hang_up: {by: robot}\n"
    write(tmp_path, "b.yaml", CLINIC + "caller:\n  - press: '12'\n" + expect)
    write(tmp_path, "c.yaml", "caller:\n  - say: hi\n")  # nothing wrong
    found = await problems_of([tmp_path])
    assert [problem.split(":")[0:2] for problem in found] == [
        [str(tmp_path / "a.yaml"), "3"],
        [str(tmp_path / "b.yaml"), "5"],
        [str(tmp_path / "b.yaml"), "6"],
    ], found
    assert "expect.latency.max_s: the caller never says anything, so no response latency" in found[1]


async def test_check_functions_are_imported_and_their_keywords_checked_before_any_call(tmp_path: Path) -> None:
    write(
        tmp_path,
        "s.yaml",
        CLINIC
        + """\
setup:
  - call: examples.clinic.testing:fresh_databse
caller:
  - say: hi
expect:
  checks:
    - call: examples.clinic.testing:appointment_booked
      with: {patien: Jane Doe, day: Tuesday, time: "9:30"}
    - call: nowhere_module:check
""",
    )
    found = await problems_of([tmp_path])
    assert len(found) == 3, found
    assert "setup[0]: the function 'examples.clinic.testing:fresh_databse': module 'examples.clinic" in found[0]
    assert "has no attribute 'fresh_databse'; it defines appointment_booked, fresh_database, no_bookings" in found[0]
    assert "expect.checks[0]: examples.clinic.testing:appointment_booked(call: 'Any', patient: 'str'" in found[1]
    assert "cannot be called with the call and patien, day, time: " in found[1]
    assert "cannot import 'nowhere_module' for the function 'nowhere_module:check': no nowhere_module.py" in found[2]


async def test_prompt_fields_are_checked_against_the_agents_own_prompt(tmp_path: Path) -> None:
    brain = 'brain:\n  - on: greeting\n    say: "Welcome to {prompt:Clinic nam}."\n'
    write(tmp_path, "s.yaml", CLINIC + "caller:\n  - say: hi\n" + brain)
    [found] = await problems_of([tmp_path])
    assert found.startswith(f"{tmp_path / 's.yaml'}:5: brain[0].say: {{prompt:Clinic nam}}: the system prompt of ")
    assert "has no 'Clinic nam: ...' line, so the brain would say nothing there" in found
    assert "'clinic name'" in found
    # The right name passes; with --real-model the brain does not play, so nothing is checked.
    write(tmp_path, "s.yaml", CLINIC + "caller:\n  - say: hi\n" + brain.replace("nam}", "name}"))
    settings = load_settings(dotenv=None)
    assert len((await load_scenarios([tmp_path], RunOptions(), settings)).scenarios) == 1


async def test_local_nova_refuses_strands_own_nova_model_saying_what_to_build(tmp_path: Path) -> None:
    write(tmp_path, "s.yaml", "caller:\n  - say: hi\nbrain:\n  - on: caller\n    say: Hi.\n")
    [found] = await problems_of([tmp_path], local="nova", agent="tests.simulation.own_agents:direct_nova")
    assert "--local nova: the agent factory built strands' BedrockNovaSonicModel, which always dials" in found
    assert "it would reach the real service with your credentials, not the local Nova Sonic emulator" in found
    assert "Build agent.nova.NovaSonicModel" in found and "agent.models.create_model(settings)" in found
    settings = load_settings(dotenv=None)
    clinic = RunOptions(local="nova", agent="examples.clinic.agent:create_agent")
    assert (await load_scenarios([tmp_path], clinic, settings)).scenarios  # the project's adapter reaches it


async def test_a_scenario_without_a_brain_is_announced_as_running_on_a_real_model(tmp_path: Path) -> None:
    write(tmp_path, "s.yaml", "caller:\n  - say: hi\n")
    settings = load_settings(dotenv=None)
    checked = await load_scenarios([tmp_path], RunOptions(agent="tests.simulation.own_agents:bakery"), settings)
    [notice] = checked.notices
    assert notice.startswith(f"{tmp_path / 's.yaml'}: no 'brain:', so this scenario runs on the model ")
    assert "a real model, on your own account and credentials, not the scripted brain" in notice
    assert not (await load_scenarios([tmp_path], RunOptions(real_model=True), settings)).notices


def test_voicebot_test_lists_every_mistake_and_places_no_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "a.yaml", MANY_MISTAKES)
    write(tmp_path, "b.yaml", "caller:\n  - say: hi\nexpect:\n  tools: [{name: x, input: {day: 're:(Mon'}}]\n")
    assert main(["test", str(tmp_path), "--out", str(tmp_path / "recordings")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("voicebot test: 6 mistake(s) in the scenarios, so no call was placed:\n"), err
    assert f"{tmp_path / 'b.yaml'}:4: expect.tools[0].input.day: re:'(Mon' is not a regular expression: " in err
    assert err.index("a.yaml:2:") < err.index("a.yaml:11:") < err.index("b.yaml:4:")
    assert not (tmp_path / "recordings").exists()


def test_an_agent_module_is_found_in_the_folder_voicebot_runs_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As uvicorn takes module:app: `voicebot` is a console script, so Python put its bin folder on the path."""
    import sys

    from telephony.bridge.agent_factory import AgentFactoryError, load_agent_factory

    write(tmp_path, "mybot_here.py", "def make_agent(call):\n    return None\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [entry for entry in sys.path if entry not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "mybot_here", raising=False)
    assert load_agent_factory("mybot_here:make_agent").__name__ == "make_agent"
    with pytest.raises(AgentFactoryError) as caught:
        load_agent_factory("otherbot:make_agent")
    assert str(caught.value) == (
        f"cannot import 'otherbot' for the agent factory 'otherbot:make_agent': no otherbot.py in the current folder "
        f"({tmp_path}) or in the installed packages. Run voicebot from the folder that holds otherbot.py, or add that "
        "folder to PYTHONPATH (e.g. PYTHONPATH=path/to/project)"
    )
    write(tmp_path, "needs_more.py", "import not_installed_anywhere\n")
    with pytest.raises(AgentFactoryError, match="install 'not_installed_anywhere' in the environment voicebot runs"):
        load_agent_factory("needs_more:make_agent")

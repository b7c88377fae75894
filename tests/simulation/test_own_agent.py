"""An agent of one's own, as a new user runs it: a project folder outside this repository, with its own mybot.py,
scenarios and test file, run with voicebot's commands and pytest alone (no asyncio set-up, no PYTHONPATH); and a
call whose agent cannot start failing its scenario though the scenario expects nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from telephony.cli import main

BIN = Path(sys.executable).parent

MYBOT = """\
from strands.bidi import BidiAgent

from agent.nova import NovaSonicModel
from agent.tools import end_conversation

PROMPT = "You answer the phone for a bakery.\\nBakery name: Crumbs\\n"


def make_agent(call):
    model = NovaSonicModel(model_id="amazon.nova-2-5-sonic", region="us-east-1")
    return BidiAgent(model=model, tools=[end_conversation], system_prompt=PROMPT)
"""

SCENARIO = """\
name: goodbye
agent: mybot:make_agent
caller:
  - say: Goodbye.
brain:
  - on: greeting
    say: "{prompt:Bakery name}, hello."
  - on: caller
    heard: Goodbye.
    say: Bye!
    then: [{name: end_conversation, input: {reason: bye}}]
expect:
  bot_says: [{contains: Crumbs, turn: 1}]
  hang_up: {by: bot}
"""

TEST = """\
async def test_goodbye(phone_call):
    call = await phone_call("scenarios/goodbye.yaml")
    assert call.passed, call.report()
    assert call.bot_turns[0] == "Crumbs, hello."
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's own project: mybot.py, a scenario and a test, and an empty pytest config of its own."""
    folder = tmp_path / "bakery"
    (folder / "scenarios").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "mybot.py").write_text(MYBOT, encoding="utf-8")
    (folder / "scenarios" / "goodbye.yaml").write_text(SCENARIO, encoding="utf-8")
    (folder / "tests" / "test_bot.py").write_text(TEST, encoding="utf-8")
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return folder


def run(command: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    """``command`` in ``folder`` as a user's shell would run it: no PYTHONPATH, none of this repo's settings."""
    env = {
        name: value for name, value in os.environ.items() if name != "PYTHONPATH" and not name.startswith("VOICEBOT_")
    }
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=240, check=False)


@pytest.mark.parametrize("asyncio_plugin", ["without pytest-asyncio", "with pytest-asyncio in strict mode"])
def test_an_async_phone_call_test_runs_in_a_project_of_ones_own(project: Path, asyncio_plugin: str) -> None:
    assert not (project / "conftest.py").exists() and Path(__file__).resolve().parents[2] not in project.parents
    options = ["-p", "no:asyncio"] if asyncio_plugin.startswith("without") else []
    config = ["-p", "no:cacheprovider", "--rootdir", str(project), "-c", str(project / "pytest.ini")]
    done = run([str(BIN / "pytest"), *config, *options, "-q", "tests/test_bot.py"], project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout, done.stdout


def test_voicebot_test_finds_mybot_in_the_folder_it_runs_from(project: Path) -> None:
    done = run([str(BIN / "voicebot"), "test", "scenarios", "--agent", "mybot:make_agent", "--out", "calls"], project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 0 failed" in done.stdout, done.stdout
    missing = run([str(BIN / "voicebot"), "test", "scenarios", "--agent", "yourbot:make_agent"], project)
    assert missing.returncode == 1
    expected = "cannot import 'yourbot' for the agent factory 'yourbot:make_agent': no yourbot.py in the current folder"
    assert expected in missing.stderr


def test_a_call_whose_agent_cannot_start_fails_though_nothing_is_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No brain (so the factory's own model runs), no expect: the model fails to connect, as without AWS keys."""
    scenario = tmp_path / "bare.yaml"
    scenario.write_text("agent: tests.simulation.own_agents:cannot_start\ncaller:\n  - say: Hello.\n", encoding="utf-8")
    code = main(["test", str(scenario), "--out", str(tmp_path / "calls")])
    output = capsys.readouterr().out
    assert code == 1, output
    notice = output.index(f"voicebot test: {scenario}: no 'brain:', so this scenario runs on the model ")
    assert notice < output.index("[1/1] bare")
    assert "FAIL" in output and "the agent failed at " in output
    assert "and the caller heard the bridge's apology" in output and "Unable to locate credentials" in output

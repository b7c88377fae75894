"""`voicebot test` end to end: the clinic example's scenarios as real loopback calls on the scripted brain, a
deliberately broken copy of the agent failing them, the `phone_call` fixture, and a scenario from a recording."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from telephony.cli import main
from telephony.recording.call_library import CallLibrary
from telephony.simulation.pytest_plugin import PhoneCall
from telephony.simulation.replay.from_recording import write_scenario_from_recording
from telephony.simulation.scenarios.scenario_file import load_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "clinic" / "scenarios"
SHORT = [str(SCENARIOS / "goodbye.yaml"), str(SCENARIOS / "transfer.yaml")]


@pytest.fixture(scope="module")
def passing_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """The two shortest example scenarios through the command line, once for the tests below."""
    folder = tmp_path_factory.mktemp("scenarios")
    capture = folder / "stdout.txt"
    import contextlib

    with capture.open("w") as out, contextlib.redirect_stdout(out):
        code = main(
            ["test", *SHORT, "--jobs", "2", "--out", str(folder / "recordings"), "--junit", str(folder / "junit.xml")]
        )
    return code, capture.read_text(), folder


def test_the_example_scenarios_pass_on_the_scripted_brain(passing_run: tuple[int, str, Path]) -> None:
    code, output, folder = passing_run
    assert code == 0, output
    assert "2 on the scripted brain (no model account used)" in output
    assert "[1/2] goodbye hang-up" in output and "[2/2] transfer to a human" in output
    assert "2 passed, 0 failed" in output
    assert "scripted brain (in place of NovaSonicModel)" in output
    root = ET.parse(folder / "junit.xml").getroot()
    assert root.get("tests") == "2" and root.get("failures") == "0"
    assert {case.get("name") for case in root.iter("testcase")} == {"goodbye hang-up", "transfer to a human"}


def test_every_run_is_recorded_where_the_calls_page_finds_it(passing_run: tuple[int, str, Path]) -> None:
    _, _, folder = passing_run
    calls = CallLibrary(folder / "recordings").recent()
    assert len(calls) == 2 and all(call.complete and call.has_audio for call in calls)
    by = {call.end_reason: call for call in calls}
    assert any("transferred to +15005550010" in (reason or "") for reason in by)
    assert any("agent ended the call (wrong number)" in (reason or "") for reason in by)


def test_a_broken_copy_of_the_agent_fails_saying_which_expectation_and_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = "tests.simulation.broken_clinic:create_agent"
    code = main(["test", *SHORT, "--jobs", "2", "--agent", agent, "--out", str(tmp_path)])
    output = capsys.readouterr().out
    assert code == 1, output
    goodbye, transfer = str(SCENARIOS / "goodbye.yaml"), str(SCENARIOS / "transfer.yaml")
    # The wrong prompt: the greeting names another clinic.
    assert f"{goodbye}:20 expect.bot_says[0]: expected bot turn 1 (at " in output
    assert (
        "to say 'Riverside Family Clinic'; it said 'Thank you for calling Hillside Dental. How can I help?'" in output
    )
    # The removed tool: no transfer, and the brain says why.
    assert f"{transfer}:22 expect.tools[0]: transfer_call was never called" in output
    assert "tool 'transfer_call' (not offered by the agent)" in output
    assert f"{transfer}:23 expect.transfer: the call was not transferred" in output
    assert "0 passed, 2 failed" in output


async def test_the_phone_call_fixture_runs_an_inline_scenario_against_any_factory(phone_call: PhoneCall) -> None:
    call = await phone_call(
        {
            "name": "default agent says goodbye",
            "agent": "agent.factory:create_agent",
            "greeting": "",
            "caller": [{"say": "Goodbye.", "wait": False}],
            "brain": [
                {
                    "on": "caller",
                    "heard": "Goodbye.",
                    "say": "Goodbye!",
                    "then": [{"name": "end_conversation", "input": {"reason": "bye"}}],
                }
            ],
            "expect": {"hang_up": {"by": "bot", "within_s": 2.5}, "tools": ["end_conversation"]},
        }
    )
    assert call.passed, call.report()
    assert call.bot_turns == ["Goodbye!"] and [tool["name"] for tool in call.tool_calls] == ["end_conversation"]
    assert call.recording is not None and (call.recording / "call.wav").is_file()


def test_a_recorded_call_becomes_a_scenario_to_edit(passing_run: tuple[int, str, Path], tmp_path: Path) -> None:
    _, _, folder = passing_run
    recording = next(
        path for path in (folder / "recordings").iterdir() if "transfer" in (path / "transcript.json").read_text()
    )
    target = tmp_path / "from_call.yaml"
    caller = write_scenario_from_recording(recording, target)
    scenario = load_scenario(target)
    assert scenario.recording == caller == tmp_path / "from_call.caller.jsonl"  # beside it, not in recordings/
    assert scenario.agent == "examples.clinic.agent:create_agent"
    assert scenario.brain is not None and [turn.on for turn in scenario.brain.turns] == ["greeting", "caller"]
    assert scenario.brain.turns[1].then[0].name == "transfer_call"
    assert [tool.name for tool in scenario.expect.tools] == ["transfer_call"]
    assert scenario.expect.transfer is not None and scenario.expect.transfer[0] == "+15005550010"
    assert scenario.expect.hang_up_by is not None and scenario.expect.hang_up_by[0] == "bot"


def test_the_brain_also_plays_on_the_local_nova_emulator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--local-nova: the agent keeps its own NovaSonicModel, which talks Nova's wire protocol to the emulator."""
    code = main(["test", str(SCENARIOS / "transfer.yaml"), "--local-nova", "--out", str(tmp_path)])
    output = capsys.readouterr().out
    assert code == 0, output
    assert "on the scripted brain on the local Nova Sonic emulator" in output
    assert "local Nova Sonic emulator playing the scripted brain (NovaSonicModel" in output
    [call] = CallLibrary(tmp_path).recent()
    assert call.end_reason == "transferred to +15005550010"


@pytest.mark.parametrize(
    ("model", "title", "built"),
    [
        ("openai", "local OpenAI Realtime server", "OpenAIRealtime gpt-realtime"),
        ("gemini", "local Gemini Live server", "GeminiLiveModel gemini-live"),
    ],
)
def test_the_brain_also_plays_on_the_local_openai_and_gemini_servers(
    model: str, title: str, built: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--local openai|gemini: the default agent builds that provider's model (its real strands client), pointed at
    the local server through OPENAI_BASE_URL / GOOGLE_GEMINI_BASE_URL, which are restored after the run."""
    import os

    before = {name: os.environ.get(name) for name in ("OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "SSL_CERT_FILE")}
    code = main(["test", *SHORT, "--local", model, "--out", str(tmp_path)])
    output = capsys.readouterr().out
    assert code == 0, output
    assert f"2 on the scripted brain on the {title}" in output
    assert f"{title} playing the scripted brain ({built}" in output
    assert "2 passed, 0 failed" in output
    reasons = sorted(call.end_reason for call in CallLibrary(tmp_path).recent())
    assert "transferred to +15005550010" in reasons and len(reasons) == 2
    assert {name: os.environ.get(name) for name in before} == before


def test_local_says_clearly_when_the_factory_builds_another_providers_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["test", SHORT[0], "--local", "openai", "--agent", "agent.offline:create_agent", "--out", str(tmp_path)]
    )
    output = capsys.readouterr().err  # refused before any call
    assert code == 1
    expected = "--local openai plays the brain on the local OpenAI Realtime server, which only "
    assert expected + "agent.openai.OpenAIRealtime reaches; the agent factory built OfflineModel" in output
    assert "no call was placed" in output and not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--local-nova", "--local", "gemini"], "--local-nova is --local nova, not --local gemini: choose one"),
        (["--local", "openai", "--real-model"], "--local openai plays the scripted brain; --real-model ignores it"),
        (["--local-nova", "--real-model"], "--local-nova plays the scripted brain; --real-model ignores it"),
    ],
)
def test_local_flags_that_contradict_each_other_are_bad_usage(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["test", SHORT[0], *flags]) == 2
    assert message in capsys.readouterr().err


def test_local_nova_is_local_nova() -> None:
    """--local-nova keeps working, as an alias of --local nova; --local takes only the three providers."""
    import argparse

    from telephony.simulation.scenarios.command import add_arguments
    from telephony.simulation.scenarios.results import RunOptions

    parser = argparse.ArgumentParser(exit_on_error=False)
    add_arguments(parser)
    assert parser.parse_args(["--local-nova"]).local_nova is True
    assert parser.parse_args(["--local", "nova"]).local == "nova"
    with pytest.raises((argparse.ArgumentError, SystemExit)):
        parser.parse_args(["--local", "bedrock"])
    assert RunOptions(local_nova=True).local_server == "nova" == RunOptions(local="nova").local_server
    assert RunOptions().local_server is None

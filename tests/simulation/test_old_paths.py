"""Module paths from before ``telephony/simulation`` was split into packages still import, and still run.

Users' tests and scripts name these; each must keep giving the same objects as the new home.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

OLD_NAMES = {
    "telephony.simulation.caller": (
        "telephony.simulation.caller.simulated_caller",
        [
            "FRAME_SECONDS",
            "ULAW_SILENCE",
            "AnswerError",
            "Heard",
            "Received",
            "SimulatedCaller",
            "StreamTarget",
            "answer",
            "parse_stream",
            "twilio_signature",
        ],
    ),
    "telephony.simulation.replay": (
        "telephony.simulation.replay.replaying",
        ["ReplayOptions", "ReplayResult", "replay", "twilio_form", "load_source", "make_caller"],
    ),
    "telephony.simulation.demo": ("telephony.simulation.demo.demo", ["CallerLine", "DEMO_SCRIPT", "run_demo"]),
    "telephony.simulation.local_server": ("telephony.simulation.local_app.loopback", ["serve_app", "free_port_run"]),
    "telephony.simulation.local_twilio_api": (
        "telephony.simulation.local_twilio.api",
        ["ApiRequest", "LocalCall", "LocalNumber", "LocalTwilioApi", "main"],
    ),
    "telephony.simulation.pytest_plugin": (
        "telephony.simulation.scenarios.phone_call",
        ["PhoneCall", "PhoneCallResult", "phone_call"],
    ),
}


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_an_old_module_path_gives_the_same_objects(old: str) -> None:
    new, names = OLD_NAMES[old]
    before, after = importlib.import_module(old), importlib.import_module(new)
    for name in names:
        assert getattr(before, name) is getattr(after, name), f"{old}.{name}"


def test_the_replay_command_keeps_its_old_names() -> None:
    from telephony.simulation.replay import add_arguments, compare_outbound, play_against_replay, print_result
    from telephony.simulation.replay.command import add_arguments as command_add_arguments
    from telephony.simulation.replay.comparison import compare_outbound as compared
    from telephony.simulation.replay.offline import play_against_replay as played

    assert add_arguments is command_add_arguments and compare_outbound is compared and play_against_replay is played
    assert callable(print_result)


def test_the_local_nova_package_keeps_its_names() -> None:
    from telephony.simulation.local_nova import (
        Brain,
        CallerTurn,
        LocalNova,
        Reply,
        ScriptedBrain,
        Tone,
        ToolRequest,
        replies,
    )

    assert (Brain, CallerTurn, Reply, ScriptedBrain, Tone, ToolRequest) == (
        replies.Brain,
        replies.CallerTurn,
        replies.Reply,
        replies.ScriptedBrain,
        replies.Tone,
        replies.ToolRequest,
    )
    assert LocalNova.__module__ == "telephony.simulation.local_nova.server"


def test_the_pytest_entry_point_still_names_the_phone_call_plugin() -> None:
    (plugin,) = [point for point in entry_points(group="pytest11") if point.name == "voicebot"]
    assert plugin.value == "telephony.simulation.pytest_plugin"
    assert callable(plugin.load().phone_call)


@pytest.mark.parametrize("module", ["telephony.simulation.local_twilio_api", "telephony.simulation.local_twilio"])
def test_the_local_twilio_api_runs_as_a_module_by_its_old_and_new_names(module: str) -> None:
    done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--account" in done.stdout

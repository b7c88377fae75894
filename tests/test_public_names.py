"""The names users and outside checks rely on keep working, wherever the code behind them moved (issue #22).

Each module's own old-path tests (tests/*/test_*old*names*, test_moved_modules, test_old_paths) check the
details; this file holds the list the project promises, in one place."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import httpx
import websockets

from telephony.app import create_app
from telephony.simulation.local_app.loopback import serve_app
from tests.fakes.settings import TEST_SETTINGS

COMMANDS = ("serve", "call", "setup", "demo", "replay", "test")


def test_the_public_imports() -> None:
    import telephony
    from agent.tools import end_conversation
    from telephony import codec
    from telephony.call_info import CallInfo

    assert telephony.CallInfo is CallInfo
    assert callable(codec.InboundAudio) and callable(codec.OutboundAudio) and codec.FRAME_BYTES == 160
    assert end_conversation.tool_name == "end_conversation"


def test_the_pytest_plugin_gives_the_phone_call_fixture() -> None:
    (plugin,) = [point for point in entry_points(group="pytest11") if point.name == "voicebot"]
    assert callable(getattr(plugin.load(), "phone_call", None))


def test_every_command_is_there() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "telephony.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert all(command in shown for command in COMMANDS), shown


def test_the_local_nova_runs_as_a_module() -> None:
    done = subprocess.run([sys.executable, "-m", "telephony.simulation.local_nova", "--help"], capture_output=True)
    assert done.returncode == 0, done.stderr


async def test_the_endpoints_answer() -> None:
    call = {"CallSid": "CA" + "0" * 32, "From": "+15550100", "To": "+15550101"}
    async with serve_app(create_app(TEST_SETTINGS, agent_factory=lambda call: None)) as base:
        async with httpx.AsyncClient(base_url=f"http://{base}") as client:
            for path in ("/health", "/stats", "/metrics"):
                assert (await client.get(path)).status_code == 200, path
            twiml = await client.post("/twiml", data=call)
            assert twiml.status_code == 200 and "<Stream" in twiml.text and "/media-stream" in twiml.text
            assert (await client.post("/status/call", data=call | {"CallStatus": "completed"})).is_success
        async with websockets.connect(f"ws://{base}/media-stream") as stream:
            await stream.close()

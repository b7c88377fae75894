"""The voicebot command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from telephony.bridge.agent_factory import AgentFactoryError, build_agent, load_agent_factory
from telephony.call_info import CallInfo
from telephony.cli import apply_overrides, build_parser, main
from telephony.config import AgentSettings, Settings

from .ports import free_port


def test_serve_flags_override_the_environment() -> None:
    argv = ["serve", "--host", "0.0.0.0", "--port", "9001", "--agent", "mypkg.bot:make", "--model", "local"]
    settings = apply_overrides(Settings(port=8080), build_parser().parse_args(argv))
    assert (settings.host, settings.port, settings.agent) == ("0.0.0.0", 9001, "mypkg.bot:make")
    assert settings.model == "local"


def test_bad_configuration_exits_with_the_variable_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VOICEBOT_PORT", "not-a-port")
    assert main(["serve"]) == 2
    assert "VOICEBOT_PORT" in capsys.readouterr().err


def test_unknown_agent_factory_exits_with_a_hint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--agent", "no_such_module_xyz:make"]) == 2
    assert "cannot import 'no_such_module_xyz'" in capsys.readouterr().err


def test_console_script_is_installed() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "telephony.cli", "serve", "--help"], capture_output=True, text=True, check=True
    )
    assert "--agent" in result.stdout and "MODULE:FUNCTION" in result.stdout


def test_load_agent_factory_errors() -> None:
    with pytest.raises(AgentFactoryError, match="must look like"):
        load_agent_factory("nocolon")
    with pytest.raises(AgentFactoryError, match="has no attribute"):
        load_agent_factory("telephony.config:nothing_here")
    with pytest.raises(AgentFactoryError, match="not callable"):
        load_agent_factory("telephony.config:DEFAULT_AGENT")
    assert load_agent_factory("agent.factory:create_agent").__name__ == "create_agent"


async def test_factories_may_be_async_and_must_return_a_bidi_agent() -> None:
    call = CallInfo(call_sid="CA1", stream_sid="MZ1")

    async def wrong(_: CallInfo) -> object:
        return object()

    with pytest.raises(AgentFactoryError, match=r"expected strands\.bidi\.BidiAgent"):
        await build_agent(wrong, call)  # type: ignore[arg-type]


async def test_serve_model_flag_reaches_the_default_agent(tmp_path: Path) -> None:
    """`voicebot serve --model local`, run as a user would, with VOICEBOT_MODEL=nova in the environment and
    no AWS credentials: a call must reach the offline model (a greeting, a keypress answered), not the
    apology a Nova agent without credentials gives. The start-up log names the model calls will use."""
    import asyncio
    import os

    from telephony.simulation.caller.simulated_caller import SimulatedCaller, answer

    from .operations.server_process import wait_until_healthy

    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("VOICEBOT_", "AWS_", "TWILIO_"))}
    env |= {"VOICEBOT_MODEL": "nova", "AWS_EC2_METADATA_DISABLED": "true"}
    env |= {"AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent"}
    log_path = tmp_path / "serve.log"
    argv = [sys.executable, "-m", "telephony.cli", "serve", "--model", "local", "--port", str(port)]
    argv += ["--record", str(tmp_path / "calls")]
    with log_path.open("w") as log_file:
        server = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=log_file, stderr=subprocess.STDOUT)
    try:
        await wait_until_healthy(server, f"http://127.0.0.1:{port}/health", log=log_path)
        assert "calls will use: model=local (offline" in log_path.read_text()
        target = await answer(f"http://127.0.0.1:{port}", {"CallSid": "CA" + "7" * 32, "From": "+15550100"})
        url = target.url.replace("wss://", "ws://", 1)  # no PUBLIC_URL: the stream is on this plain-HTTP server
        async with SimulatedCaller(url, call_sid="CA" + "7" * 32, parameters=target.parameters) as caller:
            await caller.connect()
            for _ in range(40):  # the greeting plays (about 9 s)
                await caller.silence(0.5)
                if caller.heard and not caller.playing:
                    break
            greeting_frames = len(caller.heard)
            await caller.dtmf("1")  # the offline script: 1 is the time, looked up with its clock tool
            await caller.silence(4.0)
            await caller.stop()
        assert greeting_frames > 50, "no greeting: the call did not reach the offline model"
        assert len(caller.heard) > greeting_frames + 25, "the keypress got no spoken answer"
        await asyncio.sleep(0.5)
        log = log_path.read_text()
        assert "agent failed to start" not in log and "agent started | model=offline" in log, log
        assert "tool calls: current_time" in log, log
        assert list((tmp_path / "calls").glob("*/events.jsonl")), "--record did not reach the recorder"
    finally:
        server.terminate()
        server.wait(timeout=15)


async def test_factories_taking_settings_get_the_servers_settings() -> None:
    from telephony.bridge.agent_factory import with_settings

    seen: list[Settings] = []

    async def wants_settings(call: CallInfo, settings: Settings | None = None) -> object:
        seen.append(settings)  # type: ignore[arg-type]
        return object()

    def plain(call: CallInfo) -> object:
        return object()

    server_settings = Settings(model="local")
    bound = with_settings(wants_settings, server_settings)  # type: ignore[arg-type]
    with pytest.raises(AgentFactoryError):
        await build_agent(bound, CallInfo(call_sid="CA1", stream_sid="MZ1"))  # still awaited: it is async
    assert seen == [AgentSettings.from_settings(server_settings)]  # the agent's view: model settings, no secrets
    assert with_settings(plain, server_settings) is plain  # type: ignore[arg-type]

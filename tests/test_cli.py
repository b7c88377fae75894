"""The voicebot command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from telephony.bridge.agent_factory import AgentFactoryError, build_agent, load_agent_factory
from telephony.call_info import CallInfo
from telephony.cli import apply_overrides, build_parser, main
from telephony.config import Settings


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

"""Agent factories get the agent's view of the settings: the model side, never the server's secrets."""

from __future__ import annotations

import functools
from dataclasses import fields, replace

import pytest
from strands.bidi import BidiAgent

from agent.models import create_model
from agent.nova import NovaSonicModel
from telephony.bridge.agent_factory import build_agent, load_agent_factory, with_settings
from telephony.call_info import CallInfo, TransferBrief
from telephony.config import AgentSettings, Settings, load_settings

SECRETS = {"twilio_auth_token": "auth-token-secret", "token_secret": "call-token-key", "console_token": "c" * 24}
SERVER = Settings(
    public_url="https://voice.example.com",
    twilio_account_sid="AC0123",
    twilio_phone_number="+15550001111",
    console=True,
    transfer_to="+15557654321",
    voice="tiffany",
    aws_region="eu-north-1",
    tool_timeout_s=7.0,
    **SECRETS,  # type: ignore[arg-type]
)
CALL = CallInfo(
    call_sid="CA1",
    stream_sid="MZ1",
    from_number="+15550002222",
    transfer=TransferBrief(caller_number="+15550002222", destination="+15557654321"),
)
SHIPPED_FACTORIES = (
    "agent.factory:create_agent",
    "agent.briefing:create_briefing_agent",
    "agent.offline:create_agent",
    "examples.clinic.agent:create_agent",
)


def test_the_view_is_cut_from_the_settings_without_secrets() -> None:
    view = AgentSettings.from_settings(SERVER)
    assert view.voice == "tiffany" and view.aws_region == "eu-north-1" and view.tool_timeout_s == 7.0
    assert view.can_transfer and view.transfer_to == "+15557654321"
    assert not {item.name for item in fields(AgentSettings)} & (set(SECRETS) | {"twilio_account_sid"})
    assert not any(secret in repr(view) for secret in SECRETS.values())
    for name, variable in (("twilio_auth_token", "TWILIO_AUTH_TOKEN"), ("console_token", "VOICEBOT_CONSOLE_TOKEN")):
        with pytest.raises(AttributeError, match=f"{variable}.*secret"):
            getattr(view, name)
    with pytest.raises(AttributeError, match=r"settings\.port \(VOICEBOT_PORT\) is a server setting"):
        view.port  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'colour'"):
        view.colour  # type: ignore[attr-defined]  # noqa: B018


def test_the_view_has_the_settings_names_types_and_defaults() -> None:
    server = {item.name: item for item in fields(Settings)}
    for item in fields(AgentSettings):
        assert item.name in server and item.type == server[item.name].type and item.default == server[item.name].default
    assert AgentSettings() == AgentSettings.from_settings(Settings()) == AgentSettings.from_settings(load_settings({}))


@pytest.mark.parametrize("spec", SHIPPED_FACTORIES)
def test_shipped_factories_never_receive_secrets(spec: str) -> None:
    bound = with_settings(load_agent_factory(spec), SERVER)
    assert isinstance(bound, functools.partial), f"{spec} takes no settings: the server's flags would not reach it"
    given = [*bound.args, *bound.keywords.values()]
    assert given and all(isinstance(value, AgentSettings) for value in given)
    for value in given:
        assert not any(secret in repr(value) for secret in SECRETS.values())
        assert not any(
            secret in repr(getattr(value, item.name)) for item in fields(value) for secret in SECRETS.values()
        )


@pytest.mark.parametrize("spec", ["agent.factory:create_agent", "examples.clinic.agent:create_agent"])
async def test_shipped_factories_build_their_agent_from_the_view(spec: str) -> None:
    agent = await build_agent(with_settings(load_agent_factory(spec), SERVER), CALL)
    assert isinstance(agent.model, NovaSonicModel) and agent.model.region == "eu-north-1"


def old_factory(call: CallInfo, settings: Settings | None = None) -> BidiAgent:
    """A factory written before AgentSettings: annotated Settings, reading the settings every agent needs."""
    assert settings is not None
    assert settings.can_transfer and settings.transfer_destinations == {}
    prompt = (
        settings.system_prompt or f"Transfer to {settings.transfer_to}; tools time out in {settings.tool_timeout_s}"
    )
    model = create_model(replace(settings, model_id=settings.model_id or "amazon.nova-sonic-v1:0"))
    return BidiAgent(model=model, system_prompt=prompt, name=f"old-{settings.model}-{settings.voice}")


def reads_the_auth_token(call: CallInfo, settings: Settings | None = None) -> BidiAgent:
    assert settings is not None
    raise AssertionError(f"reached with {settings.twilio_auth_token}")


async def test_old_factories_taking_settings_keep_working() -> None:
    agent = await build_agent(with_settings(old_factory, SERVER), CALL)
    assert agent.name == "old-nova-tiffany" and agent.model.model_id == "amazon.nova-sonic-v1:0"  # type: ignore[attr-defined]
    assert agent.system_prompt == "Transfer to +15557654321; tools time out in 7.0"
    with pytest.raises(AttributeError, match="TWILIO_AUTH_TOKEN"):
        await build_agent(with_settings(reads_the_auth_token, SERVER), CALL)


async def test_a_factory_may_name_its_parameter_agent_settings() -> None:
    seen: list[object] = []

    def factory(call: CallInfo, *, agent_settings: AgentSettings) -> BidiAgent:
        seen.append(agent_settings)
        return BidiAgent(model=create_model(agent_settings), name="new")

    await build_agent(with_settings(factory, SERVER), CALL)  # type: ignore[arg-type]
    assert seen == [AgentSettings.from_settings(SERVER)]


def test_the_configured_models_client_is_imported_when_the_app_is_built() -> None:
    """Not on the first call, where a multi-second import would hold the server's event loop."""
    import subprocess
    import sys

    code = (
        "import sys; from dataclasses import replace; from telephony.app import create_app;"
        "from tests.fakes.settings import TEST_SETTINGS as S;"
        "assert 'agent.gemini' not in sys.modules;"
        "create_app(replace(S, model='gemini'), agent_factory=lambda call: None);"
        "assert 'agent.gemini' in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]

"""The default agent: built for real (no network is touched until it starts)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from strands.bidi import BidiAgent

from agent.factory import create_agent
from agent.prompt import system_prompt
from agent.tools import end_conversation
from telephony.bridge.session import model_rates
from telephony.call_info import CallInfo
from telephony.config import Settings

from ..fakes.model import CallTool, Hold, ScriptedModel


def test_default_agent_is_nova_sonic_at_16khz_with_the_hangup_tool() -> None:
    call = CallInfo(call_sid="CA1", stream_sid="MZ1", from_number="+15550001111", parameters={"purpose": "a survey"})
    agent = create_agent(call, Settings(aws_region="eu-north-1", voice="tiffany"))
    assert isinstance(agent, BidiAgent)
    model = agent.model
    assert type(model).__name__ == "BedrockNovaSonicModel"
    assert model.model_id == "amazon.nova-2-5-sonic" and model.region == "eu-north-1"
    assert model_rates(agent) == (16000, 16000)
    assert "end_conversation" in agent.tool_names
    assert "a survey" in (agent.system_prompt or "")


def test_model_id_and_prompt_are_configurable() -> None:
    settings = Settings(model_id="amazon.nova-sonic-v1:0", system_prompt="Be a pirate.")
    agent = create_agent(CallInfo(call_sid="CA1", stream_sid="MZ1"), settings)
    assert agent.model.model_id == "amazon.nova-sonic-v1:0" and agent.system_prompt == "Be a pirate."


def test_a_provider_without_its_extra_says_how_to_install_it() -> None:
    try:
        import google.genai  # noqa: F401
    except ImportError:
        pass
    else:  # pragma: no cover - only when the gemini extra is installed
        pytest.skip("the gemini extra is installed")
    with pytest.raises(RuntimeError, match="uv sync --extra gemini"):
        create_agent(CallInfo(call_sid="CA1", stream_sid="MZ1"), replace(Settings(), model="gemini"))


def test_prompt_is_spoken_style_and_asks_for_goodbye_before_hanging_up() -> None:
    prompt = system_prompt()
    assert "end_conversation" in prompt and "goodbye" in prompt


async def test_end_conversation_outside_a_call_is_an_error_result() -> None:
    model = ScriptedModel([CallTool("end_conversation", {"reason": "test"}), Hold()])
    agent = BidiAgent(model=model, tools=[end_conversation])
    await agent.start()

    async def drain() -> None:
        async for _ in agent.receive():
            pass

    consumer = asyncio.create_task(drain())
    try:
        async with asyncio.timeout(5):
            while not model.tool_results:
                await asyncio.sleep(0.01)
    finally:
        consumer.cancel()
        await agent.stop()
    assert model.tool_results[0].status == "error"
    assert "Not on a phone call" in model.tool_results[0].content[0]["text"]

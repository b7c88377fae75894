"""The default agent: built for real (no network is touched until it starts)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from strands.bidi import BidiAgent

from agent.briefing import briefing_text, create_briefing_agent
from agent.factory import create_agent
from agent.prompt import system_prompt
from agent.tools import end_conversation, transfer_tool
from telephony.bridge.session import model_rates
from telephony.call_info import CallInfo, TransferBrief
from telephony.config import Settings
from telephony.controls import CALL_CONTROL_KEY

from ..fakes.model import CallTool, Hold, ScriptedModel


def test_default_agent_is_nova_sonic_at_16khz_with_the_hangup_tool() -> None:
    call = CallInfo(call_sid="CA1", stream_sid="MZ1", from_number="+15550001111", parameters={"purpose": "a survey"})
    agent = create_agent(call, Settings(aws_region="eu-north-1", voice="tiffany"))
    assert isinstance(agent, BidiAgent)
    model = agent.model
    assert type(model).__name__ == "NovaSonicModel"
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


BRIEF = TransferBrief(
    caller_number="+15550001111",
    destination="+15557654321",
    reason="wants a human",
    summary="Ann wants to move her booking.",
    transcript=(("caller", "I need a person"), ("bot", "Let me put you through")),
)


def test_the_briefing_agent_knows_the_caller_and_can_only_accept_or_decline() -> None:
    call = CallInfo(call_sid="CA2", stream_sid="MZ2", transfer=BRIEF)
    agent = create_briefing_agent(call, Settings())
    assert type(agent.model).__name__ == "NovaSonicModel"
    assert set(agent.tool_names) == {"accept_transfer", "decline_transfer"}
    prompt = agent.system_prompt or ""
    assert "Ann wants to move her booking." in prompt and "caller: I need a person" in prompt
    assert "1 5 5 5 0 0 0 1 1 1 1" in prompt and "press 1" in prompt


def test_the_offline_briefing_agent_reads_a_templated_briefing() -> None:
    agent = create_briefing_agent(CallInfo(call_sid="CA2", stream_sid="MZ2", transfer=BRIEF), Settings(model="local"))
    greeting = agent.model.script.greeting  # type: ignore[attr-defined]
    assert greeting == briefing_text(BRIEF) and "Ann wants to move her booking" in greeting
    assert {intent.name for intent in agent.model.script.intents} == {"accept", "decline", "repeat"}  # type: ignore[attr-defined]


def test_a_caller_back_from_a_transfer_resumes_the_conversation() -> None:
    history = ({"role": "user", "content": [{"text": "I need a person"}]},)
    settings = Settings(transfer_to="+15557654321", transfer_targets="sales=+15550009999")
    agent = create_agent(CallInfo(call_sid="CA1", stream_sid="MZ1", history=history), settings)
    assert agent.messages == [dict(history[0])]
    assert "back with you" in (agent.system_prompt or "") and "sales" in (agent.system_prompt or "")
    assert "transfer_call" in agent.tool_names


async def test_transfer_tool_refuses_a_target_it_does_not_know() -> None:
    class Control:
        def __init__(self) -> None:
            self.transfers: list[tuple[str, str, str]] = []

        def end_call(self, reason: str) -> None: ...

        def transfer_call(self, destination: str, reason: str, summary: str = "") -> None:
            self.transfers.append((destination, reason, summary))

    tool = transfer_tool(None, {"sales": "+15550009999"})
    control = Control()
    context = type("Context", (), {"invocation_state": {CALL_CONTROL_KEY: control}})()
    bad = await tool._tool_func(reason="r", tool_context=context, to="marketing")  # type: ignore[attr-defined]
    good = await tool._tool_func(reason="r", tool_context=context, to="sales", summary="s")  # type: ignore[attr-defined]
    assert bad["status"] == "error" and "sales" in bad["content"][0]["text"]
    assert good["status"] == "success" and control.transfers == [("+15550009999", "r", "s")]

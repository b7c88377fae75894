"""Faults mid-call: the caller always hears the bot or the apology, and the call ends cleanly."""

from __future__ import annotations

import asyncio

from strands import tool

from agent.tools import TimeLimitedTool

from ..conftest import harness
from ..fakes.model import CallTool, Hold, Say, Stall, WaitForAudio, WaitForText
from ..fakes.rest import FakeCallControl
from .test_bridge import frame_hz


@tool
async def slow_lookup(order: str) -> str:
    """Look up an order (hangs, for the test)."""
    await asyncio.sleep(3600)
    return "never"


@tool
def broken_lookup(order: str) -> str:
    """Look up an order (raises, for the test)."""
    raise ConnectionError("database unreachable")


async def test_a_hung_tool_times_out_and_the_agent_can_say_so() -> None:
    script = [CallTool("slow_lookup", {"order": "42"}), Say("Sorry, that is not available", 0.3, tone_hz=1000), Hold()]
    async with harness(script, tools=[TimeLimitedTool(slow_lookup, 0.3)]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(1.2)
            await call.stop()
        [result] = h.model.tool_results
    assert result.status == "error" and "did not finish within 0.3 seconds" in result.content[0]["text"]
    assert any(frame_hz(payload) == 1000 for payload in call.media_payloads())


async def test_a_tool_that_raises_gives_the_agent_an_error_result() -> None:
    script = [CallTool("broken_lookup", {"order": "42"}), Say("Sorry", 0.2, tone_hz=1000), Hold()]
    async with harness(script, tools=[broken_lookup]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.8)
            await call.stop()
        [result] = h.model.tool_results
    assert result.status == "error" and "database unreachable" in result.content[0]["text"]


async def test_caller_audio_during_a_model_reconnect_is_buffered_within_its_bound() -> None:
    """While the model cannot take audio (Nova's connection swap), the newest audio waits; older is dropped."""
    script = [WaitForAudio(0.2), Stall(1.5), WaitForAudio(0.3), Say("back again", 0.3, tone_hz=1000), Hold()]
    async with harness(script, inbound_buffer_ms=400) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(3.0)
            heard = h.model.audio_seconds
            await call.stop()
    assert any(frame_hz(payload) == 1000 for payload in call.media_payloads())  # the call went on
    # ~3 s of caller audio sent; about 1.5 s of it arrived during the stall, of which only 0.4 s was kept.
    assert 1.5 < heard < 2.4


async def test_caller_hangs_up_while_a_tool_runs() -> None:
    script = [CallTool("slow_lookup", {"order": "1"}), Hold()]
    async with harness(script, tools=[TimeLimitedTool(slow_lookup, 30)]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.4)
            await call.stop()
            await call.wait_closed(3)
    # harness(): no task left running, the agent stopped


async def test_caller_hangs_up_during_the_goodbye() -> None:
    rest = FakeCallControl()
    script = [
        Say("Goodbye, have a lovely day", 2.0, tone_hz=1000),
        CallTool("end_conversation", {"reason": "bye"}),
        Hold(),
    ]
    async with harness(script, hangup=rest) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.5)
            await call.stop()
            await call.wait_closed(3)
    assert rest.calls == []  # the caller was already gone: no hang-up needed, nothing errored


async def test_greeting_waits_for_the_agent_and_dtmf_reaches_it() -> None:
    script = [
        WaitForText("Greet"),
        Say("Hello", 0.2, tone_hz=1000),
        WaitForText("pressed 7"),
        Say("Seven", 0.2, tone_hz=400),
        Hold(),
    ]
    async with harness(script, greeting="Greet the caller.") as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.4)
            await call.dtmf("7")
            await call.silence(0.6)
            await call.stop()
    tones = {round(frame_hz(payload), -2) for payload in call.media_payloads()}
    assert {1000.0, 400.0} <= tones

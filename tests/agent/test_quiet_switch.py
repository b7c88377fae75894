"""When the quiet switch-over may replace a connection (agent.quiet_switch), from what the connection was sent and
what it yielded."""

from __future__ import annotations

import time

from strands.bidi.types import BidiMessage, BidiResponseStartEvent, BidiResponseStopEvent, BidiToolUseBlocksEvent
from strands.types.tools import ToolResultBlock, ToolUse

from agent.quiet_switch import OWED_FOR_S, _QuietState


def test_a_tool_result_owes_an_answer_as_a_caller_turn_does() -> None:
    """Found in a long call: the switch came as a tool's result was sent, cutting the answer the model was about to
    give to it."""
    state = _QuietState(opened_at=0.0)
    state.received(BidiToolUseBlocksEvent(tool_uses=[ToolUse(toolUseId="t1", name="lookup", input={})]))
    now = time.monotonic()
    assert not state.quiet(now)  # a tool is running
    state.sent(BidiMessage(content=[ToolResultBlock(tool_use_id="t1", status="success", content=[{"text": "x"}])]))
    assert not state.tools and not state.quiet(time.monotonic())  # its result is in: the model speaks next
    state.received(BidiResponseStartEvent(response_id="r1"))
    state.received(BidiResponseStopEvent(response_id="r1"))
    assert state.quiet(time.monotonic())  # it has answered
    state.sent(BidiMessage(content=[ToolResultBlock(tool_use_id="t2", status="success", content=[{"text": "x"}])]))
    assert state.quiet(time.monotonic() + OWED_FOR_S + 0.1)  # a result it says nothing to is not waited on for ever

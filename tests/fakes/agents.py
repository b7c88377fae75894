"""Agent factories for tests that run ``voicebot serve`` as a real process (``--agent tests.fakes.agents:…``)."""

from __future__ import annotations

from strands.bidi import BidiAgent

from agent.tools import end_conversation
from telephony.call_info import CallInfo

from .model import CallTool, Hold, Say, ScriptedModel, WaitForText


def polite_agent(call: CallInfo) -> BidiAgent:
    """Greets, then says goodbye and hangs up when told to wrap up (e.g. at shutdown)."""
    script = [
        Say("Hello!", 0.3, tone_hz=1000),
        WaitForText("Say a short goodbye"),
        Say("Goodbye!", 0.4, tone_hz=400),
        CallTool("end_conversation", {"reason": "the service is restarting"}),
    ]
    model = ScriptedModel([*script, Hold()])
    return BidiAgent(model=model, tools=[end_conversation], system_prompt="test")


def silent_agent(call: CallInfo) -> BidiAgent:
    """Never says anything (its calls must be ended for it)."""
    return BidiAgent(model=ScriptedModel([Hold()]), tools=[end_conversation], system_prompt="test")

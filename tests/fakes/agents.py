"""Agent factories for tests that run ``voicebot serve`` as a real process (``--agent tests.fakes.agents:…``)."""

from __future__ import annotations

from strands.bidi import BidiAgent

from agent.tools import end_conversation
from telephony.call_info import CallInfo

from .model import CallTool, Hold, Say, ScriptedModel, UserSaid, WaitForAudio, WaitForText


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


def chatty_agent(call: CallInfo) -> BidiAgent:
    """Greets, hears the caller's key press and words, answers, then talks on until the call is cut."""
    script = [
        Say("Hello, front desk.", 0.4, tone_hz=1000),
        WaitForText("pressed 5"),
        Say("You pressed five.", 0.4, tone_hz=600),
        WaitForAudio(0.5),
        UserSaid("what time is it"),
        Say("It is noon.", 0.4, tone_hz=500),
        Say("And there is more to say, slowly.", 30.0, tone_hz=700, realtime=True),
    ]
    model = ScriptedModel([*script, Hold()])
    return BidiAgent(model=model, tools=[end_conversation], system_prompt="test")

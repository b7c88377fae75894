"""Agent factories for a warm transfer run in real server processes (``voicebot serve --agent ...``).

The same scripted models as the in-process warm-transfer tests (tests/bridge/test_warm_transfer.py), as
importable module-level functions a worker process loads by name:

- ``--agent tests.operations.warm_agents:caller_agent``: asks for a transfer (CALLER_SCRIPT), or, on a caller
  brought back to the bot, apologises (RETURNED_SCRIPT);
- ``VOICEBOT_BRIEFING_AGENT=tests.operations.warm_agents:briefing_agent``: briefs the person, who says yes,
  and accepts the transfer (BRIEF_BY_VOICE).
"""

from __future__ import annotations

from strands.bidi import BidiAgent

from agent.briefing import briefing_prompt
from agent.tools import accept_transfer, decline_transfer, end_conversation, transfer_tool
from telephony.call_info import CallInfo
from telephony.config import Settings

from ..bridge.test_warm_transfer import BRIEF_BY_VOICE, CALLER_SCRIPT, RETURNED_SCRIPT
from ..fakes.model import ScriptedModel


def caller_agent(call: CallInfo, settings: Settings) -> BidiAgent:
    """The caller's agent: wants a person (the transfer tool is bound to VOICEBOT_TRANSFER_TO)."""
    model = ScriptedModel(list(RETURNED_SCRIPT if call.history else CALLER_SCRIPT))
    tools = [end_conversation, transfer_tool(settings.transfer_to)]
    return BidiAgent(model=model, tools=tools, system_prompt="test", messages=list(call.history) or None)


def briefing_agent(call: CallInfo) -> BidiAgent:
    """The briefing agent: tells the person who is calling, hears "yes put her through", accepts."""
    assert call.transfer is not None, "a briefing agent is built for a briefing leg only"
    model = ScriptedModel(list(BRIEF_BY_VOICE))
    prompt = briefing_prompt(call.transfer)
    return BidiAgent(model=model, tools=[accept_transfer, decline_transfer], system_prompt=prompt)

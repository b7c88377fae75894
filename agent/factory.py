"""The default agent factory: what ``voicebot serve`` builds for each call unless ``--agent`` says otherwise.

Bring your own agent the same way: write ``def my_agent(call: CallInfo) -> BidiAgent`` (plain or
async) and run ``voicebot serve --agent mypackage.module:my_agent``.
"""

from __future__ import annotations

from typing import Any

from strands.bidi import BidiAgent

from telephony.call_info import CallInfo
from telephony.config import AgentSettings, Settings, agent_settings

from .models import create_model
from .prompt import system_prompt
from .tools import end_conversation, time_limited, transfer_tool


def create_agent(call: CallInfo, settings: AgentSettings | Settings | None = None) -> BidiAgent:
    """A phone agent on the configured model, with the hang-up tool (the transfer tool when configured, and the
    offline model's clock with the offline model).

    The server passes its ``AgentSettings`` (its flags included, no secrets); only a caller outside a server has
    them re-read. A caller coming back from a warm transfer that did not go through brings ``call.history``: the
    agent starts with that conversation, so it does not greet them as a stranger.
    """
    settings = agent_settings(settings)
    targets = settings.transfer_destinations
    prompt = settings.system_prompt or system_prompt(
        call.from_number,
        call.parameters.get("purpose", ""),
        can_transfer=settings.can_transfer,
        targets=tuple(targets),
        resumed=bool(call.history),
    )
    tools: list[Any] = [end_conversation]
    if settings.can_transfer:
        tools.append(transfer_tool(settings.transfer_to, targets))
    if settings.model == "local":
        from .offline.clock import current_time

        tools.append(current_time)  # the offline script looks the time up with it (keypad 1, "what time is it")
    return BidiAgent(
        model=create_model(settings),
        tools=time_limited(tools, settings.tool_timeout_s),
        system_prompt=prompt,
        messages=[dict(message) for message in call.history] or None,  # type: ignore[misc]
        name="voicebot",
    )

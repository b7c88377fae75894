"""Tools that act on the phone call itself.

The call session hands each agent a ``CallControl`` in the agent's invocation state; tools
reach it through their ``ToolContext``. Agents used outside a call get a clear error result.
"""

from __future__ import annotations

from typing import Any, Protocol

from strands import tool
from strands.types.tools import ToolContext

CALL_CONTROL_KEY = "voicebot_call"
"""Key of the ``CallControl`` in ``invocation_state``."""


class CallControl(Protocol):
    """What the call session offers to tools. Safe to call from any thread."""

    def end_call(self, reason: str) -> None:
        """Hang up once everything the bot has said so far has been heard."""


def call_control(tool_context: ToolContext) -> CallControl | None:
    """The current call's controls, or None when the agent is not on a call."""
    control: Any = tool_context.invocation_state.get(CALL_CONTROL_KEY)
    return control if callable(getattr(control, "end_call", None)) else None


@tool(context=True)
async def end_conversation(reason: str, tool_context: ToolContext) -> dict[str, Any]:
    """End the phone call. Say a short goodbye first; the line closes once it has been heard.

    Use when the caller says goodbye, asks to hang up, or the conversation is clearly complete.

    Args:
        reason: Why the conversation is ending, in a few words (for the call log).
    """
    control = call_control(tool_context)
    if control is None:
        return {"status": "error", "content": [{"text": "Not on a phone call: there is no call to end."}]}
    control.end_call(reason)
    return {
        "status": "success",
        "content": [{"text": "The call will end as soon as your goodbye has played. Do not say anything more."}],
    }

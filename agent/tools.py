"""Tools that act on the phone call itself.

The call session hands each agent a ``CallControl`` in the agent's invocation state; tools
reach it through their ``ToolContext``. Agents used outside a call get a clear error result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from strands import tool
from strands.types.tools import AgentTool, ToolContext, ToolGenerator, ToolSpec, ToolUse

from telephony.controls import CALL_CONTROL_KEY, BriefingControl, CallControl


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


def transfer_tool(destination: str | None, targets: Mapping[str, str] | None = None) -> Any:
    """A ``transfer_call`` tool bound to ``destination`` (E.164 number or ``sip:`` URI) and/or named ``targets``.

    Opt-in: the default agent adds it only when VOICEBOT_TRANSFER_TO (or VOICEBOT_TRANSFER_TARGETS) is set,
    so a model can never dial a number of its own choosing: it may only name one of ``targets``.
    """
    targets = dict(targets or {})
    if not destination and not targets:
        raise ValueError("transfer_tool needs a destination or named targets")
    names = ", ".join(sorted(targets))

    @tool(name="transfer_call", context=True)
    async def transfer_call(reason: str, tool_context: ToolContext, summary: str = "", to: str = "") -> dict[str, Any]:
        """Transfer the caller to a human colleague. First tell the caller, in one short sentence, that
        you are transferring them; the transfer happens once that sentence has been heard.

        Use when the caller asks for a person or needs help you cannot give.

        Args:
            reason: Why the caller is being transferred, in a few words (for the call log).
            summary: For the colleague who takes over: who is calling, what they want, and what you have
                done so far, in two or three sentences.
            to: Which team to transfer to, when the system prompt lists several; leave empty otherwise.
        """
        control = call_control(tool_context)
        if control is None:
            return {"status": "error", "content": [{"text": "Not on a phone call: there is no call to transfer."}]}
        target = targets.get(to.strip()) if to.strip() else destination
        if target is None:
            known = names or "none"
            return {"status": "error", "content": [{"text": f"Unknown transfer target {to!r}. Known: {known}."}]}
        control.transfer_call(target, reason, summary)
        return {
            "status": "success",
            "content": [{"text": "The caller will be transferred as soon as your hand-off sentence has played."}],
        }

    if targets:
        transfer_call.tool_spec["description"] += f" Teams you may name in 'to': {names}."
    return transfer_call


def briefing_control(tool_context: ToolContext) -> BriefingControl | None:
    """The briefing leg's controls, or None when the agent is not briefing someone on a call."""
    control: Any = tool_context.invocation_state.get(CALL_CONTROL_KEY)
    return control if callable(getattr(control, "accept_transfer", None)) else None


@tool(context=True)
async def accept_transfer(tool_context: ToolContext) -> dict[str, Any]:
    """The colleague agrees to take the call. Say one short sentence first (for example "Connecting you
    now"); they are connected to the caller once it has been heard, and you leave the call.
    """
    control = briefing_control(tool_context)
    if control is None:
        return {"status": "error", "content": [{"text": "Not briefing anyone: there is no transfer to accept."}]}
    control.accept_transfer()
    return {"status": "success", "content": [{"text": "Connecting them once your sentence has played."}]}


@tool(context=True)
async def decline_transfer(reason: str, tool_context: ToolContext) -> dict[str, Any]:
    """The colleague will not take the call (busy, wrong team, no). Say a short goodbye first; the call
    ends once it has been heard, and the caller goes back to the phone assistant.

    Args:
        reason: Why, in a few words; the phone assistant tells the caller.
    """
    control = briefing_control(tool_context)
    if control is None:
        return {"status": "error", "content": [{"text": "Not briefing anyone: there is no transfer to decline."}]}
    control.decline_transfer(reason)
    return {"status": "success", "content": [{"text": "The call ends once your goodbye has played."}]}


class ToolTimeoutError(TimeoutError):
    """A tool ran past its time limit; the agent receives this as an error result it can speak about."""


class TimeLimitedTool(AgentTool):
    """Wraps a tool so a hung call (a slow API, a stuck database) cannot leave the caller in silence.

    Past ``seconds`` the tool's run is cancelled and the model gets an error result telling it to
    let the caller know. (A plain function tool runs in a worker thread, which cannot be stopped:
    its late result is discarded.)
    """

    def __init__(self, tool: AgentTool, seconds: float) -> None:
        super().__init__()
        self._tool = tool
        self._seconds = seconds

    @property
    def tool_name(self) -> str:
        return self._tool.tool_name

    @property
    def tool_spec(self) -> ToolSpec:
        return self._tool.tool_spec

    @property
    def tool_type(self) -> str:
        return self._tool.tool_type

    async def stream(self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any) -> ToolGenerator:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._seconds
        events = aiter(self._tool.stream(tool_use, invocation_state, **kwargs))
        while True:
            try:
                event = await asyncio.wait_for(anext(events), max(0.0, deadline - loop.time()))
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise ToolTimeoutError(
                    f"{self.tool_name} did not finish within {self._seconds:g} seconds. "
                    "Tell the caller it is not available right now."
                ) from None
            yield event


def time_limited(tools: list[Any], seconds: float) -> list[Any]:
    """Every tool in ``tools`` with a time limit (tools already limited are left as they are)."""
    return [tool if isinstance(tool, TimeLimitedTool) else TimeLimitedTool(tool, seconds) for tool in tools]

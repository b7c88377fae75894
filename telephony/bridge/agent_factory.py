"""Loading the user's agent factory (``module:function``, the way uvicorn takes ``module:app``)."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable

from strands.bidi import BidiAgent

from telephony.call_info import CallInfo
from telephony.config import AgentSettings, Settings, agent_settings

from .user_code import UserCodeError, import_current_folder, load_target

AgentFactory = Callable[[CallInfo], BidiAgent | Awaitable[BidiAgent]]


class AgentFactoryError(UserCodeError):
    """The factory spec cannot be loaded or did not return a BidiAgent."""


def load_agent_factory(spec: str) -> AgentFactory:
    """Import ``package.module:function`` (the working folder included, as uvicorn does); errors say what to fix."""
    import_current_folder()
    try:
        target = load_target(spec, "the agent factory")
    except UserCodeError as error:
        raise AgentFactoryError(str(error)) from error
    if not callable(target):
        raise AgentFactoryError(f"{spec!r} is not callable: point --agent at a function taking a CallInfo")
    return target  # type: ignore[no-any-return]


SETTINGS_PARAMETERS = ("agent_settings", "settings")
"""The keyword a factory takes its settings by: either name gets the same ``AgentSettings`` view."""


def with_settings(factory: AgentFactory, settings: Settings | AgentSettings) -> AgentFactory:
    """The factory, given the agent's view of the server's settings when it takes a ``settings`` keyword.

    The settings a server runs with include its command-line flags (``voicebot serve --model local``);
    a factory that read the environment again would never see them. What it gets is ``AgentSettings``:
    the model, voice, prompt, greeting, tool timeout and transfer settings under their usual names, and
    never the Twilio credentials, the call-token key or the console token (reading a server setting from
    it raises an AttributeError naming the variable). Factories without such a parameter are returned
    unchanged.
    """
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # builtins and some callables have no signature to read
        return factory
    keyword_kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for name in SETTINGS_PARAMETERS:
        wanted = parameters.get(name)
        if wanted is not None and wanted.kind in keyword_kinds:
            return functools.partial(factory, **{name: agent_settings(settings)})
    return factory


async def build_agent(factory: AgentFactory, call: CallInfo) -> BidiAgent:
    """Call the factory (plain functions run in a thread: building clients may touch disk)."""
    if inspect.iscoroutinefunction(factory):
        agent = await factory(call)
    else:
        agent = await asyncio.to_thread(factory, call)
        if inspect.isawaitable(agent):
            agent = await agent
    if not isinstance(agent, BidiAgent):
        raise AgentFactoryError(f"agent factory returned {type(agent).__name__}, expected strands.bidi.BidiAgent")
    return agent


def agent_info(agent: BidiAgent) -> dict[str, str]:
    """Which agent and model a call talks to, for recordings and the console (never secrets)."""
    model = agent.model
    model_id = getattr(model, "model_id", None) or (getattr(model, "config", None) or {}).get("model_id")
    return {
        "name": str(getattr(agent, "name", "") or ""),
        "model": type(model).__name__,
        "model_id": str(model_id or ""),
    }

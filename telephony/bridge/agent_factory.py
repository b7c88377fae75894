"""Loading the user's agent factory (``module:function``, the way uvicorn takes ``module:app``)."""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from strands.bidi import BidiAgent

from telephony.call_info import CallInfo
from telephony.config import Settings

AgentFactory = Callable[[CallInfo], BidiAgent | Awaitable[BidiAgent]]


class AgentFactoryError(RuntimeError):
    """The factory spec cannot be loaded or did not return a BidiAgent."""


def load_agent_factory(spec: str) -> AgentFactory:
    """Import ``package.module:function``; errors say what to fix."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise AgentFactoryError(f"agent factory {spec!r} must look like 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise AgentFactoryError(f"cannot import {module_name!r} for the agent factory: {error}") from error
    target: Any = module
    for part in attribute.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise AgentFactoryError(f"module {module_name!r} has no attribute {attribute!r}")
    if not callable(target):
        raise AgentFactoryError(f"{spec!r} is not callable: point --agent at a function taking a CallInfo")
    return target  # type: ignore[no-any-return]


def with_settings(factory: AgentFactory, settings: Settings) -> AgentFactory:
    """The factory, given the server's settings when it takes a ``settings`` keyword.

    The settings a server runs with include its command-line flags (``voicebot serve --model local``);
    a factory that read the environment again would never see them. Factories without a ``settings``
    parameter are returned unchanged.
    """
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # builtins and some callables have no signature to read
        return factory
    wanted = parameters.get("settings")
    if wanted is None or wanted.kind not in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        return factory
    return functools.partial(factory, settings=settings)


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

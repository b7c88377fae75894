"""A scenario's ``brain:`` on a local model server (``voicebot test --local nova|openai|gemini``).

The agent keeps the model its factory builds, and that model's real client talks its provider's wire protocol to
a server on 127.0.0.1 playing the scenario's brain (:class:`~telephony.simulation.scenarios.nova_replies.
NovaScriptedBrain`: every local server takes local Nova's brains). The client is pointed there through the
environment variables a user would set, for the run only: ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` and
``AWS_CA_BUNDLE`` (Nova), ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` (OpenAI), ``GOOGLE_GEMINI_BASE_URL``,
``SSL_CERT_FILE`` and ``GOOGLE_API_KEY`` (Gemini). The servers are imported only when used.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from telephony.simulation.scenarios.environment import scoped_environment
from telephony.simulation.scenarios.scenario import Scenario

__all__ = ["LOCAL_MODELS", "LocalModel", "local_model", "wrong_model"]


@dataclass(frozen=True)
class LocalModel:
    """One provider's local server, as ``voicebot test --local NAME`` uses it."""

    name: str
    """``--local`` value, and the ``VOICEBOT_MODEL`` the run's settings get."""
    title: str
    """What the progress lines call the server."""
    model_class: str
    """The model class (module.qualname) that connects where the environment says, so reaches the server; the
    agent's model must be it or derive from it."""
    user_class: str
    """How the error names that class to a user (an importable name)."""
    strands_class: str
    """strands' own class of the provider (module.qualname), when it is not ``model_class``."""
    variable: str
    """The environment variable pointing the client at the server."""

    def is_its_model(self, model: Any) -> bool:
        return _derives(model, self.model_class)


def _derives(model: Any, qualified: str) -> bool:
    return any(f"{kind.__module__}.{kind.__qualname__}" == qualified for kind in type(model).__mro__)


LOCAL_MODELS = {
    "nova": LocalModel(
        "nova",
        "local Nova Sonic emulator",
        "agent.nova.model.NovaSonicModel",
        "agent.nova.NovaSonicModel",
        "strands.bidi.models.bedrock.BedrockNovaSonicModel",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    ),
    "openai": LocalModel(
        "openai",
        "local OpenAI Realtime server",
        "agent.openai.model.OpenAIRealtime",
        "agent.openai.OpenAIRealtime",
        "strands.bidi.models.openai.realtime.OpenAIRealtimeModel",
        "OPENAI_BASE_URL",
    ),
    "gemini": LocalModel(
        "gemini",
        "local Gemini Live server",
        "strands.bidi.models.google.GoogleGeminiLiveModel",
        "strands.bidi.models.GoogleGeminiLiveModel",
        "",
        "GOOGLE_GEMINI_BASE_URL",
    ),
}
"""The ``--local`` choices. strands' Nova and OpenAI clients always dial the public endpoint, so only this
project's adapters of them (which read the endpoint variables at each start) reach a local server; google-genai
reads ``GOOGLE_GEMINI_BASE_URL`` itself."""

LOCAL_OPENAI_ENV: dict[str, str | None] = {"OPENAI_ORGANIZATION": None, "OPENAI_PROJECT": None}
"""Nothing that could send the client to another account (the key and base URL are the server's)."""
LOCAL_GEMINI_ENV: dict[str, str | None] = {
    "GOOGLE_API_KEY": "local-gemini-key-not-checked",
    "GEMINI_API_KEY": None,
    "GOOGLE_GENAI_USE_VERTEXAI": None,
    "GOOGLE_VERTEX_BASE_URL": None,
    "SSL_CERT_DIR": None,
}
"""A fake key (the server checks none) and nothing that could send the client to Vertex AI or another CA."""


def wrong_model(local: LocalModel, model: Any) -> str | None:
    """Why ``model`` would not reach ``local``'s server (None: it would), with what to build instead."""
    build = (
        f"Build {local.user_class} (strands' model plus the endpoint from {local.variable}), or call "
        f"agent.models.create_model(settings) in a factory taking `settings` (it is given model={local.name} for "
        "the run)"
    )
    if local.is_its_model(model):
        if getattr(model, "_endpoint", None) is not None:
            return (
                f"--local {local.name}: the agent factory built {type(model).__name__} with an explicit endpoint, "
                f"so it would not connect to the {local.title} (which {local.variable} points at for the run): "
                "leave `endpoint` out and it is read from the environment at each start"
            )
        return None
    if local.strands_class and _derives(model, local.strands_class):
        return (
            f"--local {local.name}: the agent factory built strands' {type(model).__name__}, which always dials "
            f"the provider's public endpoint: it would reach the real service with your credentials, not the "
            f"{local.title}. {build}."
        )
    return (
        f"--local {local.name} plays the brain on the {local.title}, which only {local.user_class} reaches; "
        f"the agent factory built {type(model).__name__}. {build}."
    )


def _loopback_no_proxy() -> dict[str, str | None]:
    """Loopback past any proxy (websockets honours the proxy variables)."""
    values: dict[str, str | None] = {}
    for name in ("NO_PROXY", "no_proxy"):
        values[name] = ",".join(filter(None, [os.environ.get(name, ""), "127.0.0.1", "localhost"]))
    return values


@contextlib.asynccontextmanager
async def local_model(name: str, scenario: Scenario, label: list[str]) -> AsyncIterator[None]:
    """The ``name`` server playing ``scenario.brain``, with the environment pointing at it for the block.

    What the brain could not answer, and the server's protocol violations, are appended to ``label``."""
    if name == "nova":
        from telephony.simulation.scenarios.on_local_nova import local_nova

        async with local_nova(scenario, label):
            yield
        return
    from telephony.simulation.scenarios.nova_replies import NovaScriptedBrain

    assert scenario.brain is not None
    holder: list[Any] = []
    brain = await asyncio.to_thread(NovaScriptedBrain, scenario.brain, lambda: _prompt(name, holder))
    server, values = await _start(name, brain)
    holder.append(server)
    try:
        with scoped_environment({**values, **_loopback_no_proxy()}):
            yield
    finally:
        await server.aclose()
        label.extend([*brain.brain.unanswered, *brain.brain.missing] if brain._brain is not None else [])
        label.extend(f"{LOCAL_MODELS[name].title}: {violation}" for violation in server.violations)


async def _start(name: str, brain: Any) -> tuple[Any, dict[str, str | None]]:
    if name == "openai":
        from telephony.simulation.local_openai import LocalOpenAI

        openai = await LocalOpenAI(brain=brain).start()
        return openai, {**LOCAL_OPENAI_ENV, "OPENAI_BASE_URL": openai.base_url, "OPENAI_API_KEY": openai.api_key}
    if name == "gemini":
        from telephony.simulation.local_gemini import LocalGemini

        gemini = await LocalGemini(brain=brain).start()
        values = {**LOCAL_GEMINI_ENV, "GOOGLE_GEMINI_BASE_URL": gemini.base_url, "SSL_CERT_FILE": str(gemini.ca_file)}
        return gemini, values
    raise ValueError(f"no local server for {name!r}: choose one of {', '.join(LOCAL_MODELS)}")


def _prompt(name: str, holder: list[Any]) -> str | None:
    """The system prompt the agent's client sent in its latest session (for ``{prompt:Name}`` in the brain)."""
    sessions = holder[0].sessions if holder else []
    if not sessions:
        return None
    latest = sessions[-1]
    prompt: Callable[[], Any] = {
        "openai": lambda: latest.session.get("instructions"),
        "gemini": lambda: latest.info.system_prompt if latest.info is not None else None,
    }[name]
    return prompt() or None

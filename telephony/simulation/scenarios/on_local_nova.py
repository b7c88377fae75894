"""A scenario's ``brain:`` on the local Nova Sonic emulator (``voicebot test --local-nova``), with the AWS
environment pointing at it for the call. The emulator and the brain adapter are imported only when used.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from telephony.simulation.scenarios.environment import scoped_environment
from telephony.simulation.scenarios.scenario import Scenario

LOCAL_NOVA_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDLOCALNOVA0000000",
    "AWS_SECRET_ACCESS_KEY": "local-nova-secret-not-checked",
    "AWS_SESSION_TOKEN": None,
    "AWS_PROFILE": None,
    "AWS_ENDPOINT_URL": None,
    "AWS_EC2_METADATA_DISABLED": "true",
}
"""Fake keys (the emulator checks none) and nothing that could send the client elsewhere."""


@contextlib.asynccontextmanager
async def local_nova(scenario: Scenario, label: list[str]) -> AsyncIterator[None]:
    """The emulator playing ``scenario.brain``, with the AWS environment pointing at it for the call."""
    from telephony.simulation.local_nova import LocalNova
    from telephony.simulation.scenarios.nova_replies import NovaScriptedBrain

    assert scenario.brain is not None
    holder: list[Any] = []

    def prompt() -> str | None:
        sessions = holder[0].sessions if holder else []
        return sessions[-1].system_prompts[0] if sessions and sessions[-1].system_prompts else None

    brain = await asyncio.to_thread(NovaScriptedBrain, scenario.brain, prompt)
    async with LocalNova(brain=brain) as nova:
        holder.append(nova)
        values = {
            **LOCAL_NOVA_ENV,
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": nova.endpoint,
            "AWS_CA_BUNDLE": str(nova.ca_file),
        }
        try:
            with scoped_environment(values):
                yield
        finally:
            notes = [*brain.brain.unanswered, *brain.brain.missing] if brain._brain is not None else []
            label.extend(notes)
            label.extend(f"local Nova: {violation}" for violation in nova.violations)

"""Agent factories as a user might write them (tests only): strands' Nova model built directly, and an agent whose
model cannot start (as without AWS credentials)."""

from __future__ import annotations

from typing import Any

from strands.bidi import BidiAgent
from strands.bidi.models import BedrockNovaSonicModel

from agent.offline.model import OfflineModel
from agent.tools import end_conversation
from telephony.call_info import CallInfo

PROMPT = "You answer the phone for a bakery.\nBakery name: Crumbs\n"


def direct_nova(call: CallInfo) -> BidiAgent:
    """The README's first draft: strands' own BedrockNovaSonicModel, which always dials AWS."""
    model = BedrockNovaSonicModel(model_id="amazon.nova-2-5-sonic", region="us-east-1")
    return BidiAgent(model=model, tools=[end_conversation], system_prompt=PROMPT)


class NoCredentialsModel(OfflineModel):
    """A model whose connection fails, as Nova Sonic's does without AWS credentials."""

    async def start(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("Unable to locate credentials")


def cannot_start(call: CallInfo) -> BidiAgent:
    return BidiAgent(model=NoCredentialsModel(), tools=[end_conversation], system_prompt=PROMPT)


def bakery(call: CallInfo) -> BidiAgent:
    """A working agent of one's own (its model is replaced by the scripted brain in scenario runs)."""
    return BidiAgent(model=OfflineModel(), tools=[end_conversation], system_prompt=PROMPT)

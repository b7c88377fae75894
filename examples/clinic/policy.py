"""Questions about the clinic's policies, answered by a sub-agent: a Strands ``Agent`` over the policy text.

The voice model stays short and conversational; the sub-agent reads the whole policy document and answers one
question in a sentence or two, which the voice model then says. Its text model is Nova Lite on Bedrock
(``CLINIC_TEXT_MODEL`` to choose another Bedrock model id), or, during a scripted-brain test run or with
``CLINIC_TEXT_MODEL=offline``, :class:`agent.scripted.ExtractiveTextModel`, which needs no account.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from strands import Agent, tool

from agent.scripted import ExtractiveTextModel, stand_ins_active

DEFAULT_TEXT_MODEL = "us.amazon.nova-lite-v1:0"

POLICIES = """\
Cancellations: please cancel at least 24 hours before your appointment, or a late cancellation fee of 25 dollars\
applies.
Missed appointments: after two missed appointments we ask you to pay a 25 dollar deposit when booking.
Opening hours: we are open Monday to Friday from 8 am to 6 pm, and closed on weekends and public holidays.
Arrival: please arrive 10 minutes early and bring your insurance card and a photo ID.
Insurance: we accept most major insurance plans; self-pay patients pay 90 dollars for a standard visit.
Prescriptions: repeat prescriptions are ready two working days after you ask for them.
Children: patients under 16 must come with a parent or guardian.
Parking: free parking is available behind the clinic, on Mill Street.
"""

POLICY_PROMPT = (
    "You answer questions about the Riverside Family Clinic's policies, for a receptionist who will read your "
    "answer to a caller on the phone. Answer in one or two short spoken sentences, only from the policies below; "
    "if they do not cover the question, say so.\n\n" + POLICIES
)


def policy_model() -> Any:
    """The sub-agent's text model (see the module docstring)."""
    choice = os.environ.get("CLINIC_TEXT_MODEL", "")
    if choice == "offline" or stand_ins_active():
        return ExtractiveTextModel()
    from strands.models import BedrockModel

    return BedrockModel(model_id=choice or DEFAULT_TEXT_MODEL, region_name=os.environ.get("AWS_REGION", "us-east-1"))


def answer(question: str) -> str:
    """Ask the policy sub-agent (blocking: a model call)."""
    agent = Agent(model=policy_model(), system_prompt=POLICY_PROMPT, callback_handler=None)
    return str(agent(question)).strip()


@tool
async def ask_policy(question: str) -> dict[str, Any]:
    """Answer a question about the clinic's policies: cancellations, fees, opening hours, insurance, parking,
    prescriptions, what to bring. Read the answer to the caller.

    Args:
        question: The caller's question, in a full sentence.
    """
    text = await asyncio.to_thread(answer, question)
    return {"status": "success", "content": [{"text": text}]}

"""A deliberately broken copy of the clinic agent (tests only): its transfer tool is gone and its prompt names
another clinic. Its scenarios must fail, saying which expectation failed and where in the call."""

from __future__ import annotations

from strands.bidi import BidiAgent

from agent.models import create_model
from examples.clinic import agent as clinic
from telephony.call_info import CallInfo
from telephony.config import load_settings


def create_agent(call: CallInfo) -> BidiAgent:
    settings = load_settings(dotenv=None)
    tools = [tool for tool in clinic.tools(settings) if tool.tool_name != "transfer_call"]
    prompt = clinic.PROMPT.replace("Riverside Family Clinic", "Hillside Dental")
    return BidiAgent(model=create_model(settings), tools=tools, system_prompt=prompt)

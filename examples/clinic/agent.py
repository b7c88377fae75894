"""The Riverside Family Clinic's appointment line: ``voicebot serve --agent examples.clinic.agent:create_agent``.

Tools: ``find_open_slots`` and ``book_appointment`` over the appointment book (SQLite, see ``database``),
``ask_policy`` (a sub-agent over the policy document, see ``policy``), ``transfer_call`` to the front desk
(``CLINIC_FRONT_DESK``, a number or ``sip:`` address) and ``end_conversation``. The voice model is whatever
``VOICEBOT_MODEL`` says (Nova Sonic by default).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from strands import tool
from strands.bidi import BidiAgent

from agent.models import create_model
from agent.tools import end_conversation, time_limited, transfer_tool
from telephony.call_info import CallInfo
from telephony.config import AgentSettings, Settings, agent_settings

from . import database
from .policy import ask_policy

FRONT_DESK = "+15005550010"

PROMPT = """\
You answer the phone for a family doctor's clinic. You are heard, not read: short spoken sentences, no lists.
Clinic name: Riverside Family Clinic
Opening hours: Monday to Friday, 8 am to 6 pm
Greeting: Thank you for calling Riverside Family Clinic. How can I help?
Keypad menu: press 1 to book, 2 for opening hours, 0 for the front desk.

To book: ask which day, call find_open_slots, offer the times it gives, ask for the caller's full name, then call
book_appointment and read back the day, time and doctor. Never say a slot is booked unless book_appointment
said so. For questions about cancellations, fees, opening hours, insurance, parking or what to bring, call
ask_policy and read its answer. If the caller asks for a person, a nurse, or something you cannot do, say you are
transferring them and call transfer_call. When the caller says goodbye, say a short goodbye and call
end_conversation.
"""


@tool
async def find_open_slots(day: str) -> dict[str, Any]:
    """The free appointment times on one weekday.

    Args:
        day: A weekday, Monday to Friday.
    """
    name = database.normal_day(day)
    if name is None:
        return _error(f"{day!r} is not a weekday the clinic is open: ask for Monday to Friday.")
    slots = await asyncio.to_thread(database.open_slots, name)
    if not slots:
        return _ok(f"There are no open slots on {name}.")
    times = ", ".join(f"{slot.time} with {slot.doctor}" for slot in slots[:3])
    return _ok(f"Open on {name}: {times}.")


@tool
async def book_appointment(day: str, time: str, patient_name: str, phone: str = "") -> dict[str, Any]:
    """Book a free slot for a patient. Only call it with a day and time find_open_slots offered.

    Args:
        day: The weekday of the slot.
        time: The slot's time, such as 9:30.
        patient_name: The patient's full name.
        phone: A call-back number, if the caller gave one.
    """
    name = database.normal_day(day)
    if name is None:
        return _error(f"{day!r} is not a weekday the clinic is open.")
    slot = await asyncio.to_thread(database.book, name, database.normal_time(time), patient_name.strip(), phone)
    if slot is None:
        return _error(f"{name} at {time} is not free any more: call find_open_slots again and offer another time.")
    return _ok(f"Booked: {slot.patient} on {slot.day} at {slot.time} with {slot.doctor}.")


def _ok(text: str) -> dict[str, Any]:
    return {"status": "success", "content": [{"text": text}]}


def _error(text: str) -> dict[str, Any]:
    return {"status": "error", "content": [{"text": text}]}


def tools(settings: AgentSettings | Settings) -> list[Any]:
    front_desk = os.environ.get("CLINIC_FRONT_DESK", FRONT_DESK)
    chosen = [find_open_slots, book_appointment, ask_policy, transfer_tool(front_desk), end_conversation]
    return time_limited(chosen, settings.tool_timeout_s)


def create_agent(call: CallInfo, settings: AgentSettings | None = None) -> BidiAgent:
    """The clinic's phone agent for one call (the server passes its AgentSettings: model, voice, tool timeout)."""
    settings = agent_settings(settings)
    prompt = PROMPT + (f"\nThe caller's number is {call.from_number}.\n" if call.from_number else "")
    return BidiAgent(model=create_model(settings), tools=tools(settings), system_prompt=prompt, name="riverside-clinic")

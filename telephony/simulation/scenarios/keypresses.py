"""``expect.keys``: each keypress reached the agent, in order, and the bot answered it.

A keypad menu fails quietly: the digit arrives, the agent is told, and the bot says nothing (or carries on
with what it was saying). So a key counts as answered only when the model began a new response after it was
told, before the next key.
"""

from __future__ import annotations

import re
from typing import Any

from telephony.simulation.scenarios.outcome import CallOutcome, Finding, moment
from telephony.simulation.scenarios.scenario import Where

__all__ = ["check_keys"]

_TOLD = re.compile(r"pressed\s+([0-9*#])\b", re.IGNORECASE)
_RESPONSE_STARTS = ("bidi_response_start", "bidi_audio_start")


def check_keys(keys: str, where: Where, outcome: CallOutcome) -> list[Finding]:
    told = _keys_told(outcome.records)
    pressed = "".join(digit for digit, _, _ in told) or "none"
    position = 0
    for digit in keys:
        index = next((i for i in range(position, len(told)) if told[i][0] == digit), None)
        if index is None:
            return [Finding(where, f"the agent was never told of key {digit} (keys it was told of: {pressed})")]
        _, at, answered = told[index]
        if not answered:
            return [
                Finding(
                    where,
                    f"the caller pressed {digit} (the agent was told at {moment(at)}) and the bot did not answer "
                    f"before {'the next key' if index + 1 < len(told) else 'the call ended'}",
                )
            ]
        position = index + 1
    return []


def _keys_told(records: list[dict[str, Any]]) -> list[tuple[str, float, bool]]:
    """(digit, when the agent was told, whether a response began before the next key) for each keypress."""
    told: list[tuple[str, float, bool]] = []
    for record in records:
        kind = record.get("kind")
        if kind == "agent_text" and (found := _TOLD.search(str(record.get("text", "")))):
            told.append((found.group(1), float(record.get("t", 0.0)), False))
        elif kind == "agent" and told and not told[-1][2]:
            event = record.get("event")
            if isinstance(event, dict) and event.get("type") in _RESPONSE_STARTS:
                told[-1] = (told[-1][0], told[-1][1], True)
    return told

"""Dead air as a recording tells it: the bridge's ``dead_air`` notes (telephony.bridge.dead_air), read back.

Each note's detail is JSON, ``{"s": 2.31, "after": "caller", "ended_by": "audio"}``: how long the caller heard
nothing, what the agent owed them an answer for, and what ended the wait. The note is recorded when the wait
ends, so a wait ran from ``t - s`` to ``t``. ``transcript.json`` lists them under ``dead_air`` (with the longest),
the timeline shows the long ones, and ``voicebot test``'s ``expect.dead_air`` checks the longest.
"""

from __future__ import annotations

import json
from typing import Any

from telephony.bridge.dead_air import WHY

NOTE = "dead_air"
"""The note's kind in ``events.jsonl``."""
SHOWN_FROM_S = 2.0
"""Waits this long or longer are events of their own on the call's timeline (shorter ones only in ``dead_air``)."""
AFTER = WHY
"""What the wait came after, as the labels and findings say it (the bridge's own words, kept there, as are those for
what ended it: ``telephony.bridge.dead_air.ENDED_BY``)."""


def parse_wait(detail: Any) -> dict[str, Any] | None:
    """``{"s", "after", "ended_by"}`` from a ``dead_air`` note's detail; None for a malformed one."""
    try:
        parsed = json.loads(detail) if isinstance(detail, str) else detail
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    seconds = parsed.get("s")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds < float("inf"):
        return None
    return {
        "s": round(float(seconds), 3),
        "after": str(parsed.get("after") or "?"),
        "ended_by": str(parsed.get("ended_by") or "?"),
    }


def waits_in_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every well-formed wait in a recording's records, ``{"t", "s", "after", "ended_by"}``, in record order."""
    waits = []
    for record in records:
        if record.get("kind") != "note" or record.get("note") != NOTE:
            continue
        wait = parse_wait(record.get("detail"))
        try:
            at = float(record.get("t", 0.0))
        except (TypeError, ValueError):
            continue
        if wait is not None:
            waits.append({"t": round(at, 3), **wait})
    return waits


def summary(waits: list[dict[str, Any]]) -> dict[str, Any]:
    """``transcript.json``'s ``dead_air``: the longest wait's seconds (0.0 with none) and every wait."""
    return {"max_s": max((float(wait["s"]) for wait in waits), default=0.0), "waits": list(waits)}


def longest(waits: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The longest wait (the first of equals), or None."""
    return max(waits, key=lambda wait: float(wait["s"]), default=None)


def after_text(after: str) -> str:
    return AFTER.get(after, after.replace("_", " "))


def label(wait: dict[str, Any]) -> str:
    """``dead air: 3.4 s after the caller's turn``."""
    return f"dead air: {float(wait['s']):.1f} s after {after_text(str(wait['after']))}"

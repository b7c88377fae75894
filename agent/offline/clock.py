"""The ``current_time`` tool: the time of day, worded to be read aloud."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from strands import tool

__all__ = ["current_time", "spoken_time"]


def spoken_time(now: datetime | None = None) -> str:
    """``3:05 PM``-style time, which speech synthesis reads as "three oh five P M"."""
    now = now or datetime.now().astimezone()
    return f"{now.hour % 12 or 12}:{now.minute:02d} {'AM' if now.hour < 12 else 'PM'}"


@tool
def current_time(timezone: str = "") -> dict[str, Any]:
    """Tell the current time of day, worded to be read aloud.

    Args:
        timezone: An IANA time zone such as "Europe/Paris"; empty for the server's own.
    """
    try:
        now = datetime.now(ZoneInfo(timezone)) if timezone else datetime.now().astimezone()
    except (ZoneInfoNotFoundError, ValueError):
        return {"status": "error", "content": [{"text": f"Unknown time zone {timezone!r}: use one like Europe/Paris."}]}
    return {"status": "success", "content": [{"text": spoken_time(now)}]}

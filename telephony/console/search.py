"""Search in what was said: the recorded calls whose transcript holds some words, for the calls page.

Reads ``transcript.json`` of the newest recordings (at most :data:`SEARCHED` of them) and returns, per call,
its first matching line. Touches the disk: call it from a thread.
"""

from __future__ import annotations

from typing import Any

from telephony.recording.call_library import CallLibrary

SEARCHED = 200
"""Recordings searched, newest first (the calls page lists as many)."""
MAX_QUERY = 100
QUOTE_CHARS = 160
"""How much of a matching line is quoted back."""


def search_transcripts(library: CallLibrary, query: str, limit: int = SEARCHED) -> list[dict[str, Any]]:
    """One match per recording (newest first): ``name``, ``call_sid``, the line's ``role``, ``start`` and ``text``."""
    words = query.strip().lower()[:MAX_QUERY]
    if not words:
        return []
    matches = []
    for name in library.names(limit):
        transcript = library.transcript(name, summary=False) or {}
        for turn in transcript.get("turns") or []:
            text = str(turn.get("text") or "")
            if turn.get("role") in ("caller", "bot") and words in text.lower():
                matches.append(
                    {
                        "name": name,
                        "call_sid": transcript.get("call_sid"),
                        "role": turn.get("role"),
                        "start": turn.get("start"),
                        "text": _quote(text, text.lower().index(words)),
                    }
                )
                break
    return matches


def _quote(text: str, at: int) -> str:
    """The line around the match, at most ``QUOTE_CHARS`` long."""
    if len(text) <= QUOTE_CHARS:
        return text
    start = max(0, at - QUOTE_CHARS // 3)
    return ("…" if start else "") + text[start : start + QUOTE_CHARS] + "…"

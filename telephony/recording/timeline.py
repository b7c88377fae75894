"""The ``events`` of ``transcript.json``: what happened on a call besides speech, on the turns' clock.

Key presses, barge-ins, tool calls and results, transfers, model connection swaps, errors, limits, the bridge
rescuing a quiet agent or checking on a silent caller, long dead air (telephony.recording.dead_air) and the
hang-up, each ``{"t", "kind", "label", "detail"}``, so that a replayed call reads in order: the bot's answer
to a key press follows the key press. Times are the records' own (seconds since the stream started, the
clock bot turns are placed on), as the bridge saw them happen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from telephony.recording import dead_air

KINDS = (
    "dtmf",
    "barge_in",
    "tool_call",
    "tool_result",
    "transfer",
    "model_swap",
    "error",
    "hangup",
    "limit",
    "rescue",
    "check_in",
    "dead_air",
    "note",
)
"""Every kind an event may have (``note``: anything else the bridge noted)."""
QUIET_NOTES = {"outcome", "hold_sound"}
"""Notes that are not events of their own (the outcome is the transcript's ``outcome``; the hold sound starts and
stops with every tool that runs, too often to list). ``dead_air`` notes are events only when the wait was long
(``dead_air.SHOWN_FROM_S``): every one is in the transcript's ``dead_air``."""
NOTE_KINDS = {
    "barge_in": "barge_in",
    "transfer": "transfer",
    "swap": "model_swap",
    "cut": "model_swap",
    "resume": "model_swap",
    "error": "error",
    "hangup": "hangup",
    "limit": "limit",
    "wrap_up": "limit",
    "rescue": "rescue",
    "check_in": "check_in",
}
MAX_DETAIL = 500
"""Characters of a detail kept (a model's error can be long; the whole of it is in ``events.jsonl``)."""


@dataclass
class Timeline:
    """Feed it every record in order with :meth:`add`; :meth:`events` is the list for ``transcript.json``."""

    _events: list[dict[str, Any]] = field(default_factory=list)
    _tools: dict[str, str] = field(default_factory=dict)

    def add(self, at: float, record: dict[str, Any]) -> None:
        kind = record.get("kind")
        if kind == "twilio_in":
            self._from_twilio(at, record.get("message"))
        elif kind == "note":
            self._from_note(at, str(record.get("note", "")), str(record.get("detail", "")))
        elif kind == "agent" and isinstance(record.get("event"), dict):
            self._from_agent(at, record["event"])

    def events(self) -> list[dict[str, Any]]:
        return sorted(self._events, key=lambda event: event["t"])

    def _add(self, at: float, kind: str, label: str, detail: str = "") -> None:
        self._events.append({"t": round(at, 3), "kind": kind, "label": label, "detail": detail[:MAX_DETAIL]})

    def _from_twilio(self, at: float, message: Any) -> None:
        if not isinstance(message, dict) or message.get("event") != "dtmf":
            return
        dtmf = message.get("dtmf")
        digit = str(dtmf.get("digit", "?")) if isinstance(dtmf, dict) else "?"
        self._add(at, "dtmf", f"key {digit[:8]}", digit[:8])

    def _from_note(self, at: float, note: str, detail: str) -> None:
        if note in QUIET_NOTES:
            return
        if note == dead_air.NOTE:
            wait = dead_air.parse_wait(detail)
            if wait is not None and wait["s"] >= dead_air.SHOWN_FROM_S:
                self._add(at, "dead_air", dead_air.label(wait), detail)
            return
        kind = NOTE_KINDS.get(note, "note")
        self._add(at, kind, _note_label(note, detail), detail)

    def _from_agent(self, at: float, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "bidi_tool_use_blocks":
            for use in event.get("tool_uses") or []:
                if not isinstance(use, dict):
                    continue
                name = str(use.get("name"))
                self._tools[str(use.get("toolUseId"))] = name
                self._add(at, "tool_call", f"tool {name}", _short(use.get("input")))
        elif kind == "tool_result":
            result = event.get("tool_result") or {}
            name = self._tools.get(str(result.get("toolUseId")), "?")
            self._add(at, "tool_result", f"tool {name}: {result.get('status', '?')}", _short(result.get("content")))
        elif kind in ("bidi_connection_restart", "bidi_connection_stop"):
            what = "restarted" if kind == "bidi_connection_restart" else "stopped"
            self._add(at, "model_swap", f"model connection {what}", str(event.get("reason", "")))


def _note_label(note: str, detail: str) -> str:
    labels = {
        "barge_in": f"barge-in: {detail}",
        "transfer": f"transfer: {detail}",
        "swap": detail,
        "cut": "the model's answer was cut by the connection swap",
        "resume": "answer resumed on the new model connection",
        "error": f"error: {detail}",
        "hangup": f"hang-up: {detail}",
        "limit": f"time limit: {detail.replace('_', ' ')}",
        "wrap_up": f"asked to wrap up: {detail}",
        "rescue": f"quiet agent: {detail}",
        "check_in": f"silent caller: {detail}",
    }
    return _short(labels.get(note, f"{note.replace('_', ' ')}: {detail}"), 160)


def _short(value: Any, limit: int = MAX_DETAIL) -> str:
    text = value if isinstance(value, str) else repr(value) if value is not None else ""
    return text if len(text) <= limit else text[: limit - 1] + "…"

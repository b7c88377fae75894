"""How a call ended, as one outcome from a small documented set: the calls page, ``transcript.json`` and ``/metrics``.

The session decides a call's outcome once, when it ends (:func:`decide`), from what it knows for sure: the
failure the ending apologised for, the time limit that hung up, the transfer that took the caller, who hung
up. A recording keeps it as an ``outcome`` note; a recording without one (written before outcomes existed,
or whose writer died) gets one from its records (:func:`from_records`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Outcome(StrEnum):
    COMPLETED_BY_BOT = "completed-by-bot"
    COMPLETED_BY_CALLER = "completed-by-caller"
    COMPLETED_BY_SERVER = "completed-by-server"
    TRANSFERRED = "transferred"
    FAILED_AGENT_START = "failed-agent-start"
    FAILED_MODEL_ERROR = "failed-model-error"
    FAILED_TIMEOUT = "failed-timeout"
    CRASHED = "crashed"


LABELS: dict[Outcome, str] = {
    Outcome.COMPLETED_BY_BOT: "completed by the bot",
    Outcome.COMPLETED_BY_CALLER: "completed by the caller",
    Outcome.COMPLETED_BY_SERVER: "completed by the server",
    Outcome.TRANSFERRED: "transferred",
    Outcome.FAILED_AGENT_START: "failed: the agent could not start",
    Outcome.FAILED_MODEL_ERROR: "failed: model error",
    Outcome.FAILED_TIMEOUT: "failed: timeout",
    Outcome.CRASHED: "crashed",
}
"""Every outcome in the order the calls page lists them (the page builds its filter from this)."""

FAILURE_OUTCOMES = {
    "agent_start": Outcome.FAILED_AGENT_START,
    "agent_input": Outcome.FAILED_MODEL_ERROR,
    "agent_stream": Outcome.FAILED_MODEL_ERROR,
    "agent_unresponsive": Outcome.FAILED_TIMEOUT,
}
"""The ending's failure kinds (``CallEnding.fail(kind=…)``) and what they make of the call."""

ENDED_BY = {"agent": Outcome.COMPLETED_BY_BOT, "caller": Outcome.COMPLETED_BY_CALLER}
"""Who hung up on a call that nothing went wrong with (anyone else: the server)."""


@dataclass(frozen=True, slots=True)
class CallOutcome:
    code: Outcome
    reason: str

    @property
    def label(self) -> str:
        return LABELS[self.code]

    def to_json(self) -> dict[str, str]:
        return {"code": self.code.value, "label": self.label, "reason": self.reason}

    def note_detail(self) -> str:
        """The detail of the recording's ``outcome`` note (read back by :func:`parse_note`)."""
        return json.dumps({"code": self.code.value, "reason": self.reason}, ensure_ascii=False)


def decide(
    ended_by: str,
    end_reason: str,
    *,
    failure: tuple[str, str] | None = None,
    timed_out: str | None = None,
    transferred_to: str | None = None,
    crashed: str | None = None,
    wrapped_up: str | None = None,
) -> CallOutcome:
    """The outcome of a call that has just ended, from what the session saw (first match wins).

    ``failure``: the ending's (kind, reason) when it apologised; ``timed_out``: why a time limit hung up;
    ``transferred_to``: where a transfer took the caller; ``crashed``: a task of the call that crashed;
    ``wrapped_up``: why the server asked the agent to say goodbye (a shutdown: the server ended the call).
    """
    if crashed is not None:
        return CallOutcome(Outcome.CRASHED, crashed)
    if failure is not None:
        kind, reason = failure
        return CallOutcome(FAILURE_OUTCOMES.get(kind, Outcome.FAILED_MODEL_ERROR), reason)
    if timed_out is not None:
        return CallOutcome(Outcome.FAILED_TIMEOUT, timed_out)
    if transferred_to is not None:
        return CallOutcome(Outcome.TRANSFERRED, f"transferred to {transferred_to}")
    if wrapped_up is not None and ended_by == "agent":
        return CallOutcome(Outcome.COMPLETED_BY_SERVER, f"{wrapped_up} The bot said goodbye.")
    return CallOutcome(ENDED_BY.get(ended_by, Outcome.COMPLETED_BY_SERVER), end_reason or "unknown")


def parse_note(detail: str) -> CallOutcome | None:
    """An ``outcome`` note's detail, or None if it is not one this version wrote."""
    try:
        return from_json(json.loads(detail))
    except ValueError:
        return None


def from_json(data: Any) -> CallOutcome | None:
    """``{"code", "reason"}`` (a note's detail, ``transcript.json``'s ``outcome``), or None if it is not one."""
    if not isinstance(data, dict):
        return None
    try:
        return CallOutcome(Outcome(str(data.get("code"))), str(data.get("reason") or ""))
    except ValueError:
        return None


def row_fields(outcome: CallOutcome | None) -> dict[str, str | None]:
    """The outcome as a row of the calls page gives it (``outcome``, ``outcome_label``, ``outcome_reason``)."""
    if outcome is None:
        return {"outcome": None, "outcome_label": None, "outcome_reason": None}
    return {"outcome": outcome.code.value, "outcome_label": outcome.label, "outcome_reason": outcome.reason}


def from_records(records: Iterable[dict[str, Any]], agent_started: bool) -> CallOutcome:
    """The outcome of a recording from its records: its ``outcome`` note, else what its notes and end tell.

    A recording with no ``end`` record was cut short by the process dying: crashed. ``agent_started``:
    the header names the model's rates (an agent that never started has none).
    """
    end: dict[str, Any] | None = None
    error: str | None = None
    for record in records:
        kind = record.get("kind")
        if kind == "end":
            end = record
        elif kind == "note" and record.get("note") == "outcome":
            decided = parse_note(str(record.get("detail", "")))
            if decided is not None:
                return decided
        elif kind == "note" and record.get("note") == "error" and error is None:
            error = str(record.get("detail", ""))
    if end is None:
        return CallOutcome(Outcome.CRASHED, "the server stopped before the call ended (recovered from events.jsonl)")
    if error is not None:
        return CallOutcome(Outcome.FAILED_MODEL_ERROR if agent_started else Outcome.FAILED_AGENT_START, error)
    return decide(str(end.get("ended_by") or ""), str(end.get("reason") or ""))


def labels_json() -> dict[str, str]:
    return {code.value: label for code, label in LABELS.items()}

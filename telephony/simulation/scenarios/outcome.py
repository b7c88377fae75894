"""A finished call as the checks see it (``CallOutcome``), a failed expectation (``Finding``), and the wording
their messages share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from telephony.simulation.caller.line_conditions import LineConditions
from telephony.simulation.caller.twilio_rest import Redirect
from telephony.simulation.scenarios.caller_truth import SpeechSpan
from telephony.simulation.scenarios.goal_caller import Turn
from telephony.simulation.scenarios.scenario import Where
from telephony.simulation.scenarios.scenario_caller import StepLog


@dataclass(frozen=True)
class Finding:
    """One expectation that failed: where it is written, and what happened instead."""

    where: Where | None
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


@dataclass
class CallOutcome:
    """Everything known about one finished call."""

    transcript: dict[str, Any]
    records: list[dict[str, Any]]
    latencies: list[float] = field(default_factory=list)
    steps: list[StepLog] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    brain_notes: list[str] = field(default_factory=list)
    recording: Path | None = None
    workdir: Path | None = None
    state: dict[str, Any] = field(default_factory=dict)
    """For ``setup`` and ``checks`` functions to share (e.g. a database path)."""
    caller_speech: list[SpeechSpan] = field(default_factory=list)
    """When the caller really spoke (its clean audio, before the line), for telling false barge-ins from real."""
    line: LineConditions | None = None
    """The line the call went over, when it was not clean."""

    @property
    def turns(self) -> list[dict[str, Any]]:
        return list(self.transcript.get("turns") or [])

    @property
    def bot_turns(self) -> list[dict[str, Any]]:
        return [turn for turn in self.turns if turn.get("role") == "bot" and turn.get("text")]

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [turn for turn in self.turns if turn.get("role") == "tool"]

    @property
    def duration_s(self) -> float:
        return float(self.transcript.get("duration_s") or 0.0)

    @property
    def ended_by(self) -> str | None:
        by = (self.transcript.get("ended") or {}).get("by")
        return "bot" if by == "agent" else by

    @property
    def end_reason(self) -> str:
        return str((self.transcript.get("ended") or {}).get("reason") or "")

    def conversation(self) -> list[Turn]:
        """``(bot|caller, text)`` in call order."""
        return [(turn["role"], turn["text"]) for turn in self.turns if turn.get("role") in ("bot", "caller")]

    def describe_bot_turns(self) -> str:
        parts = [
            f"{index + 1} at {turn_time(turn)}: {clip(turn['text'])!r}" for index, turn in enumerate(self.bot_turns)
        ]
        return "; ".join(parts) if parts else "the bot said nothing"

    def describe_tools(self) -> str:
        calls = [
            f"{call['name']}{args_text(call.get('input'))} at {moment(call.get('start'))}" for call in self.tool_calls
        ]
        return ", ".join(calls) if calls else "none"


def brain_hint(outcome: CallOutcome) -> str:
    return f" [scripted brain: {'; '.join(outcome.brain_notes)}]" if outcome.brain_notes else ""


def moment(value: Any) -> str:
    return f"{float(value):.1f} s" if isinstance(value, (int, float)) else "?"


def turn_time(turn: dict[str, Any]) -> str:
    return moment(turn.get("start"))


def clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def args_text(value: Any) -> str:
    if not value:
        return "()"
    if isinstance(value, Mapping):
        return "(" + ", ".join(f"{key}={item!r}" for key, item in value.items()) + ")"
    return f"({value!r})"

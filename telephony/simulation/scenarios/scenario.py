"""A scenario: a phone call to test an agent with. Read from YAML by ``scenario_file``, run by ``runner``.

A scenario says who calls and what they do (``caller``), optionally what the model does (``brain``: the
scripted brain's part, used instead of the agent's model unless ``--real-model``), and what must happen
(``expect``). Every mistake in every file is reported as ``file:line: field: what is wrong`` before any call
is placed (``scenario_file``, ``preflight``). Every field: docs/scenarios.md (written from ``call_fields`` and
``expect_fields``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.scripted.brain import BrainScript
from telephony.simulation.caller.line_conditions import LineConditions

__all__ = [
    "BargeInExpectations",
    "CallerStep",
    "Check",
    "Expectations",
    "GoalCaller",
    "Said",
    "Scenario",
    "ScenarioError",
    "ToolExpectation",
    "Where",
]


class ScenarioError(ValueError):
    """Scenario files are wrong: one ``file:line: field: what to fix`` a line, every mistake found, in file order.

    ``line`` is where a single mistake is (for ordering); ``problems`` are the single mistakes of a combined one.
    """

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line
        self.problems: tuple[ScenarioError, ...] = (self,)

    @classmethod
    def of(cls, problems: list[ScenarioError]) -> ScenarioError:
        """One error for many, each mistake once, in the order given (callers sort by file, then line)."""
        unique = list({str(problem): problem for problem in problems}.values())
        if len(unique) == 1:
            return unique[0]
        combined = cls("\n".join(str(problem) for problem in unique))
        combined.problems = tuple(unique)
        return combined


@dataclass(frozen=True)
class Where:
    """Where a value came from, for messages: ``booking.yaml:12 expect.tools[0]``."""

    file: str
    line: int
    field: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} {self.field}"


@dataclass(frozen=True)
class CallerStep:
    """One thing the caller does. ``kind``: ``say``, ``play``, ``press``, ``silence`` or ``hang_up``."""

    kind: str
    text: str = ""
    """``say``: the words; ``press``: the digits."""
    audio: Path | None = None
    seconds: float = 0.0
    """``silence``: how long the caller says nothing."""
    over_the_bot_ms: int | None = None
    """Talk over the bot this far into its reply (a barge-in) instead of waiting for it to finish."""
    wait: bool = True
    """Wait for the bot to finish (and be quiet a moment) before this step."""
    where: Where | None = None

    def describe(self) -> str:
        if self.kind == "say":
            return f"says {self.text!r}" + (
                f" over the bot ({self.over_the_bot_ms} ms in)" if self.over_the_bot_ms else ""
            )
        if self.kind == "play":
            return self.text or f"plays {self.audio.name if self.audio else '?'}"
        if self.kind == "press":
            return f"presses {self.text}"
        if self.kind == "silence":
            return f"stays silent {self.seconds:g} s"
        return "hangs up"


@dataclass(frozen=True)
class GoalCaller:
    """A caller with a persona and a goal, played by a text agent (or its offline stand-in's rules)."""

    goal: str
    persona: str = ""
    opening: str = ""
    max_turns: int = 8
    rules: tuple[tuple[str, str], ...] = ()
    """The offline stand-in: (regular expression on the bot's last turn, what to say)."""
    done_when: str = ""
    """The offline stand-in hangs up (after a goodbye) once the bot has said something matching this."""


@dataclass(frozen=True)
class Check:
    """A user function run with the finished call (``module:function``, keyword arguments ``with``)."""

    function: str
    arguments: Mapping[str, Any]
    where: Where


@dataclass(frozen=True)
class Said:
    """The bot says this (``contains`` text or ``matches`` a regular expression), in one turn or anywhere."""

    pattern: re.Pattern[str]
    text: str
    regex: bool
    turn: int | None
    where: Where


@dataclass(frozen=True)
class ToolExpectation:
    name: str
    input: Mapping[str, Any]
    where: Where
    ordered_lists: bool = False
    """List arguments must be in the same order (otherwise they match as sets)."""


@dataclass
class BargeInExpectations:
    """``expect.barge_in``: how the bot stops when talked over, and that it does not stop when nobody talked."""

    clear_within_ms: tuple[float, Where] | None = None
    nothing_stale: Where | None = None
    max_false_clears: tuple[int, Where] | None = None
    """At most this many ``clear``s while the caller was silent (the model took noise for a barge-in)."""


@dataclass
class Expectations:
    says: list[Said] = field(default_factory=list)
    never_says: list[Said] = field(default_factory=list)
    no_apology: Where | None = None
    tools: list[ToolExpectation] = field(default_factory=list)
    tools_in_order: bool = True
    tools_where: Where | None = None
    no_tools: list[tuple[str, Where]] = field(default_factory=list)
    transfer: tuple[str | bool, Where] | None = None
    hang_up_by: tuple[str, Where] | None = None
    hang_up_within_s: tuple[float, Where] | None = None
    barge_in: BargeInExpectations = field(default_factory=BargeInExpectations)
    keys: tuple[str, Where] | None = None
    """Keypresses, in order, that must each reach the agent and get an answer."""
    turn_latency_max_s: tuple[float, Where] | None = None
    latency_p50_max_s: tuple[float, Where] | None = None
    latency_max_s: tuple[float, Where] | None = None
    dead_air_max_s: tuple[float, Where] | None = None
    """The call's longest dead air (the bridge's ``dead_air`` notes) lasted at most this."""
    duration_max_s: tuple[float, Where] | None = None
    duration_min_s: tuple[float, Where] | None = None
    checks: list[Check] = field(default_factory=list)
    judge_rubric: tuple[tuple[str, str], ...] = ()
    """(criterion, offline stand-in's regular expression over the whole call's transcript)."""
    judge_where: Where | None = None

    @property
    def clear_within_ms(self) -> tuple[float, Where] | None:
        """``barge_in.clear_within_ms``, by its older name."""
        return self.barge_in.clear_within_ms

    @property
    def nothing_stale(self) -> Where | None:
        """``barge_in.nothing_stale``, by its older name."""
        return self.barge_in.nothing_stale


@dataclass
class Scenario:
    path: Path
    name: str
    agent: str | None = None
    description: str = ""
    call_from: str = "+15005550006"
    call_to: str = "+15005550001"
    parameters: dict[str, str] = field(default_factory=dict)
    greeting: str | None = None
    setup: list[Check] = field(default_factory=list)
    caller: list[CallerStep] = field(default_factory=list)
    recording: Path | None = None
    goal: GoalCaller | None = None
    brain: BrainScript | None = None
    brain_where: list[Where] = field(default_factory=list)
    """Where each of ``brain.turns`` is written, for messages."""
    expect: Expectations = field(default_factory=Expectations)
    runs: int = 1
    passes_needed: int = 1
    timeout_s: float = 120.0
    patience_s: float = 10.0
    """How long the caller waits for an answer before going on with its next step anyway."""
    line: LineConditions = field(default_factory=LineConditions)
    """How bad the phone line is (noise, lost and late packets, the caller's loudness and voice)."""

    def brain_turn_where(self, index: int) -> Where:
        """Where brain turn ``index`` is written (the file itself if unknown)."""
        if index < len(self.brain_where):
            return self.brain_where[index]
        return Where(str(self.path), 0, f"brain[{index}]")

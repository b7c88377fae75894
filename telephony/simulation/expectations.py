"""Checking a finished call against a scenario's ``expect:``. Each failure says which expectation (file, line,
field) and where in the call (call time, bot turn, caller step) it went wrong.

Everything is read from the call's recording (``transcript.json`` and ``events.jsonl``, the files the console
shows) plus what only the caller knows (its response latencies, when it talked over the bot), so a scenario's
verdict can be re-checked from its recording.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from telephony.simulation.goal_caller import Judge, Turn
from telephony.simulation.scenario import Check, Expectations, Said, Where
from telephony.simulation.scenario_caller import StepLog
from telephony.simulation.twilio_rest import Redirect

APOLOGY = re.compile(r"\b(sorry|apologi[sz]e|unfortunately|went wrong|an error|technical (problem|difficult))", re.I)


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
        return {"agent": "bot"}.get(by, by)

    @property
    def end_reason(self) -> str:
        return str((self.transcript.get("ended") or {}).get("reason") or "")

    def conversation(self) -> list[Turn]:
        """``(bot|caller, text)`` in call order."""
        return [(turn["role"], turn["text"]) for turn in self.turns if turn.get("role") in ("bot", "caller")]

    def describe_bot_turns(self) -> str:
        parts = [f"{index + 1} at {_at(turn)}: {_clip(turn['text'])!r}" for index, turn in enumerate(self.bot_turns)]
        return "; ".join(parts) if parts else "the bot said nothing"

    def describe_tools(self) -> str:
        calls = [f"{call['name']}{_args(call.get('input'))} at {_t(call.get('start'))}" for call in self.tool_calls]
        return ", ".join(calls) if calls else "none"


async def evaluate(expect: Expectations, outcome: CallOutcome, judge: Judge | None = None) -> list[Finding]:
    """Every failed expectation, in the order the scenario lists them."""
    findings: list[Finding] = []
    findings += [finding for said in expect.says if (finding := _says(said, outcome))]
    findings += [finding for said in expect.never_says if (finding := _never_says(said, outcome))]
    if expect.no_apology is not None:
        findings += _no_apology(expect.no_apology, outcome)
    findings += _tools(expect, outcome)
    findings += _no_tools(expect, outcome)
    if expect.transfer is not None:
        findings += _transfer(*expect.transfer, outcome)
    findings += _hang_up(expect, outcome)
    findings += _barge_in(expect, outcome)
    findings += _latency(expect, outcome)
    findings += _duration(expect, outcome)
    for check in expect.checks:
        if (problem := await run_check(check, outcome)) is not None:
            findings.append(Finding(check.where, problem))
    if expect.judge_rubric and judge is not None:
        for verdict in await judge.grade(outcome.conversation(), list(expect.judge_rubric)):
            if not verdict.passed:
                findings.append(Finding(expect.judge_where, f"judge: {verdict.criterion!r} failed: {verdict.reason}"))
    return findings


# --- what the bot said ---------------------------------------------------------------------------------


def _says(said: Said, outcome: CallOutcome) -> Finding | None:
    turns = outcome.bot_turns
    what = f"/{said.text}/" if said.regex else repr(said.text)
    if said.turn is not None:
        if said.turn > len(turns):
            return Finding(
                said.where,
                f"expected bot turn {said.turn} to say {what}, but the bot spoke only {len(turns)} "
                f"time(s) ({outcome.describe_bot_turns()}); call ended by {outcome.ended_by} at "
                f"{outcome.duration_s:.1f} s: {outcome.end_reason}",
            )
        turn = turns[said.turn - 1]
        if said.pattern.search(turn["text"]):
            return None
        return Finding(
            said.where,
            f"expected bot turn {said.turn} (at {_at(turn)}) to say {what}; it said {_clip(turn['text'], 160)!r}",
        )
    if any(said.pattern.search(turn["text"]) for turn in turns):
        return None
    return Finding(said.where, f"the bot never said {what} (bot turns: {outcome.describe_bot_turns()})")


def _never_says(said: Said, outcome: CallOutcome) -> Finding | None:
    for index, turn in enumerate(outcome.bot_turns):
        if said.turn is not None and index + 1 != said.turn:
            continue
        if found := said.pattern.search(turn["text"]):
            return Finding(
                said.where,
                f"the bot said {found.group(0)!r} in bot turn "
                f"{index + 1} (at {_at(turn)}): {_clip(turn['text'], 160)!r}",
            )
    return None


def _no_apology(where: Where, outcome: CallOutcome) -> list[Finding]:
    findings = []
    for index, turn in enumerate(outcome.bot_turns):
        if found := APOLOGY.search(turn["text"]):
            findings.append(
                Finding(
                    where,
                    f"the bot apologised ({found.group(0)!r}) in bot "
                    f"turn {index + 1} (at {_at(turn)}): {_clip(turn['text'], 160)!r}",
                )
            )
            break
    for note in outcome.transcript.get("notes") or []:
        if note.get("note") == "error":
            findings.append(
                Finding(where, f"the bridge reported an error at {_t(note.get('t'))}: {note.get('detail')}")
            )
    return findings


# --- tools ---------------------------------------------------------------------------------------------


def _matches(actual: Any, expected: Any) -> bool:
    """``expected`` is a subset of ``actual``: mappings key by key, text case-insensitively, numbers by value."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and _matches(actual[key], value) for key, value in expected.items()
        )
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.strip().lower() == actual.strip().lower()
    if isinstance(expected, (int, float)) and not isinstance(expected, bool) and isinstance(actual, str):
        return actual.strip() == str(expected)
    return bool(actual == expected)


def _tools(expect: Expectations, outcome: CallOutcome) -> list[Finding]:
    calls = outcome.tool_calls
    findings = []
    position = 0
    for wanted in expect.tools:
        start = position if expect.tools_in_order else 0
        named = [index for index in range(start, len(calls)) if calls[index]["name"] == wanted.name]
        matching = [index for index in named if _matches(calls[index].get("input") or {}, wanted.input)]
        if not matching:
            if named:
                call = calls[named[0]]
                problem = (
                    f"{wanted.name} was called at {_t(call.get('start'))} "
                    f"with {_args(call.get('input'))}, not with {_args(wanted.input)}"
                )
            elif any(call["name"] == wanted.name for call in calls):
                problem = f"{wanted.name} was called, but not after the tools before it in the list"
            else:
                problem = f"{wanted.name} was never called"
            findings.append(
                Finding(wanted.where, f"{problem} (tools called: {outcome.describe_tools()}){_brain_hint(outcome)}")
            )
            continue
        call = calls[matching[0]]
        if call.get("status") not in (None, "success"):
            findings.append(
                Finding(
                    wanted.where,
                    f"{wanted.name} was called at {_t(call.get('start'))} but failed (status {call.get('status')})",
                )
            )
        position = matching[0] + 1
    return findings


def _no_tools(expect: Expectations, outcome: CallOutcome) -> list[Finding]:
    findings = []
    for name, where in expect.no_tools:
        used = [call for call in outcome.tool_calls if call["name"] == name]
        if used:
            findings.append(
                Finding(where, f"{name} was called at {_t(used[0].get('start'))} with {_args(used[0].get('input'))}")
            )
    return findings


# --- transfer and hang-up ------------------------------------------------------------------------------


def _transfer(wanted: str | bool, where: Where, outcome: CallOutcome) -> list[Finding]:
    done = [note for note in outcome.transcript.get("notes") or [] if note.get("note") == "transfer"]
    if wanted is False:
        return (
            [Finding(where, f"the call was transferred to {done[0].get('detail')} at {_t(done[0].get('t'))}")]
            if done
            else []
        )
    if not done:
        asked = [call for call in outcome.tool_calls if call["name"] == "transfer_call"]
        hint = (
            f"transfer_call was called at {_t(asked[0].get('start'))} but no transfer happened"
            if asked
            else "transfer_call was never called"
        )
        return [
            Finding(
                where,
                f"the call was not transferred ({hint}; call ended "
                f"by {outcome.ended_by}: {outcome.end_reason}){_brain_hint(outcome)}",
            )
        ]
    destination = str(done[0].get("detail"))
    if isinstance(wanted, str) and destination != wanted:
        return [Finding(where, f"the call was transferred to {destination} at {_t(done[0].get('t'))}, not to {wanted}")]
    return []


def _hang_up(expect: Expectations, outcome: CallOutcome) -> list[Finding]:
    findings = []
    if expect.hang_up_by is not None:
        wanted, where = expect.hang_up_by
        if outcome.ended_by != wanted:
            findings.append(
                Finding(
                    where,
                    f"expected the {wanted} to end the call; it was ended by {outcome.ended_by} "
                    f"at {outcome.duration_s:.1f} s ({outcome.end_reason}){_brain_hint(outcome)}",
                )
            )
    if expect.hang_up_within_s is not None:
        limit, where = expect.hang_up_within_s
        heard = [turn for turn in outcome.bot_turns if turn.get("end") is not None]
        if heard:
            gap = outcome.duration_s - float(heard[-1]["end"])
            if gap > limit:
                findings.append(
                    Finding(
                        where,
                        f"the line closed {gap:.1f} s after the bot's last words "
                        f"ended (at {float(heard[-1]['end']):.1f} s); expected within {limit:g} s",
                    )
                )
    return findings


# --- barge-in ------------------------------------------------------------------------------------------


def barge_ins(outcome: CallOutcome) -> list[tuple[StepLog, float | None, float | None, int]]:
    """For each step that talked over the bot: (step, when its speech reached the bridge, when ``clear`` went out,
    frames of the interrupted reply sent after the clear), in the recording's time."""
    arrivals: dict[int, float] = {}
    for record in outcome.records:
        message = record.get("message")
        if record.get("kind") == "twilio_in" and isinstance(message, dict) and message.get("event") == "media":
            try:
                arrivals.setdefault(int(message["media"]["timestamp"]), float(record["t"]))
            except (KeyError, TypeError, ValueError):
                continue
    results = []
    for step in outcome.steps:
        if step.step.over_the_bot_ms is None:
            continue
        spoke = arrivals.get(step.timestamp) if step.timestamp is not None else None
        cleared = _first_clear_after(outcome.records, spoke) if spoke is not None else None
        stale = _stale_frames(outcome.records, cleared) if cleared is not None else 0
        results.append((step, spoke, cleared, stale))
    return results


def _first_clear_after(records: list[dict[str, Any]], t: float) -> float | None:
    for record in records:
        message = record.get("message")
        if (
            record.get("kind") == "twilio_out"
            and float(record.get("t", 0)) >= t
            and isinstance(message, dict)
            and message.get("event") == "clear"
        ):
            return float(record["t"])
    return None


def _stale_frames(records: list[dict[str, Any]], cleared: float) -> int:
    """Bot frames sent after the clear and before the model's next response began (the interrupted reply's)."""
    stale = 0
    for record in records:
        if float(record.get("t", 0)) <= cleared:
            continue
        event = record.get("event")
        if (
            record.get("kind") == "agent"
            and isinstance(event, dict)
            and event.get("type") in ("bidi_response_start", "bidi_audio_start")
        ):
            break
        message = record.get("message")
        if record.get("kind") == "twilio_out" and isinstance(message, dict) and message.get("event") == "media":
            stale += 1
    return stale


def _barge_in(expect: Expectations, outcome: CallOutcome) -> list[Finding]:
    if expect.clear_within_ms is None and expect.nothing_stale is None:
        return []
    findings = []
    where = (expect.clear_within_ms or (0, expect.nothing_stale))[1]
    attempts = barge_ins(outcome)
    if not attempts:
        return [
            Finding(
                where,
                "no caller step talks over the bot (give one 'over_the_bot_ms'), so there is no barge-in to check",
            )
        ]
    for step, spoke, cleared, stale in attempts:
        label = (
            f"caller step at {step.step.where} ({step.step.describe()})" if step.step.where else step.step.describe()
        )
        if step.waited_out:
            findings.append(
                Finding(
                    where,
                    f"{label}: the bot was not talking when the caller "
                    f"meant to talk over it (waited {step.at:.1f} s into the call)",
                )
            )
            continue
        if spoke is None:
            findings.append(Finding(where, f"{label}: the caller's speech never reached the bridge"))
            continue
        if cleared is None:
            findings.append(
                Finding(where, f"{label}: the caller talked over the bot at {spoke:.2f} s and no clear was sent")
            )
            continue
        if expect.clear_within_ms is not None and (cleared - spoke) * 1000 > expect.clear_within_ms[0]:
            findings.append(
                Finding(
                    expect.clear_within_ms[1],
                    f"{label}: clear came {(cleared - spoke) * 1000:.0f} ms after the caller "
                    f"started talking at {spoke:.2f} s; expected within {expect.clear_within_ms[0]:g} ms",
                )
            )
        if expect.nothing_stale is not None and stale:
            findings.append(
                Finding(
                    expect.nothing_stale,
                    f"{label}: {stale} frame(s) of the interrupted reply were sent after the clear at {cleared:.2f} s",
                )
            )
    return findings


# --- timing --------------------------------------------------------------------------------------------


def _latency(expect: Expectations, outcome: CallOutcome) -> list[Finding]:
    findings = []
    latencies = outcome.latencies
    figures = ", ".join(f"{value:.2f}" for value in latencies) or "none"
    wanted = [item for item in (expect.turn_latency_max_s, expect.latency_p50_max_s, expect.latency_max_s) if item]
    if wanted and not latencies:
        return [
            Finding(
                wanted[0][1], "no response latency could be measured: the bot never answered after the caller spoke"
            )
        ]
    if expect.turn_latency_max_s is not None:
        limit, where = expect.turn_latency_max_s
        for index, value in enumerate(latencies):
            if value > limit:
                findings.append(
                    Finding(
                        where,
                        f"the bot took {value:.2f} s to answer caller "
                        f"turn {index + 1}; budget {limit:g} s (all: {figures} s)",
                    )
                )
    if expect.latency_p50_max_s is not None and statistics.median(latencies) > expect.latency_p50_max_s[0]:
        findings.append(
            Finding(
                expect.latency_p50_max_s[1],
                f"median response latency {statistics.median(latencies):.2f} "
                f"s is over {expect.latency_p50_max_s[0]:g} s (all: {figures} s)",
            )
        )
    if expect.latency_max_s is not None and max(latencies) > expect.latency_max_s[0]:
        findings.append(
            Finding(
                expect.latency_max_s[1],
                f"slowest response {max(latencies):.2f} s is over {expect.latency_max_s[0]:g} s (all: {figures} s)",
            )
        )
    return findings


def _duration(expect: Expectations, outcome: CallOutcome) -> list[Finding]:
    findings = []
    if expect.duration_max_s is not None and outcome.duration_s > expect.duration_max_s[0]:
        findings.append(
            Finding(
                expect.duration_max_s[1],
                f"the call lasted {outcome.duration_s:.1f} s; expected at most {expect.duration_max_s[0]:g} s",
            )
        )
    if expect.duration_min_s is not None and outcome.duration_s < expect.duration_min_s[0]:
        findings.append(
            Finding(
                expect.duration_min_s[1],
                f"the call lasted {outcome.duration_s:.1f} s; expected "
                f"at least {expect.duration_min_s[0]:g} s ({outcome.end_reason})",
            )
        )
    return findings


# --- user functions ------------------------------------------------------------------------------------


def resolve(spec: str) -> Any:
    module_name, _, attribute = spec.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target


async def run_check(check: Check, outcome: CallOutcome) -> str | None:
    """Run ``module:function(outcome, **with)``; an ``AssertionError``, or a returned string or False, fails it."""
    try:
        function = resolve(check.function)
    except (ImportError, AttributeError) as error:
        return f"cannot load {check.function}: {error}"
    try:
        if inspect.iscoroutinefunction(function):
            result = await function(outcome, **check.arguments)
        else:
            result = await asyncio.to_thread(function, outcome, **check.arguments)
    except AssertionError as error:
        first = str(error).split("\n", 1)[0]  # pytest's assertion rewriting appends its own explanation
        return f"{check.function}: {first or 'assertion failed'}"
    except Exception as error:  # noqa: BLE001 - a user's check that crashes is a failed check, with its reason
        return f"{check.function} raised {type(error).__name__}: {error}"
    if result is False:
        return f"{check.function} returned False"
    if isinstance(result, str) and result:
        return f"{check.function}: {result}"
    return None


# --- wording -------------------------------------------------------------------------------------------


def _brain_hint(outcome: CallOutcome) -> str:
    return f" [scripted brain: {'; '.join(outcome.brain_notes)}]" if outcome.brain_notes else ""


def _t(value: Any) -> str:
    return f"{float(value):.1f} s" if isinstance(value, (int, float)) else "?"


def _at(turn: dict[str, Any]) -> str:
    return _t(turn.get("start"))


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _args(value: Any) -> str:
    if not value:
        return "()"
    if isinstance(value, Mapping):
        return "(" + ", ".join(f"{key}={item!r}" for key, item in value.items()) + ")"
    return f"({value!r})"

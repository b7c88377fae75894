"""Checking a finished call against a scenario's ``expect:``. Each failure says which expectation (file, line,
field) and where in the call (call time, bot turn, caller step) it went wrong.

Everything is read from the call's recording (``transcript.json`` and ``events.jsonl``, the files the console
shows) plus what only the caller knows (its response latencies, when it talked over the bot), so a scenario's
verdict can be re-checked from its recording.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from typing import Any

from telephony.bridge.user_code import UserCodeError, import_current_folder, load_target
from telephony.simulation.scenarios.arguments import arguments_match
from telephony.simulation.scenarios.false_clears import check_false_clears
from telephony.simulation.scenarios.goal_caller import Judge
from telephony.simulation.scenarios.keypresses import check_keys
from telephony.simulation.scenarios.outcome import (
    CallOutcome,
    Finding,
    args_text,
    brain_hint,
    clip,
    moment,
    turn_time,
)
from telephony.simulation.scenarios.scenario import Check, Expectations, Said, Where
from telephony.simulation.scenarios.timing_checks import (
    barge_ins,
    check_barge_in,
    check_dead_air,
    check_duration,
    check_latency,
)

__all__ = ["CallOutcome", "Finding", "barge_ins", "evaluate", "in_file_order", "resolve", "run_check"]

APOLOGY = re.compile(r"\b(sorry|apologi[sz]e|unfortunately|went wrong|an error|technical (problem|difficult))", re.I)


async def evaluate(expect: Expectations, outcome: CallOutcome, judge: Judge | None = None) -> list[Finding]:
    """Every failed expectation, in the order of the scenario file's lines."""
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
    if expect.keys is not None:
        findings += check_keys(*expect.keys, outcome)
    findings += check_barge_in(expect, outcome)
    findings += check_false_clears(expect, outcome)
    findings += check_latency(expect, outcome)
    findings += check_dead_air(expect, outcome)
    findings += check_duration(expect, outcome)
    for check in expect.checks:
        if (problem := await run_check(check, outcome)) is not None:
            findings.append(Finding(check.where, problem))
    if expect.judge_rubric and judge is not None:
        for verdict in await judge.grade(outcome.conversation(), list(expect.judge_rubric)):
            if not verdict.passed:
                findings.append(Finding(expect.judge_where, f"judge: {verdict.criterion!r} failed: {verdict.reason}"))
    return in_file_order(findings)


def in_file_order(findings: list[Finding]) -> list[Finding]:
    """``findings`` by the line of the expectation each is about (those about the whole call first)."""
    return sorted(findings, key=lambda finding: finding.where.line if finding.where is not None else 0)


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
            f"expected bot turn {said.turn} (at {turn_time(turn)}) to say {what}; it said {clip(turn['text'], 160)!r}",
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
                f"{index + 1} (at {turn_time(turn)}): {clip(turn['text'], 160)!r}",
            )
    return None


def _no_apology(where: Where, outcome: CallOutcome) -> list[Finding]:
    """The bot's own apologies (the bridge's, for a failed agent, fail every call: ``call_checks``)."""
    for index, turn in enumerate(outcome.bot_turns):
        if found := APOLOGY.search(turn["text"]):
            return [
                Finding(
                    where,
                    f"the bot apologised ({found.group(0)!r}) in bot "
                    f"turn {index + 1} (at {turn_time(turn)}): {clip(turn['text'], 160)!r}",
                )
            ]
    return []


# --- tools ---------------------------------------------------------------------------------------------


def _tools(expect: Expectations, outcome: CallOutcome) -> list[Finding]:
    calls = outcome.tool_calls
    findings = []
    position = 0
    for wanted in expect.tools:
        start = position if expect.tools_in_order else 0
        named = [index for index in range(start, len(calls)) if calls[index]["name"] == wanted.name]
        matching = [
            index
            for index in named
            if arguments_match(calls[index].get("input") or {}, wanted.input, wanted.ordered_lists)
        ]
        if not matching:
            if named:
                call = calls[named[0]]
                problem = (
                    f"{wanted.name} was called at {moment(call.get('start'))} "
                    f"with {args_text(call.get('input'))}, not with {args_text(wanted.input)}"
                )
            elif any(call["name"] == wanted.name for call in calls):
                problem = f"{wanted.name} was called, but not after the tools before it in the list"
            else:
                problem = f"{wanted.name} was never called"
            findings.append(
                Finding(wanted.where, f"{problem} (tools called: {outcome.describe_tools()}){brain_hint(outcome)}")
            )
            continue
        call = calls[matching[0]]
        if call.get("status") not in (None, "success"):
            findings.append(
                Finding(
                    wanted.where,
                    f"{wanted.name} was called at {moment(call.get('start'))} but failed (status {call.get('status')})",
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
                Finding(
                    where, f"{name} was called at {moment(used[0].get('start'))} with {args_text(used[0].get('input'))}"
                )
            )
    return findings


# --- transfer and hang-up ------------------------------------------------------------------------------


def _transfer(wanted: str | bool, where: Where, outcome: CallOutcome) -> list[Finding]:
    done = [note for note in outcome.transcript.get("notes") or [] if note.get("note") == "transfer"]
    if wanted is False:
        return (
            [Finding(where, f"the call was transferred to {done[0].get('detail')} at {moment(done[0].get('t'))}")]
            if done
            else []
        )
    if not done:
        asked = [call for call in outcome.tool_calls if call["name"] == "transfer_call"]
        hint = (
            f"transfer_call was called at {moment(asked[0].get('start'))} but no transfer happened"
            if asked
            else "transfer_call was never called"
        )
        return [
            Finding(
                where,
                f"the call was not transferred ({hint}; call ended "
                f"by {outcome.ended_by}: {outcome.end_reason}){brain_hint(outcome)}",
            )
        ]
    destination = str(done[0].get("detail"))
    if isinstance(wanted, str) and destination != wanted:
        return [
            Finding(where, f"the call was transferred to {destination} at {moment(done[0].get('t'))}, not to {wanted}")
        ]
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
                    f"at {outcome.duration_s:.1f} s ({outcome.end_reason}){brain_hint(outcome)}",
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


# --- user functions ------------------------------------------------------------------------------------


def resolve(spec: str) -> Any:
    """The function ``module:function`` names (the working folder importable, as for ``--agent``)."""
    import_current_folder()
    return load_target(spec, "the function")


async def run_check(check: Check, outcome: CallOutcome) -> str | None:
    """Run ``module:function(outcome, **with)``; an ``AssertionError``, or a returned string or False, fails it."""
    try:
        function = resolve(check.function)
    except UserCodeError as error:
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

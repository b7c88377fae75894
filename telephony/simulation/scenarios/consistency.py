"""What one section of a scenario asks of another, checked before any call.

Each field can be right on its own and the scenario still unable to pass: a barge-in expected of a caller who
never talks over the bot, keypresses of a caller with a goal (who never presses any), latency expected of one
who never speaks, a ``heard:`` the caller does not say, a ``{find_slots}`` in what the brain says when the turn
calls no such tool (it would be said as written). Found here, each is a mistake in the file, not a failed call a
minute later.
"""

from __future__ import annotations

import re

from telephony.simulation.scenarios.scenario import Scenario, ScenarioError, Where

__all__ = ["consistency_problems", "normal_words"]

_PLACEHOLDER = re.compile(r"\{(prompt:)?([^{}]+)\}")
_NOT_WORD = re.compile(r"[^0-9a-z]+")


def consistency_problems(scenario: Scenario, paired: bool = True) -> list[ScenarioError]:
    """Every mistake across sections. ``paired``: the caller and brain were read whole, so pair them too."""
    problems = _barge_in(scenario) + _keys(scenario) + _latency(scenario) + _placeholders(scenario)
    if paired:
        problems += _heard(scenario)
    return problems


def normal_words(text: str) -> str:
    """``text`` in lower case with punctuation as spaces, padded with one (for whole-word containment)."""
    return " " + " ".join(_NOT_WORD.sub(" ", text.lower()).split()) + " "


def _problem(where: Where, field: str, message: str) -> ScenarioError:
    return ScenarioError(f"{where.file}:{where.line}: {field}: {message}", line=where.line)


def _barge_in(scenario: Scenario) -> list[ScenarioError]:
    expect = scenario.expect
    where = expect.clear_within_ms[1] if expect.clear_within_ms is not None else expect.nothing_stale
    if where is None or scenario.recording is not None:
        return []
    if scenario.goal is not None:
        why = "a caller with a goal never talks over the bot: write the caller as steps, one with over_the_bot_ms"
    elif any(step.over_the_bot_ms is not None for step in scenario.caller):
        return []
    else:
        why = (
            "no caller step talks over the bot, so there is no barge-in to check: give a say or play step "
            "'over_the_bot_ms: 1500' (talk 1.5 s into the bot's reply)"
        )
    return [_problem(where, "expect.barge_in", why)]


def _keys(scenario: Scenario) -> list[ScenarioError]:
    if scenario.expect.keys is None or scenario.goal is None:
        return []
    why = "a caller with a goal never presses keys: write the caller as steps, with a press step for each key"
    return [_problem(scenario.expect.keys[1], "expect.keys", why)]


def _latency(scenario: Scenario) -> list[ScenarioError]:
    expect = scenario.expect
    limits = [item for item in (expect.turn_latency_max_s, expect.latency_p50_max_s, expect.latency_max_s) if item]
    speaks = any(step.kind in ("say", "play") for step in scenario.caller)
    if not limits or not scenario.caller or speaks:
        return []
    where = limits[0][1]
    return [_problem(where, where.field, "the caller never says anything, so no response latency can be measured")]


def _placeholders(scenario: Scenario) -> list[ScenarioError]:
    if scenario.brain is None:
        return []
    problems = []
    for index, turn in enumerate(scenario.brain.turns):
        tools = [step.name for step in turn.tools]
        for match in _PLACEHOLDER.finditer(turn.say):
            name = match.group(2).strip()
            if match.group(1) or name in tools or (name == "result" and tools):
                continue
            if tools:
                why = (
                    f"{match.group(0)} is not a tool of this turn (its tools: {', '.join(tools)}): write {{{tools[0]}}}"
                )
            else:
                why = f"{match.group(0)} would be said as written: this turn calls no tools (give it 'tools: [{name}]')"
            problems.append(_problem(scenario.brain_turn_where(index), f"brain[{index}].say", why))
    return problems


def _heard(scenario: Scenario) -> list[ScenarioError]:
    """The nth ``on: caller`` turn answers the caller's nth say or play step: its ``heard`` must be in it."""
    if scenario.brain is None or not scenario.caller:
        return []
    speaking = [step for step in scenario.caller if step.kind in ("say", "play")]
    problems = []
    answered = [index for index, turn in enumerate(scenario.brain.turns) if turn.on == "caller"]
    for number, index in enumerate(answered):
        heard = scenario.brain.turns[index].heard
        if not heard:
            continue
        if number >= len(speaking):
            break  # turns the caller never reaches are spare, not wrong
        step = speaking[number]
        if step.kind == "say" and normal_words(heard) not in normal_words(step.text):
            said = f"{step.where.field} says {step.text!r}" if step.where else f"the caller says {step.text!r}"
            why = (
                f"{heard!r} is not what 'on: caller' turn {number + 1} answers: {said}. The nth 'on: caller' turn "
                "answers the caller's nth say or play step: fix heard, or put the turns in the caller's order"
            )
            problems.append(_problem(scenario.brain_turn_where(index), f"brain[{index}].heard", why))
    return problems

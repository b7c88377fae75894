"""Everything about a run of scenarios that can be known before its first call, found at once.

A mistake found after a call costs the call (up to a minute or two), and one found after a folder's worth of
calls costs them all. So before any call, for every file: its fields and how its sections pair up
(``scenario_file``, ``consistency``); that its agent factory and its ``setup``/``checks`` functions import,
and take the keywords the file gives them; and, for scenarios the brain plays, the agent itself, built once
the way the run will build it: each ``{prompt:Name}`` the brain says must be a line of its system prompt, and
with ``--local`` its model must be one that reaches the local server. Every mistake is reported together, file
by file in the order given, each file's in line order.

Not mistakes but worth saying first (``Preflight.notices``): a scenario without a ``brain:`` runs on the model
the factory builds, a real one on your own account.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.scripted import prompt_fields, stand_ins
from telephony.bridge.agent_factory import build_agent, load_agent_factory, with_settings
from telephony.bridge.user_code import UserCodeError
from telephony.call_info import CallInfo
from telephony.config import DEFAULT_AGENT, Settings
from telephony.simulation.scenarios.environment import scoped_environment
from telephony.simulation.scenarios.expectations import resolve
from telephony.simulation.scenarios.on_local_model import LOCAL_MODELS, wrong_model
from telephony.simulation.scenarios.results import RunOptions, agent_spec, run_settings, uses_brain
from telephony.simulation.scenarios.scenario import Check, Scenario, ScenarioError
from telephony.simulation.scenarios.scenario_file import find_scenarios, read_scenario

__all__ = ["Preflight", "check_scenarios", "load_scenarios"]

_PROMPT_FIELD = re.compile(r"\{prompt:([^{}]+)\}")
PROBE_ENV: dict[str, dict[str, str | None]] = {
    "nova": {"AWS_ACCESS_KEY_ID": "AKIDPREFLIGHT0000000", "AWS_SECRET_ACCESS_KEY": "not-used", "AWS_PROFILE": None},
    "openai": {"OPENAI_API_KEY": "not-used"},
    "gemini": {"GOOGLE_API_KEY": "not-used"},
}
"""With ``--local``: what a provider's client needs to be built (never to connect: the probe agent never starts)."""


@dataclass
class Preflight:
    scenarios: list[Scenario]
    notices: list[str] = field(default_factory=list)
    """Things to say before the first call (not mistakes)."""
    not_chosen: list[Scenario] = field(default_factory=list)
    """Scenarios read without a mistake but not chosen (``voicebot test -k``), in file order."""


async def load_scenarios(
    paths: list[Path], options: RunOptions, settings: Settings, chosen: Callable[[Scenario], bool] | None = None
) -> Preflight:
    """The scenarios in ``paths`` (only those ``chosen``, if given), checked before any call; raises
    ``ScenarioError`` listing every mistake. Every file is read and its mistakes reported, chosen or not; only the
    chosen are checked against their agent (which builds it)."""
    read = [read_scenario(path) for path in find_scenarios(paths)]
    if chosen is None:
        return await check_scenarios(read, options, settings)
    kept = [(scenario, found) for scenario, found in read if scenario is None or found or chosen(scenario)]
    checked = await check_scenarios(kept, options, settings)
    checked.not_chosen = [
        scenario for scenario, found in read if scenario is not None and not found and not chosen(scenario)
    ]
    return checked


async def check_scenarios(
    read: list[tuple[Scenario | None, list[ScenarioError]]], options: RunOptions, settings: Settings
) -> Preflight:
    """Check scenarios as :func:`read_scenario` returned them; raises ``ScenarioError`` listing every mistake."""
    problems: list[ScenarioError] = []
    scenarios = []
    for scenario, found in read:
        if scenario is not None:
            found = found + _import_problems(scenario, options, settings)
            if not found:
                found = await _agent_problems(scenario, options, settings)
            scenarios.append(scenario)
        problems += sorted(found, key=lambda problem: problem.line)
    if problems:
        raise ScenarioError.of(problems)
    return Preflight(scenarios, _notices(scenarios, options, settings))


# --- imports -----------------------------------------------------------------------------------------


def _import_problems(scenario: Scenario, options: RunOptions, settings: Settings) -> list[ScenarioError]:
    problems = []
    spec = agent_spec(scenario, options, settings)
    try:
        load_agent_factory(spec)
    except UserCodeError as error:
        problems.append(ScenarioError(f"{scenario.path}: agent {spec}: {error}"))
    for check in [*scenario.setup, *scenario.expect.checks]:
        if (problem := _check_problem(check)) is not None:
            problems.append(ScenarioError(f"{check.where}: {problem}", line=check.where.line))
    return problems


def _check_problem(check: Check) -> str | None:
    """Why ``check`` cannot be called as ``function(call, **with)`` (None: it can)."""
    try:
        function = resolve(check.function)
    except UserCodeError as error:
        return str(error)
    if not callable(function):
        return f"{check.function} is not a function"
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None  # a builtin without a signature: it will have to do
    try:
        signature.bind(None, **check.arguments)
    except TypeError as error:
        given = ", ".join(check.arguments) or "no keywords"
        return f"{check.function}{signature} cannot be called with the call and {given}: {error}"
    return None


# --- the agent ---------------------------------------------------------------------------------------


async def _agent_problems(scenario: Scenario, options: RunOptions, settings: Settings) -> list[ScenarioError]:
    """Build the agent as the run will (never started) and check the scenario against it."""
    local = LOCAL_MODELS[options.local_server] if options.local_server and uses_brain(scenario, options) else None
    prompted = scenario.brain is not None and any(_PROMPT_FIELD.search(turn.say) for turn in scenario.brain.turns)
    if not uses_brain(scenario, options) or (local is None and not prompted):
        return []
    spec = agent_spec(scenario, options, settings)
    try:
        agent = await _build(scenario, options, settings, spec)
    except Exception as error:  # noqa: BLE001 - a factory that raises fails every call: say so now, with why
        return [
            ScenarioError(
                f"{scenario.path}: agent {spec} raised {type(error).__name__} when built for this scenario "
                f"(voicebot builds it once before any call, to check the scenario against it): {error}"
            )
        ]
    problems = []
    if local is not None and (why := wrong_model(local, agent.model)) is not None:
        problems.append(ScenarioError(why))
    if prompted:
        problems += _prompt_problems(scenario, spec, getattr(agent, "system_prompt", None))
    return problems


async def _build(scenario: Scenario, options: RunOptions, settings: Settings, spec: str) -> Any:
    factory = with_settings(load_agent_factory(spec), run_settings(settings, scenario, options))
    sid = "CA" + "0" * 32
    call = CallInfo(
        call_sid=sid,
        stream_sid="",
        account_sid="AC" + "0" * 32,
        from_number=scenario.call_from,
        to_number=scenario.call_to,
        parameters={"From": scenario.call_from, "To": scenario.call_to, "CallSid": sid, **scenario.parameters},
    )
    with scoped_environment(PROBE_ENV.get(options.local_server or "", {})), stand_ins():
        return await build_agent(factory, call)


def _prompt_problems(scenario: Scenario, spec: str, system_prompt: str | None) -> list[ScenarioError]:
    assert scenario.brain is not None
    lines = prompt_fields(system_prompt)
    problems = []
    for index, turn in enumerate(scenario.brain.turns):
        for match in _PROMPT_FIELD.finditer(turn.say):
            name = match.group(1).strip()
            if name.lower() in lines:
                continue
            where = scenario.brain_turn_where(index)
            has = ", ".join(repr(line) for line in lines) or "none"
            problems.append(
                ScenarioError(
                    f"{where.file}:{where.line}: brain[{index}].say: {match.group(0)}: the system prompt of {spec} "
                    f"has no '{name}: ...' line, so the brain would say nothing there (its 'Name: value' lines: "
                    f"{has})",
                    line=where.line,
                )
            )
    return problems


# --- what to say first -------------------------------------------------------------------------------


def _notices(scenarios: list[Scenario], options: RunOptions, settings: Settings) -> list[str]:
    if options.real_model:
        return []
    notices = []
    for scenario in scenarios:
        if scenario.brain is not None:
            continue
        spec = agent_spec(scenario, options, settings)
        model = "the default agent's model" if spec == DEFAULT_AGENT else f"the model {spec} builds"
        also = f" (--local {options.local_server} plays brains only)" if options.local_server else ""
        notices.append(
            f"{scenario.path}: no 'brain:', so this scenario runs on {model}{also}: a real model, on your own "
            "account and credentials, not the scripted brain. Give it a brain: to run without an account, or pass "
            "--real-model to say that is meant."
        )
    return notices

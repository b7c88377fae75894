"""What every call must do, whatever its scenario expects: a scenario with no ``expect:`` still fails when the
agent failed to start or crashed (the caller heard the bridge's apology), when the scripted brain could not say
what it was written to (a ``{prompt:Name}`` the agent's prompt lacks), or when the brain answered the caller
out of step (a ``heard:`` the caller had not said).

A call that did none of what its scenario is about must not pass because nothing was asked of it.
"""

from __future__ import annotations

from telephony.simulation.scenarios.consistency import normal_words
from telephony.simulation.scenarios.outcome import CallOutcome, Finding, clip, moment
from telephony.simulation.scenarios.scenario import Scenario
from telephony.simulation.scenarios.scenario_caller import StepLog
from telephony.simulation.scenarios.timing_checks import arrival_times, first_arrival

__all__ = ["call_findings"]

PROMPT_FIELD = "prompt field "
"""How the scripted brain notes a ``{prompt:Name}`` it could not fill (``ScriptedBrain.missing``: the name quoted)."""
QUOTES = "'\""


def call_findings(scenario: Scenario, outcome: CallOutcome, brain_played: bool) -> list[Finding]:
    """Every way the call failed whatever was expected; ``brain_played``: the scenario's brain played the model."""
    findings = _agent_failures(outcome)
    if brain_played:
        findings += _prompt_fields(outcome) + _heard_in_step(scenario, outcome)
    return findings


def _agent_failures(outcome: CallOutcome) -> list[Finding]:
    return [
        Finding(
            None,
            f"the agent failed at {moment(note.get('t'))} and the caller heard the bridge's apology: "
            f"{note.get('detail')}",
        )
        for note in outcome.transcript.get("notes") or []
        if note.get("note") == "error"
    ]


def _prompt_fields(outcome: CallOutcome) -> list[Finding]:
    return [
        Finding(
            None,
            f"the scripted brain had nothing to say for {{prompt:{note[len(PROMPT_FIELD) :].strip(QUOTES)}}}: the "
            "agent's system prompt has no such 'Name: value' line, so that part of its reply was left out",
        )
        for note in outcome.brain_notes
        if note.startswith(PROMPT_FIELD)
    ]


def _heard_in_step(scenario: Scenario, outcome: CallOutcome) -> list[Finding]:
    """Each ``heard:`` the brain reported must be in what the caller said since the brain's previous caller turn."""
    if scenario.brain is None or not scenario.caller:
        return []
    written = [index for index, turn in enumerate(scenario.brain.turns) if turn.on == "caller" and turn.heard]
    reported = [turn for turn in outcome.turns if turn.get("role") == "caller" and turn.get("recognised_at")]
    arrivals = arrival_times(outcome)
    stamps = sorted(arrivals)
    arrived = [
        (first_arrival(arrivals, stamps, log.timestamp), log)
        for log in outcome.steps
        if log.step.kind in ("say", "play") and log.timestamp is not None
    ]
    spoken = [(at, log) for at, log in arrived if at is not None]  # on a lossy line: its first frame that arrived
    findings = []
    since = 0.0
    for index, turn in zip(written, reported, strict=False):
        at = float(turn["recognised_at"])
        window = [log for arrived, log in spoken if since < arrived <= at]
        since = at
        if any(log.step.kind == "play" for log in window):
            continue  # a recording's words are not known
        heard = scenario.brain.turns[index].heard
        if not window or normal_words(heard) not in normal_words(" ".join(log.step.text for log in window)):
            where = scenario.brain_turn_where(index)
            findings.append(Finding(where, _out_of_step(heard, at, window)))
    return findings


def _out_of_step(heard: str, at: float, window: list[StepLog]) -> str:
    parts = [f"{clip(log.step.text)!r} ({log.step.where.field if log.step.where else 'a step'})" for log in window]
    said = " and ".join(parts) or "nothing"
    return (
        f"heard: the brain answered with this turn at {moment(at)} as if the caller had said {heard!r}, but since its "
        f"previous caller turn the caller had said {said}: the brain is out of step with the caller (a pause inside "
        "one line heard as two turns, or a line it did not hear)"
    )

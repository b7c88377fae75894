"""``voicebot test --from-recording RECORDING``: a scenario written from a real call, for the user to edit.

The caller is the recording's caller side (replayed frame by frame), copied beside the scenario with ``--write``;
the expectations are what happened (the bot's first and last words, the tools with their inputs, the transfer,
the barge-ins and keypresses, who hung up, the call's length with some slack); the ``brain`` is what the model
did, turn by turn, so the scenario also runs offline on the scripted brain, with each tool's result referenced
(``{find_open_slots}``), not pasted, so a changed tool shows. ``agent:`` and ``setup:`` come from the run that
made the recording (``scenario.json`` beside it, :mod:`telephony.simulation.replay.run_origin`), else ``agent:``
is the factory the command was given. Text is reproduced as spoken: tighten or loosen it before relying on it.
"""

from __future__ import annotations

import os
import re
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from telephony.recording.format import EVENTS_FILE, Recording
from telephony.simulation.replay.caller_side import caller_file_for, write_caller_side
from telephony.simulation.replay.recorded_expectations import expectations_from
from telephony.simulation.replay.run_origin import read_origin

_KEYPRESS = re.compile(r"pressed\s+([0-9*#])\b", re.IGNORECASE)


def scenario_from_recording(
    source: Path, target: Path | None = None, agent: str | None = None, fallback_agent: str | None = None
) -> str:
    """The scenario YAML for ``source`` (a recording folder or its ``events.jsonl``).

    With ``target`` the caller is its caller-side copy beside it (:func:`write_scenario_from_recording` writes
    both); without, the caller points at the recording itself, relative to the current folder. ``agent:`` is
    ``agent``, else the one the recorded run used, else ``fallback_agent`` (the environment's).
    """
    recording = Recording.load(source)
    events = recording.path or source / EVENTS_FILE
    origin = read_origin(events.parent)
    caller = caller_file_for(target).name if target is not None else os.path.relpath(events.resolve())
    scenario: dict[str, Any] = {"name": f"replay of {origin.get('name') or events.parent.name}"}
    if chosen := agent or origin.get("agent") or fallback_agent:
        scenario["agent"] = chosen
    if origin.get("setup"):
        scenario["setup"] = origin["setup"]
    scenario["caller"] = {"recording": caller}
    brain = brain_from(recording)
    if brain:
        scenario["brain"] = brain
    scenario["expect"] = expectations_from(recording, events.parent)
    return _header(source, target, origin, scenario) + yaml.safe_dump(
        scenario, sort_keys=False, allow_unicode=True, width=110
    )


def write_scenario_from_recording(
    source: Path, target: Path, agent: str | None = None, fallback_agent: str | None = None
) -> Path:
    """Write the scenario to ``target`` and the recording's caller side beside it; returns the caller's file."""
    text = scenario_from_recording(source, target, agent, fallback_agent)
    caller = caller_file_for(target)
    write_caller_side(Recording.load(source), caller)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return caller


def _header(source: Path, target: Path | None, origin: dict[str, Any], scenario: dict[str, Any]) -> str:
    lines = [
        f"Written by `voicebot test --from-recording {source}` on {date.today().isoformat()}.",
        "The caller replays the recorded call; the expectations are what happened then, and the brain is what",
        "the model did (used unless --real-model). Edit both: keep what must stay true, drop what may change.",
    ]
    if target is None:
        lines.append("The caller points into the recording: --write FILE copies it beside the scenario instead.")
    if "agent" not in scenario:
        lines.append("Name the agent under test with `agent: package.module:function` (or pass --agent).")
    tools = sorted({str(tool["name"]) for tool in scenario["expect"].get("tools", [])} - {"end_conversation"})
    if tools and "setup" not in origin:  # a scenario run's recording says which set-up it had, even none
        lines += [
            f"The call used {', '.join(tools)}: a replay calls them again, against whatever the agent is pointed",
            "at. Add a `setup:` (a function of yours) that gives each run its own data before relying on this.",
        ]
    return "".join(f"# {line}\n" for line in lines)


def brain_from(recording: Recording) -> list[dict[str, Any]]:
    """The model's turns: what started each (greeting, keypress, caller speech), what it said, the tools it used."""
    turns: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    names: dict[str, str] = {}
    texts = 0
    for record in recording.records:
        kind = record.get("kind")
        if kind == "agent_text":
            texts += 1
            text = str(record.get("text", ""))
            key = _KEYPRESS.search(text)
            if key is not None:
                current = {"on": "key", "key": key.group(1)}
            elif texts == 1:
                current = {"on": "greeting"}
            else:
                current = {"on": "text", "contains": text[:40]}
            turns.append(current)
            continue
        event = record.get("event")
        if kind != "agent" or not isinstance(event, dict):
            continue
        if event.get("type") == "bidi_transcript_block" and str(event.get("transcript", "")).strip():
            text = str(event["transcript"]).strip()
            if event.get("role") == "user":
                current = {"on": "caller", "heard": text}
                turns.append(current)
            else:
                if current is None:
                    current = {"on": "greeting"}
                    turns.append(current)
                current["say"] = f"{current.get('say', '')} {text}".strip()
        elif event.get("type") == "bidi_tool_use_blocks" and current is not None:
            for use in event.get("tool_uses") or []:
                names[str(use.get("toolUseId"))] = str(use.get("name"))
                step = {"name": use.get("name"), "input": use.get("input") or {}}
                current.setdefault("then" if current.get("say") else "tools", []).append(step)
        elif event.get("type") == "tool_result" and current is not None:
            result = event.get("tool_result") or {}
            name = names.get(str(result.get("toolUseId")))
            if name is not None:
                current.setdefault("_results", {})[name] = _result_text(result)
    return [_referencing_results(turn) for turn in turns if any(key in turn for key in ("say", "tools", "then"))]


def _result_text(result: dict[str, Any]) -> str:
    parts = [item.get("text", "") for item in result.get("content") or [] if isinstance(item, dict)]
    return " ".join(str(part) for part in parts if part)


def _referencing_results(turn: dict[str, Any]) -> dict[str, Any]:
    """The turn with each tool result it read out replaced by ``{tool}``, as the scripted brain fills it in: only
    for tools called before it spoke (``tools``), as those after (``then``) have no result yet when it speaks."""
    results: dict[str, str] = turn.pop("_results", {})
    before = {str(step.get("name")) for step in turn.get("tools", [])}
    for name, text in results.items():
        spoken = text.strip().rstrip(".")  # what the brain puts in place of ``{name}``
        if name in before and spoken and spoken in turn.get("say", ""):
            turn["say"] = turn["say"].replace(spoken, "{" + name + "}")
    return turn

"""``voicebot test --from-recording RECORDING``: a scenario written from a real call, for the user to edit.

The caller is the recording's caller side (replayed frame by frame); the expectations are what happened
(the bot's first and last words, the tools with their inputs, the transfer, who hung up, the call's length
with some slack); the ``brain`` is what the model did, turn by turn, so the scenario also runs offline on the
scripted brain. Text is reproduced as spoken: tighten or loosen it before relying on it.
"""

from __future__ import annotations

import math
import os
import re
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from telephony.recording.format import EVENTS_FILE, Recording
from telephony.recording.transcript import TRANSCRIPT_FILE, TranscriptBuilder

_KEYPRESS = re.compile(r"pressed\s+([0-9*#])\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def scenario_from_recording(source: Path, target: Path | None = None) -> str:
    """The scenario YAML for ``source`` (a recording folder or its ``events.jsonl``); paths relative to ``target``."""
    recording = Recording.load(source)
    events = recording.path or source / EVENTS_FILE
    transcript = _transcript(recording, events.parent)
    base = target.parent if target is not None else Path.cwd()
    scenario: dict[str, Any] = {
        "name": f"replay of {events.parent.name}",
        "caller": {"recording": os.path.relpath(events.resolve(), base.resolve())},
    }
    brain = brain_from(recording)
    if brain:
        scenario["brain"] = brain
    scenario["expect"] = expectations_from(transcript, recording)
    header = (
        f"# Written by `voicebot test --from-recording {source}` on {date.today().isoformat()}.\n"
        "# The caller replays the recorded call; the expectations are what happened then, and the brain is what\n"
        "# the model did (used unless --real-model). Edit both: keep what must stay true, drop what may change.\n"
        "# Name the agent under test with `agent: package.module:function` (or pass --agent).\n"
    )
    return header + yaml.safe_dump(scenario, sort_keys=False, allow_unicode=True, width=110)


def _transcript(recording: Recording, folder: Path) -> dict[str, Any]:
    """The call's ``transcript.json``, rebuilt from the events when the folder has none."""
    import json

    try:
        return dict(json.loads((folder / TRANSCRIPT_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        builder = TranscriptBuilder()
        for record in recording.records:
            builder.add(record)
        try:
            return builder.build(recording.header, recording.end)
        finally:
            builder.audio.close()


def brain_from(recording: Recording) -> list[dict[str, Any]]:
    """The model's turns: what started each (greeting, keypress, caller speech), what it said, the tools it used."""
    turns: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
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
                step = {"name": use.get("name"), "input": use.get("input") or {}}
                current.setdefault("then" if current.get("say") else "tools", []).append(step)
    return [turn for turn in turns if any(key in turn for key in ("say", "tools", "then"))]


def expectations_from(transcript: dict[str, Any], recording: Recording) -> dict[str, Any]:
    turns = transcript.get("turns") or []
    bots = [turn for turn in turns if turn.get("role") == "bot" and turn.get("text")]
    expect: dict[str, Any] = {}
    says = []
    if bots:
        says.append({"contains": _first_sentence(bots[0]["text"]), "turn": 1})
    if len(bots) > 1:
        says.append({"contains": _first_sentence(bots[-1]["text"])})
    if says:
        expect["bot_says"] = says
    tools = [
        {"name": turn.get("name"), "input": turn.get("input") or {}} for turn in turns if turn.get("role") == "tool"
    ]
    if tools:
        expect["tools"] = tools
    transfers = [note.get("detail") for note in transcript.get("notes") or [] if note.get("note") == "transfer"]
    if transfers:
        expect["transfer"] = transfers[0]
    by = (transcript.get("ended") or {}).get("by")
    if by:
        expect["hang_up"] = {"by": {"agent": "bot"}.get(by, by)}
    duration = float(transcript.get("duration_s") or 0.0)
    if duration:
        expect["duration"] = {"max_s": math.ceil(duration * 1.5 + 5)}
    return expect


def _first_sentence(text: str) -> str:
    return _SENTENCE.split(text.strip(), maxsplit=1)[0].rstrip(".!?")

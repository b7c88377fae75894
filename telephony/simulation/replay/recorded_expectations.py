"""What a recorded call did, written as a scenario's ``expect:``: the words, the tools, the barge-ins and
keypresses, the transfer and the hang-up, the length.

Written loose enough to hold when the call is placed again (the barge-in's budget is double what the call took,
at least a second; the length gets half again and five seconds), tight enough that a change of behaviour fails.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from pathlib import Path
from typing import Any

from telephony.codec import SPEECH_LEVEL_DBFS, ulaw_level_dbfs
from telephony.recording.format import Recording
from telephony.recording.transcript import TRANSCRIPT_FILE, TranscriptBuilder

__all__ = ["expectations_from"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
MIN_CLEAR_BUDGET_MS = 1000


def expectations_from(recording: Recording, folder: Path) -> dict[str, Any]:
    transcript = _transcript(recording, folder)
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
    delays = clear_delays_ms(recording)
    if delays:
        expect["barge_in"] = {"clear_within_ms": max(MIN_CLEAR_BUDGET_MS, math.ceil(2 * max(delays) / 100) * 100)}
    keys = "".join(str((message.get("dtmf") or {}).get("digit", "")) for message in _caller_messages(recording, "dtmf"))
    if keys:
        expect["keys"] = keys
    by = (transcript.get("ended") or {}).get("by")
    if by:
        expect["hang_up"] = {"by": {"agent": "bot"}.get(by, by)}
    duration = float(transcript.get("duration_s") or 0.0)
    if duration:
        expect["duration"] = {"max_s": math.ceil(duration * 1.5 + 5)}
    return expect


def clear_delays_ms(recording: Recording) -> list[float]:
    """For each ``clear`` the bridge sent, how long after the caller's speech began (by the arrival of its frames)."""
    onset: float | None = None
    quiet = True
    delays = []
    for record in recording.records:
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        if record.get("kind") == "twilio_in" and message.get("event") == "media":
            speech = ulaw_level_dbfs(_payload(message)) > SPEECH_LEVEL_DBFS
            if speech and quiet:
                onset = float(record.get("t", 0.0))
            quiet = not speech
        elif record.get("kind") == "twilio_out" and message.get("event") == "clear" and onset is not None:
            delays.append((float(record.get("t", 0.0)) - onset) * 1000)
    return delays


def _payload(message: dict[str, Any]) -> bytes:
    try:
        return base64.b64decode(str((message.get("media") or {}).get("payload", "")), validate=True)
    except (binascii.Error, ValueError):
        return b""


def _caller_messages(recording: Recording, event: str) -> list[dict[str, Any]]:
    return [message for message in recording.twilio_messages("twilio_in") if message.get("event") == event]


def _transcript(recording: Recording, folder: Path) -> dict[str, Any]:
    """The call's ``transcript.json``, rebuilt from the events when the folder has none."""
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


def _first_sentence(text: str) -> str:
    return _SENTENCE.split(text.strip(), maxsplit=1)[0].rstrip(".!?")

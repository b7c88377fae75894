"""The recorded calls under the record folder, as the console's calls page lists and opens them.

Reads what :mod:`telephony.recording.recorder` writes (one folder per call: ``events.jsonl``, ``transcript.json``,
``caller.wav``, ``bot.wav``, ``call.wav``) and never writes. Folder names come from the URL, so each is
checked to be one plain name directly under the record folder: nothing outside it can be read.
Everything here touches the disk: call it from a thread, not the event loop.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from telephony.recording.format import EVENTS_FILE
from telephony.recording.transcript import TRANSCRIPT_FILE

CALL_AUDIO = "call.wav"
"""Stereo: caller left, bot right (the page's player plays it)."""
MAX_LISTED = 200
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


@dataclass(frozen=True)
class CallSummary:
    """One row of the calls page."""

    name: str
    call_sid: str | None
    started_at: str | None
    duration_s: float | None
    turns: int
    tool_calls: int
    barge_ins: int
    ended_by: str | None
    end_reason: str | None
    from_number: str | None
    to_number: str | None
    has_audio: bool
    complete: bool
    """False while the call is still being recorded, or if the recorder stopped before finishing."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class CallLibrary:
    """Read-only access to one record folder."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def folder(self, name: str) -> Path | None:
        """The folder of recording ``name``, or None if there is none (or the name is not a plain name)."""
        if not _NAME.fullmatch(name) or name in (".", ".."):
            return None
        folder = self.root / name
        return folder if (folder / EVENTS_FILE).is_file() else None

    def recent(self, limit: int = MAX_LISTED) -> list[CallSummary]:
        """The newest recordings first (folder names start with the date and time)."""
        if not self.root.is_dir():
            return []
        names = sorted((entry.name for entry in self.root.iterdir() if entry.is_dir()), reverse=True)
        summaries = []
        for name in names:
            folder = self.folder(name)
            if folder is not None:
                summaries.append(summarise(name, folder))
            if len(summaries) >= limit:
                break
        return summaries

    def transcript(self, name: str) -> dict[str, Any] | None:
        """``transcript.json`` of ``name`` plus its summary, or None if the call has none (yet)."""
        folder = self.folder(name)
        if folder is None:
            return None
        transcript = _read_json(folder / TRANSCRIPT_FILE)
        if transcript is None:
            return None
        return {**transcript, "summary": summarise(name, folder).to_json()}

    def audio(self, name: str) -> Path | None:
        folder = self.folder(name)
        if folder is None or not (folder / CALL_AUDIO).is_file():
            return None
        return folder / CALL_AUDIO


def summarise(name: str, folder: Path) -> CallSummary:
    """A row from ``transcript.json`` (when the call is finished) and the first line of ``events.jsonl``."""
    head = _first_line(folder / EVENTS_FILE) or {}
    call = head.get("call") or {}
    transcript = _read_json(folder / TRANSCRIPT_FILE) or {}
    turns = transcript.get("turns") or []
    ended = transcript.get("ended") or {}
    return CallSummary(
        name=name,
        call_sid=call.get("call_sid") or transcript.get("call_sid"),
        started_at=head.get("started_at") or transcript.get("started_at"),
        duration_s=transcript.get("duration_s"),
        turns=sum(1 for turn in turns if turn.get("role") in ("bot", "caller")),
        tool_calls=sum(1 for turn in turns if turn.get("role") == "tool"),
        barge_ins=len(transcript.get("barge_ins") or []),
        ended_by=ended.get("by"),
        end_reason=ended.get("reason"),
        from_number=call.get("from"),
        to_number=call.get("to"),
        has_audio=(folder / CALL_AUDIO).is_file(),
        complete=bool(transcript),
    )


def _first_line(path: Path) -> dict[str, Any] | None:
    try:
        with path.open(encoding="utf-8") as file:
            value = json.loads(file.readline() or "null")
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None

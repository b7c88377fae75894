"""The recorded calls under the record folder, as the console's calls page lists and opens them.

Reads what :mod:`telephony.recording.recorder` writes (one folder per call: ``events.jsonl``, ``transcript.json``,
``caller.wav``, ``bot.wav``, ``call.wav``) and never writes. Folder names come from the URL, so each is
checked to be one plain name directly under the record folder: nothing outside it can be read.
Everything here touches the disk: call it from a thread, not the event loop.
"""

from __future__ import annotations

import itertools
import json
import re
import wave
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from telephony.call_outcome import CallOutcome, decide, from_json, row_fields
from telephony.recording.call_audio import BOT_WAV, CALLER_WAV
from telephony.recording.format import EVENTS_FILE
from telephony.recording.transcript import TRANSCRIPT_FILE

CALL_AUDIO = "call.wav"
"""Stereo: caller left, bot right (the page's player plays it)."""
MAX_LISTED = 200
DOWNLOADS = {
    CALL_AUDIO: "audio/wav",
    CALLER_WAV: "audio/wav",
    BOT_WAV: "audio/wav",
    EVENTS_FILE: "application/x-ndjson",
    TRANSCRIPT_FILE: "application/json",
}
"""The files of a recording the console offers, and their types (nothing else in a folder is served)."""
LEVELS_PER_S = 20
"""Points per second in a level strip (50 ms each)."""
SILENT_DBFS = -60.0
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
    agent: str | None
    model: str | None
    files: list[str]
    """Which of ``DOWNLOADS`` the folder holds."""
    has_audio: bool
    complete: bool
    """False while the call is still being recorded, or if the recorder stopped before finishing."""
    outcome: str | None = None
    """How the call ended (telephony.call_outcome); None while it is being recorded."""
    outcome_label: str | None = None
    outcome_reason: str | None = None
    recovered: bool = False
    """Its files were rebuilt from ``events.jsonl`` after its writer died (telephony.recording.recovery)."""

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

    def names(self, limit: int = MAX_LISTED) -> list[str]:
        """The newest recordings' names first (folder names start with the date and time)."""
        if not self.root.is_dir():
            return []
        names = sorted((entry.name for entry in self.root.iterdir() if entry.is_dir()), reverse=True)
        recordings = (name for name in names if self.folder(name) is not None)
        return list(itertools.islice(recordings, limit))  # a folder of thousands: only the newest are opened

    def recent(self, limit: int = MAX_LISTED) -> list[CallSummary]:
        """The newest recordings first."""
        return [summarise(name, self.root / name) for name in self.names(limit)]

    def transcript(self, name: str, summary: bool = True) -> dict[str, Any] | None:
        """``transcript.json`` of ``name`` (plus its ``summary`` unless not wanted), or None if it has none (yet)."""
        folder = self.folder(name)
        if folder is None:
            return None
        transcript = _read_json(folder / TRANSCRIPT_FILE)
        if transcript is None or not summary:
            return transcript
        return {**transcript, "summary": summarise(name, folder).to_json()}

    def audio(self, name: str) -> Path | None:
        return self.file(name, CALL_AUDIO)

    def file(self, name: str, file_name: str) -> Path | None:
        """One of a recording's ``DOWNLOADS``, or None (unknown recording, file not offered or not there)."""
        folder = self.folder(name)
        if folder is None or file_name not in DOWNLOADS or not (folder / file_name).is_file():
            return None
        return folder / file_name

    def find(self, call_sid: str) -> str | None:
        """The newest recording of ``call_sid`` (folders end with it), or None."""
        names = self.root.glob(f"*-{re.sub(r'[^A-Za-z0-9_-]', '_', call_sid)}*") if self.root.is_dir() else []
        found = sorted((path.name for path in names if self.folder(path.name) is not None), reverse=True)
        return found[0] if found else None

    def levels(self, name: str) -> dict[str, Any] | None:
        """Both sides' loudness, ``LEVELS_PER_S`` points a second, 0 (silent) to 1 (full scale): the level strips."""
        caller, bot = self.file(name, CALLER_WAV), self.file(name, BOT_WAV)
        if caller is None or bot is None:
            return None
        return {"per_s": LEVELS_PER_S, "caller": _levels(caller), "bot": _levels(bot)}


def summarise(name: str, folder: Path) -> CallSummary:
    """A row from ``transcript.json`` (when the call is finished) and the first line of ``events.jsonl``."""
    head = _first_line(folder / EVENTS_FILE) or {}
    call = head.get("call") or {}
    transcript = _read_json(folder / TRANSCRIPT_FILE) or {}
    turns = transcript.get("turns") or []
    ended = transcript.get("ended") or {}
    outcome = _outcome(transcript)
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
        agent=(head.get("agent") or {}).get("name"),
        model=(head.get("agent") or {}).get("model_id") or (head.get("agent") or {}).get("model"),
        files=[file_name for file_name in DOWNLOADS if (folder / file_name).is_file()],
        has_audio=(folder / CALL_AUDIO).is_file(),
        complete=bool(transcript),
        **row_fields(outcome),
        recovered=bool(transcript.get("recovered")),
    )


def _outcome(transcript: dict[str, Any]) -> CallOutcome | None:
    """A finished recording's outcome (one from before outcomes were recorded: from how it ended)."""
    if not transcript:
        return None
    given = from_json(transcript.get("outcome"))
    if given is not None:
        return given
    ended = transcript.get("ended") or {}
    return decide(str(ended.get("by") or ""), str(ended.get("reason") or ""))


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


def _levels(path: Path) -> list[float]:
    """RMS level per 50 ms of a mono 16-bit WAV, mapped from -60..0 dBFS to 0..1, read a minute at a time."""
    levels: list[float] = []
    with wave.open(str(path), "rb") as source:
        window = source.getframerate() // LEVELS_PER_S
        while chunk := source.readframes(window * LEVELS_PER_S * 60):
            samples = np.frombuffer(chunk, dtype="<i2").astype(np.float64)
            count = len(samples) // window
            if count == 0:
                break
            rms = np.sqrt(np.mean(samples[: count * window].reshape(count, window) ** 2, axis=1)) / 32768
            dbfs = 20 * np.log10(np.maximum(rms, 1e-9))
            levels.extend(np.round(np.clip(1 - dbfs / SILENT_DBFS, 0, 1), 3).tolist())
    return levels

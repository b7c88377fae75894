"""Recordings whose writer died (the server was killed, the machine lost power) are finished from what reached disk.

A recorder holds a lock on its ``events.jsonl`` until its files are finished (telephony.recording.recorder), and
writes ``transcript.json`` last and whole. A folder with ``events.jsonl``, no ``transcript.json`` and nobody
holding the lock is a call cut short by a dead process: its transcript, turns, duration and WAVs are rebuilt
from its records, exactly as the writer would have built them, marked ``recovered`` with the outcome
``crashed`` (unless the call had ended and only the files were left unwritten). Safe while other workers record
into the same folder: a live writer's lock is never taken, and two recoveries of one folder never run at once.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import threading
from pathlib import Path
from typing import Any

from telephony.call_outcome import CallOutcome, Outcome
from telephony.recording import dead_air
from telephony.recording.call_audio import CallAudio
from telephony.recording.format import EVENTS_FILE, RecordingError, read
from telephony.recording.transcript import TRANSCRIPT_FILE, TranscriptBuilder, write_transcript

log = logging.getLogger(__name__)


def unfinished(folder: Path) -> bool:
    """The folder has events but no transcript (a call in progress, or one whose writer died)."""
    return (folder / EVENTS_FILE).is_file() and not (folder / TRANSCRIPT_FILE).is_file()


def recover(folder: Path) -> bool:
    """Finish ``folder`` if its writer is dead; False if it needs nothing or its writer is still at work."""
    if not unfinished(folder):
        return False
    try:
        probe = (folder / EVENTS_FILE).open("rb")
    except OSError:
        return False
    with probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a writer (in this process or another worker) is still recording it
        if not unfinished(folder):
            return False  # finished meanwhile, by its writer or another recovery
        write_transcript(folder, rebuild(folder))
    log.warning("recovered the recording %s: its writer died before finishing it", folder.name)
    return True


def rebuild(folder: Path) -> dict[str, Any]:
    """``transcript.json`` (and the WAVs) from a folder's ``events.jsonl``, marked recovered."""
    try:
        _, header, records = read(folder)
    except RecordingError as error:
        return _nothing_recorded(folder, str(error))
    builder = TranscriptBuilder(CallAudio(folder))
    end: dict[str, Any] | None = None
    try:
        for record in records:
            builder.add(record)
            end = record if record.get("kind") == "end" else end
        builder.audio.write(folder)
    except RecordingError as error:
        log.warning("recording %s: %s; recovered up to there", folder.name, error)
        builder.audio.write(folder)
    finally:
        builder.audio.close()
    return builder.build(header, end) | {"recovered": True}


def _nothing_recorded(folder: Path, why: str) -> dict[str, Any]:
    """A transcript for a folder whose ``events.jsonl`` holds no usable header (the process died at once)."""
    outcome = CallOutcome(Outcome.CRASHED, f"the server stopped before the call was recorded ({why})")
    return {
        "call_sid": folder.name.split("-", 2)[-1] or None,
        "started_at": None,
        "duration_s": 0.0,
        "ended": None,
        "outcome": outcome.to_json(),
        "recovered": True,
        "turns": [],
        "events": [],
        "barge_ins": [],
        "notes": [],
        "dead_air": dead_air.summary([]),
    }


def recover_all(root: Path, stop: threading.Event | None = None) -> int:
    """Recover every dead recording under ``root`` (at start-up); the number recovered."""
    if not root.is_dir():
        return 0
    count = 0
    for folder in sorted(root.iterdir()):
        if stop is not None and stop.is_set():
            break
        if folder.is_dir() and unfinished(folder):
            try:
                count += recover(folder)
            except OSError as error:
                log.warning("cannot recover the recording %s: %s", folder.name, error.strerror or error)
    return count


class StartupRecovery:
    """At start-up, finish the recordings a dead process left (in a thread: a long call's WAVs take a while)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self._stop = threading.Event()
        self._task: asyncio.Task[int] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(asyncio.to_thread(recover_all, self.root, self._stop), name="recovery")
        self._task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[int]) -> None:
        if task.cancelled():
            return
        if task.exception() is not None:
            log.error("recovering recordings failed: %r", task.exception())
        elif task.result():
            log.warning("recovered %d recording(s) in %s left unfinished by a stopped server", task.result(), self.root)

    async def wait(self) -> None:
        """Until the start-up recovery is over (tests, and shutdown)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def aclose(self) -> None:
        self._stop.set()
        await self.wait()

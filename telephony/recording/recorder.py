"""Recording calls to disk (``VOICEBOT_RECORD_DIR`` / ``voicebot serve --record DIR``).

Each call gets a folder ``<date>-<time>-<CallSid>`` holding ``events.jsonl`` (see
:mod:`telephony.recording.format`), ``caller.wav``, ``bot.wav``, ``call.wav`` and ``transcript.json``.

Recording must never slow a call down: the hooks only timestamp and enqueue (a bounded queue), and one
thread per call does the parsing and writing. If the queue overflows (the disk cannot keep up) or a
write fails (disk full), recording stops for that call with one log line, and the call goes on.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import queue
import re
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from telephony.bridge.caller_speech import SpeechSpan
from telephony.bridge.observer import ObserverFactory
from telephony.call_info import CallInfo
from telephony.operations.logs import CallLog
from telephony.recording.call_audio import CallAudio
from telephony.recording.format import EVENTS_FILE, encode_line, header
from telephony.recording.transcript import TranscriptBuilder, write_transcript
from telephony.twilio.security import PARAMETER_NAME

log = logging.getLogger(__name__)

MAX_QUEUED = 20_000
"""Records waiting for the writer (~3 minutes of a busy call) before recording gives up."""
IDLE_TIMEOUT_S = 120.0
"""A writer that hears nothing for this long (Twilio sends audio every 20 ms) finishes on its own."""
JOIN_TIMEOUT_S = 8.0
"""How long ``call_ended`` waits for the files to be finished (the session bounds it at 10 s)."""
_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
_END = object()


def recorder_factory(record_dir: Path | str) -> ObserverFactory:
    """An observer factory for ``create_app(observers=[...])`` that records every call under ``record_dir``."""
    root = Path(record_dir)

    def make(call: CallInfo) -> CallRecorder:
        return CallRecorder.start(call, folder_name(root, call))

    return make


def folder_name(root: Path, call: CallInfo, now: datetime | None = None) -> Path:
    """``root/20250131-091502-CA…``: sortable by date, and nothing from the wire can escape ``root``."""
    now = now or datetime.now(UTC)
    sid = _SAFE.sub("_", call.call_sid)[:64].strip("_") or "unknown-call"
    return root / f"{now:%Y%m%d-%H%M%S}-{sid}"


class CallRecorder:
    """A :class:`~telephony.bridge.observer.CallObserver` that writes one call's folder from its own thread."""

    def __init__(self, call: CallInfo, folder: Path, max_queued: int = MAX_QUEUED) -> None:
        self.call = call
        self.requested_folder = folder
        self.folder: Path | None = None
        """Where the files went (``requested_folder``, with a suffix if that already existed)."""
        self.stopped_reason: str | None = None
        self._log = CallLog(log, call.call_sid)
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_queued)
        self._t0 = time.monotonic()
        self._started_at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self._audio_bytes = 0
        self._texts = 0
        self._tool_results = 0
        self._stop_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"recorder:{call.call_sid}", daemon=True)

    @classmethod
    def start(cls, call: CallInfo, folder: Path, max_queued: int = MAX_QUEUED) -> CallRecorder:
        recorder = cls(call, folder, max_queued)
        recorder._thread.start()
        return recorder

    # --- CallObserver hooks: on the event loop, return at once ------------------------------------

    def model_audio(self, input_rate: int, output_rate: int) -> None:
        self._put(("rates", 0.0, (input_rate, output_rate)))

    def twilio_received(self, text: str) -> None:
        self._put(("twilio_in", time.monotonic() - self._t0, text))

    def twilio_sent(self, text: str) -> None:
        self._put(("twilio_out", time.monotonic() - self._t0, text))

    def agent_event(self, event: Any) -> None:
        given = (self._audio_bytes, self._texts, self._tool_results)
        if isinstance(event, dict) and event.get("type") == "tool_result":
            self._tool_results += 1
        self._put(("agent", time.monotonic() - self._t0, (_event_dict(event), given)))

    def agent_input(self, item: bytes | str) -> None:
        if isinstance(item, str):
            self._texts += 1
            self._put(("agent_text", time.monotonic() - self._t0, item))
        else:
            self._audio_bytes += len(item)

    def note(self, kind: str, detail: str) -> None:
        self._put(("note", time.monotonic() - self._t0, (kind, detail)))

    def agent_info(self, info: dict[str, str]) -> None:
        self._put(("agent_info", 0.0, dict(info)))

    def caller_speech(self, span: SpeechSpan) -> None:
        self._put(("caller_speech", time.monotonic() - self._t0, (span.start_s, span.end_s)))

    async def call_ended(self, reason: str, ended_by: str) -> None:
        """Queue the last line and wait (off the loop) for the writer to finish the files."""
        given = (self._audio_bytes, self._texts, self._tool_results)
        try:
            self._queue.put_nowait(("end", time.monotonic() - self._t0, (reason, ended_by, given)))
        except queue.Full:
            self._stop(f"{self._queue.maxsize} events waiting: the disk cannot keep up")
        await asyncio.to_thread(self._thread.join, JOIN_TIMEOUT_S)
        if self._thread.is_alive():
            self._log.warning("recording not finished after %.0fs; it goes on in the background", JOIN_TIMEOUT_S)

    def _put(self, item: tuple[str, float, Any]) -> None:
        if self.stopped_reason is not None:
            return
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self._stop(f"{self._queue.maxsize} events waiting: the disk cannot keep up")

    def _stop(self, reason: str) -> None:
        """Stop recording this call (once, from either thread); the call itself goes on."""
        with self._stop_lock:
            if self.stopped_reason is not None:
                return
            self.stopped_reason = reason
        where = self.folder or self.requested_folder
        self._log.warning("recording stopped: %s; the call goes on (partial recording in %s)", reason, where)

    # --- the writer thread ------------------------------------------------------------------------

    def _run(self) -> None:
        writer: _Writer | None = None
        try:
            self.folder = _make_folder(self.requested_folder)
            writer = _Writer(self.folder, self.call, self._started_at)
            while self.stopped_reason is None:
                try:
                    item = self._queue.get(timeout=IDLE_TIMEOUT_S)
                except queue.Empty:
                    item = ("end", time.monotonic() - self._t0, ("recording idle: no events", "unknown"))
                if writer.take(*item):
                    writer.finish()
                    return
                if self._queue.empty():
                    writer.flush()
                time.sleep(0)  # hand the GIL back to the event loop after each record, not every 5 ms
        except OSError as error:
            self._stop(
                f"cannot write {error.filename or self.folder or self.requested_folder}: {error.strerror or error}"
            )
        except Exception as error:  # noqa: BLE001 - a recorder bug must not reach the call
            self._stop(f"recorder failed: {error!r}")
        finally:
            if writer is not None:
                writer.close()


class _Writer:
    """Everything the writer thread holds: the open ``events.jsonl`` and what the WAVs are built from."""

    def __init__(self, folder: Path, call: CallInfo, started_at: str) -> None:
        self.folder = folder
        self.call = call
        self.started_at = started_at
        self.file: IO[str] = open(folder / EVENTS_FILE, "w", encoding="utf-8")
        self._alive = open(folder / EVENTS_FILE, "rb")
        """Locked until the files are finished: a writer that died lets go of it (telephony.recording.recovery)."""
        fcntl.flock(self._alive, fcntl.LOCK_EX)
        self.header: dict[str, Any] | None = None
        self.pending: list[dict[str, Any]] = []
        self.input_rate = 16000
        self.frames_before_model = 0
        self.transcript = TranscriptBuilder(CallAudio(folder))
        self.end: dict[str, Any] | None = None
        self.agent: dict[str, str] | None = None

    def take(self, kind: str, at: float, data: Any) -> bool:
        """Write one queued item; True once the call has ended."""
        if kind == "agent_info":
            self.agent = data
            return False
        if kind == "rates":
            self.input_rate = data[0]
            self._write_header(data)
            return False
        record: dict[str, Any] = {"t": round(at, 4), "kind": kind}
        if kind in ("twilio_in", "twilio_out"):
            try:
                record["message"] = json.loads(data)
            except ValueError:
                record["raw"] = data
            if kind == "twilio_in" and self.header is None and _is_media(record.get("message")):
                self.frames_before_model += 1
            _redact_token(record.get("message"))
        elif kind == "agent":
            event, given = data
            record.update(event=event, input=self._given(given))
        elif kind == "agent_text":
            record["text"] = data
        elif kind == "note":
            record["note"], record["detail"] = data
        elif kind == "caller_speech":
            record["start"], record["end"] = data
        elif kind == "end":
            record["reason"], record["ended_by"] = data[0], data[1]
            if len(data) > 2:
                record["input"] = self._given(data[2])
            self.end = record
        if self.header is None and kind in ("twilio_out", "agent", "end"):
            self._write_header(None)  # the model never declared its rates (it did not start)
        self._record(record)
        return kind == "end"

    def _given(self, given: tuple[int, int, int]) -> dict[str, Any]:
        """What the model had been given: seconds of caller audio, text inputs, tool results."""
        audio_bytes, texts, tool_results = given
        return {"audio_s": round(audio_bytes / 2 / self.input_rate, 6), "texts": texts, "tool_results": tool_results}

    def _write_header(self, rates: tuple[int, int] | None) -> None:
        if self.header is not None:
            return
        self.header = header(self.call, self.started_at, rates, self.frames_before_model, self.agent)
        self.file.write(encode_line(self.header))
        for record in self.pending:
            self._write(record)
        self.pending.clear()

    def _record(self, record: dict[str, Any]) -> None:
        if self.header is None:
            self.pending.append(record)
        else:
            self._write(record)

    def _write(self, record: dict[str, Any]) -> None:
        self.file.write(encode_line(record))
        self.transcript.add(record)

    def flush(self) -> None:
        self.file.flush()

    def finish(self) -> None:
        """The call is over: close ``events.jsonl``, then render the WAVs and the transcript."""
        self.file.close()
        assert self.header is not None
        self.transcript.audio.write(self.folder)
        write_transcript(self.folder, self.transcript.build(self.header, self.end))

    def close(self) -> None:
        if not self.file.closed:
            self.file.close()
        self.transcript.audio.close()
        self._alive.close()


def _make_folder(wanted: Path) -> Path:
    """Create the call's folder; a second call with the same SID in the same second gets ``-2``, ``-3``…"""
    wanted.parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 100):
        folder = wanted if attempt == 1 else wanted.with_name(f"{wanted.name}-{attempt}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise FileExistsError(f"too many recordings named {wanted}")


def _redact_token(message: Any) -> None:
    """Call tokens (single-use, but credentials all the same) stay out of recordings."""
    start = message.get("start") if isinstance(message, dict) and message.get("event") == "start" else None
    parameters = start.get("customParameters") if isinstance(start, dict) else None
    if isinstance(parameters, dict) and PARAMETER_NAME in parameters:
        parameters[PARAMETER_NAME] = "(redacted)"


def _is_media(message: Any) -> bool:
    return isinstance(message, dict) and message.get("event") == "media"


def _event_dict(event: Any) -> dict[str, Any]:
    """A shallow copy of an agent event, with its type (events without one get their class name)."""
    data = dict(event) if isinstance(event, dict) else {"value": repr(event)}
    data.setdefault("type", type(event).__name__)
    return data


def record_dir_problem(record_dir: Path | str) -> str | None:
    """Why calls cannot be recorded under ``record_dir`` (checked once at start-up), or None."""
    root = Path(record_dir)
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".voicebot-write-test-{threading.get_ident()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        return f"cannot record calls in {root}: {error.strerror or error} (fix VOICEBOT_RECORD_DIR or --record)"
    return None

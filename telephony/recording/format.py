"""The ``events.jsonl`` format of a recorded call: one JSON object per line, read and written here.

The first line is a header::

    {"format": "voicebot-recording", "version": 1, "started_at": "2025-01-31T09:15:02.120Z",
     "call": {"call_sid": "CA…", "stream_sid": "MZ…", "account_sid": "AC…", "from": "+1…", "to": "+1…",
              "parameters": {…}},
     "model": {"input_rate": 16000, "output_rate": 16000, "frames_before_model": 2},
     "agent": {"name": "voicebot", "model": "NovaSonicModel", "model_id": "amazon.nova-2-5-sonic"}}

(``model`` and ``agent`` are null when the agent was never built; ``frames_before_model`` counts the caller
frames that arrived before it was, which the bridge drops). Every other line has ``t``, seconds since the
stream started (monotonic clock), and a ``kind``:

- ``twilio_in``: ``message``, a message Twilio sent to the bridge (``raw`` instead when it was not JSON);
- ``twilio_out``: ``message``, a message the bridge sent to Twilio;
- ``agent``: ``event``, an event from ``agent.receive()`` (its ``type``, or its class name when it has
  none), and ``input``: what the model had been given when it came out (``audio_s`` of caller audio,
  ``texts`` and ``tool_results`` counts), which is what lets the replay model re-time it;
- ``agent_text``: ``text``, a text input handed to the agent (greeting, keypress note);
- ``note``: ``note`` and ``detail``, something the bridge decided (``barge_in``, ``hangup``, ``error``…);
- ``caller_speech``: ``start`` and ``end``, a stretch of caller speech as the bridge heard it, in seconds of
  the stream's own clock (Twilio's media ``timestamp``; see :mod:`telephony.bridge.caller_speech`);
- ``end``: ``reason``, ``ended_by`` and ``input`` (all the model had been given), the last line of a
  complete recording.

Audio stays as it is on the wire: base64 μ-law in Twilio messages, base64 PCM16 in agent events.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from telephony.call_info import CallInfo

FORMAT = "voicebot-recording"
VERSION = 1
EVENTS_FILE = "events.jsonl"


class RecordingError(ValueError):
    """A file is not a recording this version can read (the message says what to do)."""


def header(
    call: CallInfo,
    started_at: str,
    rates: tuple[int, int] | None,
    frames_before_model: int = 0,
    agent: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The first line of ``events.jsonl``."""
    model = None
    if rates is not None:
        model = {"input_rate": rates[0], "output_rate": rates[1], "frames_before_model": frames_before_model}
    return {
        "format": FORMAT,
        "version": VERSION,
        "started_at": started_at,
        "call": {
            "call_sid": call.call_sid,
            "stream_sid": call.stream_sid,
            "account_sid": call.account_sid,
            "from": call.from_number,
            "to": call.to_number,
            "parameters": call.parameters,
        },
        "model": model,
        "agent": agent if rates is not None else None,
    }


def encode_line(record: dict[str, Any]) -> str:
    """One line of ``events.jsonl``; values JSON cannot hold (bytes, exceptions) become text."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False, default=_jsonable) + "\n"


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": len(value)}
    if isinstance(value, (set, tuple)):
        return list(value)
    return repr(value)


@dataclass
class Recording:
    """A recorded call, loaded from its ``events.jsonl``."""

    header: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None

    @classmethod
    def load(cls, path: Path | str) -> Recording:
        """Read a recording folder or its ``events.jsonl``; a cut-off last line (a crash) is skipped."""
        events, head, records = read(path)
        return cls(header=head, records=list(records), path=events)

    @property
    def call(self) -> dict[str, Any]:
        return dict(self.header.get("call") or {})

    @property
    def model_rates(self) -> tuple[int, int] | None:
        model = self.header.get("model")
        if not model:
            return None
        return int(model["input_rate"]), int(model["output_rate"])

    @property
    def frames_before_model(self) -> int:
        return int((self.header.get("model") or {}).get("frames_before_model", 0))

    @property
    def end(self) -> dict[str, Any] | None:
        """The ``end`` record, or None if the recording was cut short."""
        return next((record for record in reversed(self.records) if record.get("kind") == "end"), None)

    def of_kind(self, kind: str) -> Iterator[dict[str, Any]]:
        return (record for record in self.records if record.get("kind") == kind)

    def twilio_messages(self, kind: str) -> list[dict[str, Any]]:
        """Messages of ``twilio_in`` or ``twilio_out`` that were JSON objects, in order."""
        return [record["message"] for record in self.of_kind(kind) if isinstance(record.get("message"), dict)]


def read(path: Path | str) -> tuple[Path, dict[str, Any], Iterator[dict[str, Any]]]:
    """A recording's ``events.jsonl``, its checked header and its records one at a time (a long call's records
    need not all be in memory); a cut-off last line (a crash) is skipped, a bad line before it raises."""
    path = Path(path)
    if path.is_dir():
        path = path / EVENTS_FILE
    try:
        file = path.open(encoding="utf-8")
    except OSError as error:
        raise RecordingError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        first = file.readline()
        if not first:
            raise RecordingError(f"{path} is empty: record a call with VOICEBOT_RECORD_DIR set")
        head = _parse(first, path, 1)
        if head.get("format") != FORMAT:
            raise RecordingError(f"{path} is not a voicebot recording (its first line has no format {FORMAT!r})")
        if head.get("version") != VERSION:
            raise RecordingError(
                f"{path} is format version {head.get('version')}; this voicebot reads version {VERSION}"
            )
    except BaseException:
        file.close()
        raise
    return path, head, _records(file, path)


def _records(file: IO[str], path: Path) -> Iterator[dict[str, Any]]:
    with file:
        bad: RecordingError | None = None
        for number, line in enumerate(file, start=2):
            if bad is not None:
                raise bad
            if not line.strip():
                continue
            try:
                yield _parse(line, path, number)
            except RecordingError as error:
                bad = error  # the last line of a process that stopped mid-line, unless another follows


def _parse(line: str, path: Path, number: int) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        raise RecordingError(f"{path}:{number} is not JSON") from None
    if not isinstance(value, dict):
        raise RecordingError(f"{path}:{number} is not a JSON object")
    return value

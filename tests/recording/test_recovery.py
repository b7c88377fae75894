"""Recordings a dead writer left unfinished are rebuilt from ``events.jsonl``; live ones are never touched."""

from __future__ import annotations

import base64
import fcntl
import json
from pathlib import Path
from typing import Any

from telephony.call_info import CallInfo
from telephony.recording.format import EVENTS_FILE, encode_line, header
from telephony.recording.recovery import recover, recover_all, unfinished
from telephony.recording.timeline import KINDS, Timeline

CALL = CallInfo(call_sid="CA" + "1" * 32, stream_sid="MZ" + "2" * 32, from_number="+15550001111")


def media(at: float, kind: str, frames: int = 1, timestamp_ms: int = 0) -> dict[str, Any]:
    payload = base64.b64encode(b"\x10" * 160 * frames).decode()
    message: dict[str, Any] = {"event": "media", "streamSid": CALL.stream_sid, "media": {"payload": payload}}
    if kind == "twilio_in":
        message["media"] |= {"track": "inbound", "timestamp": str(timestamp_ms)}
    return {"t": at, "kind": kind, "message": message}


def agent(at: float, event: dict[str, Any]) -> dict[str, Any]:
    return {"t": at, "kind": "agent", "event": event, "input": {"audio_s": at, "texts": 0, "tool_results": 0}}


RECORDS = [
    agent(0.1, {"type": "bidi_response_start"}),
    agent(0.1, {"type": "bidi_transcript_block", "role": "assistant", "transcript": "Hello there."}),
    media(0.12, "twilio_out", frames=25),
    *(media(0.5 + i * 0.02, "twilio_in", timestamp_ms=500 + 20 * i) for i in range(50)),
    {"t": 0.9, "kind": "twilio_in", "message": {"event": "dtmf", "dtmf": {"track": "inbound_track", "digit": "5"}}},
    agent(1.0, {"type": "bidi_tool_use_blocks", "tool_uses": [{"toolUseId": "t1", "name": "lookup", "input": {}}]}),
    agent(1.1, {"type": "tool_result", "tool_result": {"toolUseId": "t1", "status": "success", "content": []}}),
    {"t": 1.2, "kind": "note", "note": "barge_in", "detail": "about 0.40 s of bot audio unheard"},
    {"t": 1.3, "kind": "note", "note": "swap", "detail": "model connection replaced in 0.20 s"},
    {"t": 1.4, "kind": "note", "note": "error", "detail": "agent failed mid-call: boom"},
    {"t": 1.5, "kind": "note", "note": "hangup", "detail": "agent failed mid-call: boom"},
    {"t": 1.6, "kind": "note", "note": "limit", "detail": "warn"},
    {"t": 1.61, "kind": "note", "note": "rescue", "detail": "nudged the agent"},
    {"t": 1.62, "kind": "note", "note": "check_in", "detail": "checked on the silent caller"},
    {"t": 1.63, "kind": "note", "note": "dead_air", "detail": '{"s": 2.5, "after": "tool", "ended_by": "audio"}'},
    {"t": 1.64, "kind": "note", "note": "hold_sound", "detail": "started"},
    {"t": 1.7, "kind": "note", "note": "transfer", "detail": "+15550009999"},
    {"t": 1.8, "kind": "note", "note": "caller_spoke", "detail": "nothing was playing"},
]


def write_events(folder: Path, records: list[dict[str, Any]], cut_last_line: bool = False) -> Path:
    folder.mkdir(parents=True)
    lines = [encode_line(header(CALL, "2026-12-02T09:00:00.000Z", (16000, 16000))), *map(encode_line, records)]
    text = "".join(lines)
    if cut_last_line:
        text = text[: -len(lines[-1]) // 2]  # the process died mid-line
    (folder / EVENTS_FILE).write_text(text, encoding="utf-8")
    return folder


def test_a_dead_writers_recording_is_rebuilt_in_order_and_marked_recovered(tmp_path: Path) -> None:
    folder = write_events(tmp_path / f"20261202-090000-{CALL.call_sid}", RECORDS, cut_last_line=True)
    assert unfinished(folder) and recover(folder) and not unfinished(folder)
    transcript = json.loads((folder / "transcript.json").read_text())
    assert transcript["recovered"] is True and transcript["ended"] is None
    assert transcript["outcome"]["code"] == "crashed"
    assert transcript["duration_s"] == 1.7, "up to the last whole line that reached disk"
    assert [turn["text"] for turn in transcript["turns"] if turn["role"] == "bot"] == ["Hello there.", "(apology)"]
    kinds = [event["kind"] for event in transcript["events"]]
    assert kinds == [
        "dtmf",
        "tool_call",
        "tool_result",
        "barge_in",
        "model_swap",
        "error",
        "hangup",
        "limit",
        "rescue",
        "check_in",
        "dead_air",
        "transfer",
    ]
    assert transcript["events"][0] | {"t": 0} == {"t": 0, "kind": "dtmf", "label": "key 5", "detail": "5"}
    assert transcript["events"][2]["label"] == "tool lookup: success"
    assert {path.name for path in folder.iterdir()} >= {"caller.wav", "bot.wav", "call.wav", "transcript.json"}
    assert not recover(folder), "a finished recording needs nothing"


def test_a_recording_whose_writer_holds_its_lock_is_left_alone(tmp_path: Path) -> None:
    folder = write_events(tmp_path / "20261202-090000-CAlive", RECORDS[:3])
    with (folder / EVENTS_FILE).open("rb") as writer:
        fcntl.flock(writer, fcntl.LOCK_EX)
        assert recover_all(tmp_path) == 0 and unfinished(folder)
    assert recover_all(tmp_path) == 1 and not unfinished(folder)


def test_a_recording_with_nothing_usable_on_disk_is_closed_as_crashed(tmp_path: Path) -> None:
    folder = tmp_path / "20261202-090000-CAempty"
    folder.mkdir()
    (folder / EVENTS_FILE).write_text("", encoding="utf-8")
    assert recover(folder)
    transcript = json.loads((folder / "transcript.json").read_text())
    assert transcript["outcome"]["code"] == "crashed" and transcript["turns"] == [] and transcript["recovered"]
    assert "is empty" in transcript["outcome"]["reason"] and transcript["call_sid"] == "CAempty"


def test_the_timeline_takes_every_kind_it_documents_and_ignores_the_rest() -> None:
    timeline = Timeline()
    for record in RECORDS:
        timeline.add(record["t"], record)
    timeline.add(2.0, {"kind": "note", "note": "outcome", "detail": "{}"})
    timeline.add(2.1, {"kind": "twilio_in", "message": "not a dict"})
    timeline.add(2.2, agent(2.2, {"type": "bidi_connection_restart", "reason": "timeout"}))
    events = timeline.events()
    assert {event["kind"] for event in events} == set(KINDS)
    assert [event["t"] for event in events] == sorted(event["t"] for event in events)
    assert events[-1]["label"] == "model connection restarted" and events[-1]["detail"] == "timeout"

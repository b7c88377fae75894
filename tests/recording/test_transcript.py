"""transcript.json: caller turns on the speech the bridge heard, latency per answer, the heard part of bot turns."""

from __future__ import annotations

import base64
from typing import Any

from telephony.recording.transcript import TranscriptBuilder

LOUD = base64.b64encode(bytes([0x10]) * 160).decode()


def caller_frame(t: float, stamp_ms: int) -> dict[str, Any]:
    media = {"track": "inbound", "timestamp": str(stamp_ms), "payload": LOUD}
    return {"t": t, "kind": "twilio_in", "message": {"event": "media", "media": media}}


def agent(t: float, event_type: str, **fields: Any) -> dict[str, Any]:
    return {"t": t, "kind": "agent", "event": {"type": event_type, **fields}}


def bot_frame(t: float) -> dict[str, Any]:
    return {"t": t, "kind": "twilio_out", "message": {"event": "media", "media": {"payload": LOUD}}}


def build(records: list[dict[str, Any]]) -> dict[str, Any]:
    builder = TranscriptBuilder()
    for record in records:
        builder.add(record)
    try:
        return builder.build({"call": {"call_sid": "CA1"}}, {"t": 20.0, "reason": "done", "ended_by": "caller"})
    finally:
        builder.audio.close()


def test_caller_turns_sit_on_their_speech_and_answers_carry_their_latency() -> None:
    records = [caller_frame(0.15, 100)]  # the stream clock runs 0.05 s behind the recording's
    records += [{"t": 11.0, "kind": "caller_speech", "start": 9.9, "end": 10.8}]
    records += [agent(11.5, "bidi_transcript_block", role="user", transcript="what time is it", content_id="u1")]
    records += [agent(11.52, "bidi_response_start")]
    records += [bot_frame(11.55 + 0.02 * i) for i in range(50)]
    records += [agent(11.6, "bidi_transcript_block", role="assistant", transcript="It is noon.", content_id="a1")]
    records += [{"t": 14.0, "kind": "caller_speech", "start": 13.5, "end": 13.7}]  # a cough nobody transcribed
    transcript = build(records)
    caller, bot = transcript["turns"]
    assert (caller["role"], caller["start"], caller["end"], caller["recognised_at"]) == ("caller", 9.95, 10.85, 11.5)
    assert bot["role"] == "bot" and bot["start"] == 11.55 and bot["latency_s"] == 0.7
    assert bot["sent_s"] == bot["heard_s"] == 1.0 and not bot["interrupted"]


def test_without_speech_records_caller_turns_keep_the_models_timing() -> None:
    records = [agent(5.0, "bidi_transcript_block", role="user", transcript="hello", content_id="u1")]
    (caller,) = build(records)["turns"]
    assert (caller["start"], caller["end"]) == (5.0, 5.0)


def note(t: float, kind: str, detail: str) -> dict[str, Any]:
    return {"t": t, "kind": "note", "note": kind, "detail": detail}


def test_dead_air_is_listed_with_the_longest_and_only_long_waits_are_events() -> None:
    records = [
        note(2.0, "dead_air", '{"s": 0.8, "after": "greeting", "ended_by": "audio"}'),
        note(6.5, "hold_sound", "started: a tool is running"),
        note(7.0, "dead_air", '{"s": 3.42, "after": "caller", "ended_by": "hold"}'),
        note(8.0, "rescue", "nudged the agent after 3.0 s of silence"),
        note(9.0, "dead_air", "not json"),
        note(9.1, "dead_air", '{"after": "tool"}'),
        note(9.2, "dead_air", "[1, 2]"),
        note(9.3, "dead_air", '{"s": "long", "after": "tool"}'),
        note(12.0, "check_in", "asked the silent caller if they are still there"),
        note(13.0, "hold_sound", "stopped"),
    ]
    transcript = build(records)
    assert transcript["dead_air"] == {
        "max_s": 3.42,
        "waits": [
            {"t": 2.0, "s": 0.8, "after": "greeting", "ended_by": "audio"},
            {"t": 7.0, "s": 3.42, "after": "caller", "ended_by": "hold"},
        ],
    }
    events = [(event["t"], event["kind"], event["label"]) for event in transcript["events"]]
    assert events == [
        (7.0, "dead_air", "dead air: 3.4 s after the caller's turn"),
        (8.0, "rescue", "quiet agent: nudged the agent after 3.0 s of silence"),
        (12.0, "check_in", "silent caller: asked the silent caller if they are still there"),
    ]
    assert {"call_sid", "turns", "events", "barge_ins", "notes", "outcome", "duration_s"} <= set(transcript)


def test_a_call_without_dead_air_notes_has_none() -> None:
    assert build([])["dead_air"] == {"max_s": 0.0, "waits": []}


def test_the_hold_sound_and_its_clear_belong_to_no_bot_turn() -> None:
    records = [agent(1.0, "bidi_response_start")]
    records += [bot_frame(1.0 + 0.02 * i) for i in range(25)]  # a half-second answer, heard in full
    records += [note(5.0, "hold_sound", "started: the agent owes an answer")]
    records += [bot_frame(5.0 + 0.02 * i) for i in range(40)]
    records += [{"t": 5.5, "kind": "twilio_out", "message": {"event": "clear"}}]
    records += [agent(5.5, "bidi_response_start")]
    records += [bot_frame(5.5 + 0.02 * i) for i in range(25)]
    first, second = (turn for turn in build(records)["turns"] if turn["role"] == "bot")
    assert first["sent_s"] == first["heard_s"] == 0.5 and not first["interrupted"]
    assert second["start"] >= 5.5 and second["sent_s"] == 0.5

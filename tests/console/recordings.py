"""Recording folders written straight to disk, as the recorder leaves them, for the calls page's browser tests:
many calls (a list longer than a screen) and one call with every kind of event on its timeline."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

RICH_SID = "CA" + "e" * 32
"""The call with key presses, a barge-in, a tool call, a model swap and latency stages."""

RICH_TURNS: list[dict[str, Any]] = [
    {"role": "bot", "text": "Welcome. Press 1 for opening hours.", "start": 0.4, "end": 2.2,
     "sent_s": 1.8, "heard_s": 1.8, "interrupted": False},
    {"role": "bot", "text": "We open at nine and close at six every weekday.", "start": 3.6, "end": 7.0,
     "sent_s": 3.4, "heard_s": 1.4, "interrupted": True, "latency_s": 0.62,
     "stages": {"speech_end": 2.98, "recognised": 3.18, "first_audio_out": 3.4, "first_audio_heard": 3.6}},
    {"role": "caller", "text": "What time is it now?", "start": 5.0, "end": 6.4, "recognised_at": 6.6},
    {"role": "tool", "name": "current_time", "input": {}, "start": 6.7, "end": 6.8, "status": "success"},
    {"role": "bot", "text": "It is ten past three.", "start": 7.2, "end": 8.6, "sent_s": 1.4, "heard_s": 1.4,
     "interrupted": False, "latency_s": 0.8,
     "stages": {"speech_end": 6.4, "recognised": 6.6, "first_audio_out": 7.0, "first_audio_heard": 7.2}},
]  # fmt: skip
RICH_EVENTS: list[dict[str, Any]] = [
    {"t": 2.9, "kind": "dtmf", "label": "key 1", "detail": "the caller pressed 1"},
    {"t": 5.0, "kind": "barge_in", "label": "barge-in: about 2.0 s unheard", "detail": "about 2.00 s of bot audio"},
    {"t": 6.7, "kind": "tool_call", "label": "tool current_time", "detail": "current_time()"},
    {"t": 6.8, "kind": "tool_result", "label": "tool current_time: success", "detail": "success"},
    {"t": 8.0, "kind": "model_swap", "label": "model connection replaced: timeout", "detail": "restart: timeout"},
    {"t": 9.5, "kind": "hangup", "label": "hang-up: the caller said goodbye", "detail": "the caller said goodbye"},
]  # fmt: skip


def write_recording(
    root: Path,
    call_sid: str,
    started: datetime,
    from_number: str,
    turns: list[dict[str, Any]],
    events: list[dict[str, Any]] | None = None,
    outcome: dict[str, str] | None = None,
    duration_s: float = 10.0,
) -> str:
    """One finished recording (events.jsonl with a few raw lines, transcript.json); returns its folder name."""
    name = f"{started:%Y%m%d-%H%M%S}-{call_sid}"
    folder = root / name
    folder.mkdir(parents=True)
    header = {
        "format": "voicebot-recording",
        "started_at": started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "call": {"call_sid": call_sid, "from": from_number, "to": "+15550199"},
        "agent": {"name": "test-agent", "model_id": "scripted"},
    }
    raw = [header] + [
        {"t": round(0.02 * i, 3), "kind": "twilio_in", "message": {"event": "media", "media": {"payload": "//8="}}}
        for i in range(30)
    ]
    raw += [
        {"t": event["t"], "kind": "note", "note": event["kind"], "detail": event["detail"]} for event in events or []
    ]
    (folder / "events.jsonl").write_text("".join(json.dumps(line) + "\n" for line in raw))
    transcript: dict[str, Any] = {
        "call_sid": call_sid,
        "started_at": header["started_at"],
        "duration_s": duration_s,
        "ended": {"reason": "the caller said goodbye", "by": "agent"},
        "turns": turns,
        "barge_ins": [event["t"] for event in events or [] if event["kind"] == "barge_in"],
        "notes": [],
        "events": events or [],
        "recovered": False,
    }
    if outcome is not None:
        transcript["outcome"] = outcome
    (folder / "transcript.json").write_text(json.dumps(transcript))
    return name


def write_many(root: Path, count: int) -> str:
    """``count`` short calls, the rich one the oldest (last in the list); returns the rich one's name."""
    now = datetime.now(UTC).replace(microsecond=0)
    rich = write_recording(
        root,
        RICH_SID,
        now - timedelta(hours=count + 1),
        "+15550123",
        RICH_TURNS,
        RICH_EVENTS,
        {"code": "completed-by-bot", "label": "completed by the bot", "reason": "the caller said goodbye"},
    )
    for index in range(count - 1):
        turns = [{"role": "bot", "text": f"Hello caller {index}.", "start": 0.3, "end": 1.5, "sent_s": 1.2,
                  "heard_s": 1.2, "interrupted": False}]  # fmt: skip
        write_recording(root, f"CA{index:032d}", now - timedelta(hours=index + 1), f"+1555020{index:02d}", turns)
    return rich

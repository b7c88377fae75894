"""``transcript.json``: who said what, when, as read back from a recording's records.

- A **bot** turn is one model response (``bidi_response_start``; the first audio starts one if the model
  sends none). Its text is the assistant transcript; ``start``/``end`` are when the caller *heard* its
  first and last audio (Twilio's player modelled as in :mod:`telephony.recording.call_audio`); ``sent_s``
  is how much audio went out for it and ``heard_s`` how much the caller heard; ``interrupted`` says a
  ``clear`` cut it short, or that the model's connection was replaced before it finished (a ``cut`` note:
  then ``cut`` holds why, the seconds heard and the words heard as far as the text tells). ``latency_s``:
  from the end of the caller's speech it answers to its first audio heard (only for the first bot turn
  after a caller turn, and only when it started after the caller stopped).
- A **caller** turn is one user transcript from the model, placed on the caller's speech as the bridge
  heard it (``caller_speech`` records): ``start``/``end`` are where the words are in ``caller.wav``, and
  ``recognised_at`` is when the model reported them. Without such records (older recordings), ``start``
  and ``end`` are when the model reported the words, which trails the audio.
- A **tool** turn is one tool call: name, input, status, from the model's request to the tool's result.

Barge-ins, hang-ups and errors the bridge noted are listed with their times; ``events`` puts everything that
happened besides speech on the same clock as the turns (telephony.recording.timeline), and ``outcome`` says how
the call ended (telephony.call_outcome). ``dead_air`` lists every wait the bridge measured (the caller hearing
nothing while an answer was owed: telephony.recording.dead_air), each ``{"t", "s", "after", "ended_by"}`` with
``t`` when the wait ended, and ``max_s`` the longest (0.0 with none). A bot turn with a ``latency_s`` also has its
``stages``: the caller's end of speech, when the model reported the words, the first audio sent and the first
audio heard.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from telephony.call_outcome import from_records
from telephony.codec import FRAME_SECONDS, TWILIO_RATE
from telephony.recording import dead_air
from telephony.recording.call_audio import CallAudio
from telephony.recording.timeline import Timeline
from telephony.twilio.media_streams import media_frames

TRANSCRIPT_FILE = "transcript.json"
JOIN_SPEECH_S = 1.0
"""Speech spans this close together that the model reported as one utterance make one caller turn."""


@dataclass
class _BotTurn:
    tag: int
    created: float
    order: int
    text: list[str] = field(default_factory=list)
    sent_frames: int = 0
    first_sent: float | None = None
    """When its first audio went out to Twilio (a latency stage)."""
    cut: dict[str, Any] | None = None
    """Set when the model's connection was replaced before this answer was finished."""


@dataclass
class TranscriptBuilder:
    """Feed records in order with :meth:`add`; :meth:`build` returns the ``transcript.json`` object.

    It also collects both sides' audio (``audio``), since a bot turn's times are when it was heard.
    """

    audio: CallAudio = field(default_factory=CallAudio)
    """Both sides' audio (give it the call's folder for its temporary tracks; close it when done)."""
    bots: list[_BotTurn] = field(default_factory=list)
    others: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    timeline: Timeline = field(default_factory=Timeline)
    """Key presses, barge-ins, tool calls, swaps, errors…: the ``events`` of ``transcript.json``."""
    _outcome_notes: list[dict[str, Any]] = field(default_factory=list)
    _current: _BotTurn | None = None
    _transcript_starts: dict[str, float] = field(default_factory=dict)
    _tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    _last_t: float = 0.0
    _order: int = 0
    _speech: list[tuple[float, float]] = field(default_factory=list)
    """Caller speech spans as the bridge heard them, on the stream's clock (mapped onto the call's at the end)."""
    _waits: list[dict[str, Any]] = field(default_factory=list)
    """Dead air measured by the bridge (``dead_air`` notes), for the transcript's ``dead_air``."""

    def add(self, record: dict[str, Any]) -> None:
        at = float(record.get("t", 0.0))
        self._last_t = max(self._last_t, at)
        kind = record.get("kind")
        self.timeline.add(at, record)
        if kind == "agent" and isinstance(record.get("event"), dict):
            self._on_agent(at, record["event"])
        elif kind == "note":
            self._on_note(at, str(record.get("note", "")), str(record.get("detail", "")))
        elif kind == "twilio_out":
            frames = media_frames(record.get("message"))
            turn = self._current if frames else None
            if turn is not None:
                turn.sent_frames += frames
                turn.first_sent = at if turn.first_sent is None else turn.first_sent
            self.audio.add(record, turn.tag if turn is not None else None)
        elif kind == "twilio_in":
            self.audio.add(record)
        elif kind == "caller_speech":
            try:
                self._speech.append((float(record["start"]), float(record["end"])))
            except (KeyError, TypeError, ValueError):
                pass  # a malformed line: the caller turn keeps the model's timing

    def _bot_turn(self, at: float) -> _BotTurn:
        self._current = _BotTurn(tag=len(self.bots), created=at, order=self._next_order())
        self.bots.append(self._current)
        return self._current

    def _on_agent(self, at: float, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "bidi_response_start":
            self._bot_turn(at)
        elif kind == "bidi_audio_delta" and self._current is None:
            self._bot_turn(at)
        elif kind == "bidi_transcript_start":
            self._transcript_starts.setdefault(str(event.get("content_id")), at)
        elif kind == "bidi_transcript_block":
            self._on_transcript(at, event)
        elif kind == "bidi_tool_use_blocks":
            for use in event.get("tool_uses") or []:
                tool = {"role": "tool", "name": use.get("name"), "input": use.get("input"), "start": at, "end": None}
                tool["_order"] = self._next_order()
                self._tools[str(use.get("toolUseId"))] = tool
                self.others.append(tool)
        elif kind == "tool_result":
            result = event.get("tool_result") or {}
            finished = self._tools.get(str(result.get("toolUseId")))
            if finished is not None:
                finished["end"], finished["status"] = at, result.get("status")

    def _next_order(self) -> int:
        self._order += 1
        return self._order

    def _on_transcript(self, at: float, event: dict[str, Any]) -> None:
        text = str(event.get("transcript", "")).strip()
        if not text:
            return
        if event.get("role") == "assistant":
            (self._current or self._bot_turn(at)).text.append(text)
            return
        start = self._transcript_starts.get(str(event.get("content_id")), at)
        turn = {"role": "caller", "text": text, "start": round(start, 3), "end": round(at, 3), "recognised_at": at}
        self.others.append(turn | {"_order": self._next_order()})

    def _on_note(self, at: float, note: str, detail: str) -> None:
        if note in ("outcome", "error"):
            self._outcome_notes.append({"kind": "note", "note": note, "detail": detail})
        if note == "outcome":
            return
        if note == dead_air.NOTE and (wait := dead_air.parse_wait(detail)) is not None:
            self._waits.append({"t": round(at, 3), **wait})
        self.notes.append({"t": round(at, 3), "note": note, "detail": detail})
        if note == "error":
            self._bot_turn(at).text.append("(apology)")
        elif note == "hold_sound" and detail.startswith("started"):
            self._current = None  # the hold sound is no one's answer: its clear cuts no turn short
        elif note == "cut" and self._current is not None:
            self._current.cut = _cut_detail(detail)

    def build(self, header: dict[str, Any], end: dict[str, Any] | None) -> dict[str, Any]:
        turns = [self._bot_dict(turn) for turn in self.bots if turn.sent_frames or turn.text]
        self._place_on_speech([other for other in self.others if other["role"] == "caller"])
        for other in self.others:
            turns.append({key: round(value, 3) if isinstance(value, float) else value for key, value in other.items()})
        # By start time; a tie (same millisecond) keeps the order things happened in.
        turns.sort(key=lambda turn: (turn["start"] if turn["start"] is not None else turn["_created"], turn["_order"]))
        for turn in turns:
            turn.pop("_created", None)
            turn.pop("_order", None)
        add_latencies(turns)
        for turn in turns:
            turn.pop("_untimed", None)
            turn.pop("_first_sent", None)
        outcome = from_records([*self._outcome_notes, *([end] if end else [])], header.get("model") is not None)
        return {
            "call_sid": (header.get("call") or {}).get("call_sid"),
            "started_at": header.get("started_at"),
            "duration_s": round(float(end["t"]) if end else self._last_t, 3),
            "ended": {"reason": end.get("reason"), "by": end.get("ended_by")} if end else None,
            "outcome": outcome.to_json(),
            "recovered": False,
            "turns": turns,
            "events": self.timeline.events(),
            "barge_ins": [note["t"] for note in self.notes if note["note"] == "barge_in"],
            "notes": [note for note in self.notes if note["note"] != "barge_in"],
            "dead_air": dead_air.summary(self._waits),
        }

    def _place_on_speech(self, callers: list[dict[str, Any]]) -> None:
        """Move each caller turn onto the speech it transcribes: the latest unclaimed spans begun before it was
        recognised (joined when close together). Spans nobody transcribed (a cough) stay out."""
        spans = [(self.audio.caller_time(start), self.audio.caller_time(end)) for start, end in self._speech]
        claimed = [False] * len(spans)
        for turn in sorted(callers, key=lambda caller: caller["recognised_at"]):
            chosen = [i for i, (start, _) in enumerate(spans) if not claimed[i] and start <= turn["recognised_at"]]
            if not chosen:
                turn["_untimed"] = bool(spans)  # the bridge heard no speech for it: its end is no time to answer from
                continue
            first = last = chosen[-1]
            while first - 1 in chosen and spans[first][0] - spans[first - 1][1] <= JOIN_SPEECH_S:
                first -= 1
            for index in range(first, last + 1):
                claimed[index] = True
            turn["start"], turn["end"] = round(spans[first][0], 3), round(spans[last][1], 3)

    def _bot_dict(self, turn: _BotTurn) -> dict[str, Any]:
        heard = [played for played in self.audio.bot if played.tag == turn.tag and played.samples]
        heard_s = sum(played.samples for played in heard) / TWILIO_RATE
        sent_s = turn.sent_frames * FRAME_SECONDS
        bot: dict[str, Any] = {
            "role": "bot",
            "text": " ".join(turn.text),
            "start": round(heard[0].start, 3) if heard else None,
            "end": round(heard[-1].end, 3) if heard else None,
            "sent_s": round(sent_s, 3),
            "heard_s": round(heard_s, 3),
            "interrupted": heard_s < sent_s - 0.0201 or turn.cut is not None,
            "_first_sent": turn.first_sent,
            "_created": turn.created,
            "_order": turn.order,
        }
        if turn.cut is not None:
            bot["cut"] = turn.cut
        return bot


def add_latencies(turns: list[dict[str, Any]]) -> None:
    """``latency_s`` on each bot turn that answers a caller turn: end of the caller's speech to first audio heard.

    ``turns`` are in start order. Only the first bot turn heard after the caller stopped counts, and only if
    the caller did not speak again in between (what the replay report and the demo measure too).
    """
    answered: dict[str, Any] | None = None
    for turn in turns:
        if turn["role"] == "caller" and isinstance(turn.get("end"), float | int) and not turn.get("_untimed"):
            answered = turn
        elif turn["role"] == "bot" and isinstance(turn.get("start"), float | int) and answered is not None:
            if turn["start"] >= answered["end"]:
                turn["latency_s"] = round(turn["start"] - answered["end"], 3)
                turn["stages"] = _stages(answered, turn)
            answered = None


def _stages(caller: dict[str, Any], bot: dict[str, Any]) -> dict[str, float | None]:
    """Where an answer's latency went: end of speech → model reported it → first audio out → first heard."""
    recognised, sent = caller.get("recognised_at"), bot.get("_first_sent")
    return {
        "speech_end": round(float(caller["end"]), 3),
        "recognised": round(float(recognised), 3) if isinstance(recognised, float | int) else None,
        "first_audio_out": round(float(sent), 3) if isinstance(sent, float | int) else None,
        "first_audio_heard": round(float(bot["start"]), 3),
    }


def _cut_detail(detail: str) -> dict[str, Any]:
    """The ``cut`` note's detail (JSON from telephony.bridge.continuity); a bad one is kept as text."""
    try:
        parsed = json.loads(detail)
    except ValueError:
        return {"detail": detail}
    if not isinstance(parsed, dict):
        return {"detail": detail}
    return {key: parsed[key] for key in ("reason", "heard_s", "heard_text") if key in parsed}


def write_transcript(folder: Path, transcript: dict[str, Any]) -> None:
    """Write ``transcript.json`` whole or not at all: its presence says the recording is finished."""
    partial = folder / f".{TRANSCRIPT_FILE}.partial"
    partial.write_text(json.dumps(transcript, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(partial, folder / TRANSCRIPT_FILE)

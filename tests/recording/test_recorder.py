"""The call recorder: one folder per call (events, WAVs, transcript), never in the way of the call."""

from __future__ import annotations

import asyncio
import base64
import errno
import json
import logging
import math
import re
import wave
from pathlib import Path

import numpy as np
import pytest

from telephony.call_info import CallInfo
from telephony.cli import main
from telephony.codec import pcm16_to_ulaw
from telephony.config import load_settings
from telephony.recording.call_audio import CallAudio
from telephony.recording.format import Recording
from telephony.recording.recorder import CallRecorder, _Writer, folder_name, record_dir_problem, recorder_factory

from ..audio import dominant_hz, pcm
from ..conftest import harness
from ..fakes.model import BargeIn, Hold, Say, UserSaid, WaitForAudio

CALL = CallInfo(call_sid="CA" + "1" * 32, stream_sid="MZ" + "2" * 32)


def tone_ulaw(seconds: float, hz: float) -> bytes:
    samples = 0.25 * 32767 * np.sin(2 * math.pi * hz * np.arange(round(seconds * 8000)) / 8000)
    return pcm16_to_ulaw(samples.astype("<i2").tobytes())


def read_wav(path: Path) -> tuple[wave._wave_params, np.ndarray]:
    with wave.open(str(path), "rb") as source:
        return source.getparams(), np.frombuffer(source.readframes(source.getnframes()), dtype="<i2")


def voiced_seconds(samples: np.ndarray) -> float:
    frames = samples[: len(samples) // 160 * 160].reshape(-1, 160).astype(np.float64)
    return float(np.sum(np.sqrt(np.mean(frames**2, axis=1)) > 300)) * 0.02


async def test_a_call_is_recorded_as_events_wavs_and_transcript(tmp_path: Path) -> None:
    script = [
        Say("Good morning", 1.0, tone_hz=1000, stop=False),
        WaitForAudio(0.5),
        BargeIn(),
        UserSaid("Wait a second"),
        Say("Yes?", 0.4, tone_hz=500),
        Hold(),
    ]
    async with harness(script, observers=[recorder_factory(tmp_path)]) as h:
        async with h.caller() as call:
            await call.connect()
            for _ in range(250):  # the caller talks over the greeting, so it waits for it to start playing
                if call.heard:
                    break
                await call.silence(0.02)
            await call.silence(0.3)
            await call.stream(tone_ulaw(0.5, 600))
            await call.silence(0.8)
            await call.stop()
            await call.wait_closed(3)
    (folder,) = tmp_path.iterdir()
    assert re.fullmatch(r"\d{8}-\d{6}-CA1{32}", folder.name)
    assert {path.name for path in folder.iterdir()} == {
        "events.jsonl",
        "caller.wav",
        "bot.wav",
        "call.wav",
        "transcript.json",
    }

    recording = Recording.load(folder)
    assert recording.call["call_sid"] == call.call_sid and recording.call["from"] == "+15550001111"
    assert recording.model_rates == (16000, 16000)
    times = [record["t"] for record in recording.records]
    assert times == sorted(times)
    # What the bridge sent, exactly as the caller received it; what Twilio sent, exactly as it was sent.
    assert recording.twilio_messages("twilio_out") == [item.message for item in call.received]
    inbound = recording.twilio_messages("twilio_in")
    assert [message["event"] for message in inbound[:2]] == ["connected", "start"]
    assert sum(message["event"] == "media" for message in inbound) == len(call.said)
    deltas = [record for record in recording.of_kind("agent") if record["event"]["type"] == "bidi_audio_delta"]
    assert deltas and all(set(record["input"]) == {"audio_s", "texts", "tool_results"} for record in deltas)
    notes = [record["note"] for record in recording.of_kind("note")]
    assert [note for note in notes if note not in ("dead_air", "hold_sound")] == ["barge_in", "outcome"]
    assert "dead_air" in notes, "the wait for the answer to the caller is measured"
    barge_in_note = next(recording.of_kind("note"))["detail"]
    assert re.fullmatch(r"about \d\.\d\d s of bot audio unheard; [0-2] of the answer's 2 words heard", barge_in_note)
    assert recording.end is not None and recording.end["ended_by"] == "caller"

    caller_params, caller_wav = read_wav(folder / "caller.wav")
    bot_params, bot_wav = read_wav(folder / "bot.wav")
    stereo_params, stereo = read_wav(folder / "call.wav")
    assert (caller_params.framerate, caller_params.nchannels, caller_params.sampwidth) == (8000, 1, 2)
    assert (bot_params.framerate, bot_params.nchannels, stereo_params.nchannels) == (8000, 1, 2)
    assert caller_params.nframes == bot_params.nframes == stereo_params.nframes
    assert np.array_equal(stereo[0::2], caller_wav) and np.array_equal(stereo[1::2], bot_wav)
    assert abs(voiced_seconds(caller_wav) - 0.5) <= 0.04
    assert abs(dominant_hz(pcm(caller_wav.tobytes()), 8000) - 600) < 10
    heard = sum(1 for frame in call.heard if np.abs(pcm(frame.payload)).max() > 1000) * 0.02
    assert abs(voiced_seconds(bot_wav) - heard) <= 0.06  # what the caller heard, not all that was sent

    transcript = json.loads((folder / "transcript.json").read_text())
    waits = [json.loads(record["detail"]) for record in recording.of_kind("note") if record["note"] == "dead_air"]
    assert [wait["s"] for wait in transcript["dead_air"]["waits"]] == [wait["s"] for wait in waits]
    assert transcript["dead_air"]["max_s"] == max(wait["s"] for wait in waits)
    turns = [(turn["role"], turn.get("text"), turn.get("interrupted")) for turn in transcript["turns"]]
    assert turns == [("bot", "Good morning", True), ("caller", "Wait a second", None), ("bot", "Yes?", False)]
    first, _, last = transcript["turns"]
    barge_in = transcript["barge_ins"][0]
    assert first["start"] < first["end"] <= barge_in + 0.02 and last["start"] >= barge_in
    assert transcript["ended"]["by"] == "caller" and len(transcript["barge_ins"]) == 1
    assert transcript["outcome"]["code"] == "completed-by-caller" and transcript["recovered"] is False
    assert [event["kind"] for event in transcript["events"]] == ["barge_in"]
    assert transcript["events"][0]["t"] == barge_in
    assert {note["note"] for note in transcript["notes"]} <= {"dead_air", "hold_sound"}
    # The caller's turn spans their speech where it is in caller.wav, not the moment the model reported it.
    caller_turn = transcript["turns"][1]
    voiced = np.flatnonzero(np.abs(caller_wav) > 1000) / 8000
    assert abs(caller_turn["start"] - voiced[0]) <= 0.03 and abs(caller_turn["end"] - voiced[-1]) <= 0.03
    assert caller_turn["recognised_at"] < caller_turn["end"]  # this model "recognised" it mid-sentence
    assert "latency_s" not in last  # it started while the caller was still talking: no response time
    assert recording.header["agent"] == {"name": "Strands Agents", "model": "ScriptedModel", "model_id": "scripted"}


def out(at: float, event: str, payload: bytes = b"") -> dict:
    message: dict = {"event": event, "streamSid": "MZ"}
    if event == "media":
        message["media"] = {"payload": base64.b64encode(payload).decode()}
    return {"t": at, "kind": "twilio_out", "message": message}


def test_bot_audio_plays_back_to_back_and_clear_cuts_it() -> None:
    """Twilio's player: a burst plays frame after frame; clear stops the frame playing and drops the rest."""
    audio = CallAudio()
    loud = b"\x00" * 160  # μ-law 0x00 is full scale
    for _ in range(5):
        audio.add(out(1.0, "media", loud))
    audio.add(out(1.03, "clear"))
    audio.add(out(1.05, "media", loud))
    # What was heard without a break: 1.5 frames from 1.0 s (the second cut by clear), then the next frame.
    assert [(round(played.start, 3), played.samples) for played in audio.bot] == [(1.0, 240), (1.05, 160)]
    track = audio.bot_track()
    voiced = np.flatnonzero(track)
    assert len(track) == round(1.07 * 8000)
    assert (voiced[0], voiced[-1]) == (8000, 8559)
    assert 8239 in voiced and 8240 not in voiced and 8400 in voiced  # the cut frame, silence, the next one


def test_caller_audio_is_placed_by_twilio_timestamps_not_arrival() -> None:
    audio = CallAudio()
    loud = b"\x00" * 160
    for arrived, stamp in ((0.05, 120), (0.09, 140), (0.09, 160), (0.5, 400)):
        media = {"track": "inbound", "timestamp": str(stamp), "payload": base64.b64encode(loud).decode()}
        audio.add({"t": arrived, "kind": "twilio_in", "message": {"event": "media", "media": media}})
    voiced = np.flatnonzero(audio.caller_track())
    runs = np.split(voiced, np.flatnonzero(np.diff(voiced) > 1) + 1)
    # offset from the least-delayed frame (0.05 - 0.120): 120 -> 0.05 s, 400 -> 0.33 s; jitter is gone.
    assert [(run[0], len(run)) for run in runs] == [(400, 480), (2640, 160)]


def test_a_forged_timestamp_is_left_out_and_a_missing_one_placed_by_arrival(tmp_path: Path) -> None:
    audio = CallAudio(tmp_path)
    loud = base64.b64encode(b"\x00" * 160).decode()
    for arrived, stamp in ((0.05, "0"), (0.07, "20"), (0.09, str(10**12)), (0.6, None), (0.01, None)):
        media = {"track": "inbound", "payload": loud} | ({"timestamp": stamp} if stamp else {})
        audio.add({"t": arrived, "kind": "twilio_in", "message": {"event": "media", "media": media}})
    voiced = np.flatnonzero(audio.caller_track())
    runs = np.split(voiced, np.flatnonzero(np.diff(voiced) > 1) + 1)
    # offset 0.05 s: stamps 0 and 20 ms land at 0.05 and 0.07 s; an unstamped frame at its arrival, 0.6 s
    # (one from before the stream's clock began, 0.01 s, has nowhere to go).
    assert [(run[0], len(run)) for run in runs] == [(400, 320), (4800, 160)]
    assert audio.length == 4960, "the forged timestamp (31 years in) made nothing longer"
    audio.write(tmp_path)
    audio.close()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bot.wav", "call.wav", "caller.wav"]


async def test_a_write_error_stops_recording_and_the_call_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    written = {"lines": 0}
    original = _Writer._write

    def full_disk(self: _Writer, record: dict) -> None:
        written["lines"] += 1
        if written["lines"] > 20:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.folder / "events.jsonl"))
        original(self, record)

    monkeypatch.setattr(_Writer, "_write", full_disk)
    caplog.set_level(logging.WARNING, logger="telephony.recording.recorder")
    async with harness([Say("still talking", 1.0, tone_hz=1000), Hold()], observers=[recorder_factory(tmp_path)]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(1.4)
            await call.stop()
    assert len(call.heard) >= 45  # the whole utterance reached the caller
    stopped = [record.getMessage() for record in caplog.records if "recording stopped" in record.getMessage()]
    assert len(stopped) == 1
    assert stopped[0].startswith(f"call={call.call_sid} | recording stopped: cannot write ")
    assert "No space left on device" in stopped[0]
    (folder,) = tmp_path.iterdir()
    assert not (folder / "call.wav").exists()


async def test_a_queue_the_disk_cannot_drain_stops_recording_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="telephony.recording.recorder")
    recorder = CallRecorder(CALL, tmp_path / "call", max_queued=3)  # its writer is not running yet: a stuck disk
    for _ in range(3):
        recorder.twilio_received('{"event":"media"}')
    assert recorder.stopped_reason is None
    recorder.twilio_received('{"event":"media"}')  # no room: recording stops on this event, nothing waits for room
    assert recorder.stopped_reason is not None
    for _ in range(1000):
        recorder.twilio_received('{"event":"media"}')  # (a hook that waited for room would never return here)
    assert recorder.stopped_reason == "3 events waiting: the disk cannot keep up"
    assert sum("recording stopped" in record.getMessage() for record in caplog.records) == 1
    recorder._thread.start()
    await asyncio.wait_for(recorder.call_ended("done", "caller"), 5)
    assert not recorder._thread.is_alive()


def test_folder_names_are_safe_and_dated(tmp_path: Path) -> None:
    hostile = CallInfo(call_sid="../../etc/passwd\x00", stream_sid="MZ")
    folder = folder_name(tmp_path, hostile)
    assert folder.parent == tmp_path and re.fullmatch(r"\d{8}-\d{6}-etc_passwd", folder.name)
    assert folder_name(tmp_path, CallInfo(call_sid="", stream_sid="MZ")).name.endswith("-unknown-call")


def test_record_dir_comes_from_the_environment_or_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert load_settings({"VOICEBOT_RECORD_DIR": str(tmp_path)}, dotenv=None).record_dir == str(tmp_path)
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("")
    assert "cannot record calls" in (record_dir_problem(a_file / "sub") or "")
    assert record_dir_problem(tmp_path / "new" / "calls") is None
    assert main(["serve", "--record", str(a_file)]) == 2
    assert "VOICEBOT_RECORD_DIR" in capsys.readouterr().err

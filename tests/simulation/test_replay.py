"""Recorded calls replayed through the real bridge: the agent side by the replay model, the caller side by
the simulated caller. The bridge must send Twilio exactly what it sent when the call was recorded.

The recordings come from ``tests/recorded_calls/make_recordings.py``; see docs/recording.md (Turn a problem
call into a regression test) for turning a problem call into one of these tests.
"""

from __future__ import annotations

import base64
import io
import math
import wave
from pathlib import Path

import numpy as np
import pytest

from agent.replay_model import ReplayModel
from telephony.cli import main
from telephony.recording.format import EVENTS_FILE, Recording
from telephony.simulation.caller.simulated_caller import AnswerError
from telephony.simulation.replay import ReplayOptions, compare_outbound, play_against_replay, replay
from telephony.simulation.replay.comparison import outbound_shape
from telephony.twilio.security import PARAMETER_NAME

from ..audio import frame_hz
from ..conftest import TEST_SETTINGS, harness
from ..fakes.model import Hold, Say, ScriptedModel, UserSaid, WaitForAudio
from ..twilio.test_twilio_requests import SECURE

RECORDINGS = Path(__file__).parents[1] / "recorded_calls"
SCENARIOS = sorted(path.parent.name for path in RECORDINGS.glob(f"*/{EVENTS_FILE}"))
SPEED = 4.0


async def replay_through_bridge(recording: Recording, speed: float = SPEED):
    """Run the recording's two sides against the real app; returns the simulated caller."""
    call_info = recording.call
    # Frame-by-frame sends, as offline_settings does: the replay model's events then fall exactly where recorded.
    model = lambda: ReplayModel(recording.records, recording.model_rates)  # noqa: E731
    async with harness(model, send_chunk_ms=20, send_chunk_speaking_ms=20, send_chunk_silence_ms=20) as h:
        async with h.caller(
            call_sid=call_info["call_sid"],
            stream_sid=call_info["stream_sid"],
            parameters=call_info["parameters"],
            speed=speed,
        ) as call:
            await call.connect()
            await play_against_replay(call, recording, lambda: h.models[-1] if h.models else None)
            await call.wait_closed(5)
    return call


def test_every_scenario_the_issue_asks_for_is_recorded() -> None:
    assert set(SCENARIOS) >= {
        "two_turns",
        "barge_in",
        "goodbye",
        "hangs_up_mid_answer",
        "keypress_during_turn",
        "model_24khz",
    }


@pytest.mark.parametrize("name", SCENARIOS)
async def test_recorded_call_replays_identically(name: str) -> None:
    recording = Recording.load(RECORDINGS / name)
    call = await replay_through_bridge(recording)
    comparison = compare_outbound(recording.twilio_messages("twilio_out"), [item.message for item in call.received])
    assert comparison.matches, comparison.describe()
    end = recording.end
    assert end is not None
    assert call.hung_up == (end["ended_by"] == "caller")
    if not call.hung_up:
        assert call.close_code == 1000


def outbound_events(recording: Recording) -> list[str]:
    return [message["event"] for message in recording.twilio_messages("twilio_out")]


def test_the_recordings_show_what_their_names_say() -> None:
    """Guards the fixtures themselves: a regenerated recording must still exercise its scenario."""
    load = {name: Recording.load(RECORDINGS / name) for name in SCENARIOS}
    assert outbound_events(load["barge_in"]).count("clear") == 1
    assert "clear" not in outbound_events(load["two_turns"])
    marks = [m["mark"]["name"] for m in load["goodbye"].twilio_messages("twilio_out") if m["event"] == "mark"]
    assert any(name.startswith("goodbye-") for name in marks)
    assert load["goodbye"].end["ended_by"] == "agent"
    assert load["hangs_up_mid_answer"].end["ended_by"] == "caller"
    inbound = [message["event"] for message in load["keypress_during_turn"].twilio_messages("twilio_in")]
    assert "dtmf" in inbound
    assert load["model_24khz"].model_rates == (16000, 24000)
    deltas = [r["event"] for r in load["model_24khz"].of_kind("agent") if r["event"]["type"] == "bidi_audio_delta"]
    assert deltas and all(delta["sample_rate"] == 24000 for delta in deltas)


async def test_caller_hanging_up_mid_answer_hears_only_part_of_it() -> None:
    recording = Recording.load(RECORDINGS / "hangs_up_mid_answer")
    call = await replay_through_bridge(recording)
    assert call.hung_up
    assert 0 < len(call.heard) < len(call.media_payloads())


async def test_a_barge_in_replays_at_the_same_point_of_the_caller_stream() -> None:
    recording = Recording.load(RECORDINGS / "barge_in")
    call = await replay_through_bridge(recording, speed=1.0)
    clear_at = call.events("clear")[0].at
    recorded_clear = next(r["t"] for r in recording.of_kind("twilio_out") if r["message"]["event"] == "clear")
    recorded_start = next(r["t"] for r in recording.of_kind("twilio_in") if r["message"]["event"] == "media")
    assert abs(clear_at - (recorded_clear - recorded_start)) < 0.1
    after = [item.message for item in call.received if item.at > clear_at and item.message["event"] == "media"]
    tones = {round(frame_hz(base64.b64decode(message["media"]["payload"])), -2) for message in after}
    assert after and tones <= {1000.0, 0.0}, f"stale audio after the clear: {tones}"


# --- voicebot replay --------------------------------------------------------------------------------


def test_voicebot_replay_offline_checks_the_bridge_against_the_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(RECORDINGS / "goodbye"), "--offline", "--speed", "4", "--record", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "bridge output matches the recording (25 frames, 3 marks, 0 clears)" in printed
    assert "hung up by: bot (closed the stream, code 1000)" in printed
    assert "recorded call: hung up by agent" in printed
    (rerecorded,) = tmp_path.iterdir()  # the bridge's side of the replay: a fixture of today's behaviour
    assert main(["replay", str(rerecorded), "--offline", "--speed", "4"]) == 0
    assert "bridge output matches the recording (25 frames, 3 marks, 0 clears)" in capsys.readouterr().out
    assert main(["replay", str(rerecorded), "--record", str(tmp_path)]) == 2


def test_a_changed_bridge_is_reported_at_the_first_differing_message() -> None:
    recording = Recording.load(RECORDINGS / "barge_in")
    sent = recording.twilio_messages("twilio_out")
    clear = next(index for index, message in enumerate(sent) if message["event"] == "clear")
    late_clear = sent[:clear] + sent[clear + 1 : clear + 3] + [sent[clear]] + sent[clear + 3 :]
    comparison = compare_outbound(sent, late_clear)
    step = len(outbound_shape(sent[:clear]))  # steps count frames: a media message may carry several
    assert not comparison.matches and comparison.first_difference == step
    assert comparison.describe().startswith(f"bridge output DIFFERS from the recording at step {step + 1}: ")
    renamed = [
        dict(m, mark={"name": "end-999"}) if m["event"] == "mark" and m["mark"]["name"].startswith("end-") else m
        for m in sent
    ]
    assert compare_outbound(sent, renamed).matches  # mark numbers are the bridge's business, labels are not


def write_wav(path: Path, seconds: float, hz: float, rate: int = 16000) -> Path:
    samples = 0.3 * 32767 * np.sin(2 * math.pi * hz * np.arange(round(seconds * rate)) / rate)
    quiet = np.zeros(rate // 5)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(np.concatenate([quiet, samples]).astype("<i2").tobytes())
    return path


async def test_a_wav_caller_against_a_server_that_checks_signatures(tmp_path: Path) -> None:
    """POST /twiml signed over PUBLIC_URL, follow its <Stream> (token included), sign the upgrade, record."""
    wav = write_wav(tmp_path / "hello.wav", 0.6, 500)
    script = [WaitForAudio(0.9), UserSaid("Hello"), Say("Hello, caller", 0.5, tone_hz=1000), Hold()]
    async with harness(script, settings=SECURE) as h:
        # Twice real time, not four times: at 4x a 125 ms stall of a loaded machine split the bot's answer in two.
        options = ReplayOptions(wav, url=h.ws_url, server=f"http://{h.base}", speed=2, out=tmp_path / "out")
        result = await replay(options, SECURE)
        model, call_info = h.model, h.calls[0]
    report = result.report
    assert model.audio_seconds > 0.9 and call_info.from_number == "+15005550006"
    assert len(report.said.turns) == 1 and len(report.heard.turns) == 1
    (latency,) = report.latencies
    assert 0 < latency < 1.0  # call time: from the end of the caller's tone to the bot's first frame heard
    assert report.hung_up_by == "caller (sent stop)"  # it hung up once the bot had been quiet for 3 s
    folder = result.recorded_in
    assert folder is not None and (folder / "call.wav").is_file()
    mine = Recording.load(folder)
    assert mine.twilio_messages("twilio_out") == [item.message for item in report.caller.received]
    assert mine.header["model"] is None  # a caller-side recording does not know the model
    start = next(message for message in mine.twilio_messages("twilio_in") if message["event"] == "start")
    assert start["start"]["customParameters"][PARAMETER_NAME] == "(redacted)"  # the call token was real
    assert PARAMETER_NAME not in mine.call["parameters"]


async def test_an_unsigned_replay_is_refused_with_a_hint(tmp_path: Path) -> None:
    wav = write_wav(tmp_path / "hello.wav", 0.2, 500)
    async with harness([Hold()], settings=SECURE) as h:
        options = ReplayOptions(wav, url=h.ws_url, server=f"http://{h.base}")
        with pytest.raises(AnswerError, match="HTTP 403: set TWILIO_AUTH_TOKEN and PUBLIC_URL"):
            await replay(options, TEST_SETTINGS)
        assert h.models == []


async def test_a_recording_replayed_against_a_live_bot_reports_turns_and_latencies() -> None:
    """The caller side of a recording, against a server with a (scripted) model rather than the replay."""
    script = [
        WaitForAudio(0.5),
        Say("Hi", 0.4, tone_hz=1000),
        WaitForAudio(1.2),
        Say("Noon", 0.3, tone_hz=800),
        Hold(),
    ]
    async with harness(lambda: ScriptedModel(script, output_rate=8000)) as h:
        options = ReplayOptions(RECORDINGS / "two_turns", url=h.ws_url, speed=4)
        result = await replay(options, TEST_SETTINGS, progress=io.StringIO())
    report = result.report
    assert len(report.said.turns) == 2 and len(report.heard.turns) == 2
    assert len(report.latencies) == 2 and all(0 < value < 1.0 for value in report.latencies)
    assert report.hung_up_by == "caller (sent stop)"
    summary = "\n".join(report.summary())
    assert "turns: caller 2, bot 2" in summary and "barge-ins: 0" in summary

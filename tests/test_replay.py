"""Recorded calls replayed through the real bridge: the agent side by the replay model, the caller side by
the simulated caller. The bridge must send Twilio exactly what it sent when the call was recorded.

The recordings come from ``tests/recorded_calls/make_recordings.py``; see the README for turning a problem
call into one of these tests.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from agent.replay_model import ReplayModel
from telephony.caller_script import CallerScript, Linger, play
from telephony.recording import EVENTS_FILE, Recording
from telephony.replay import compare_outbound, wait_for

from .audio import frame_hz
from .conftest import harness

RECORDINGS = Path(__file__).parent / "recorded_calls"
SCENARIOS = sorted(path.parent.name for path in RECORDINGS.glob(f"*/{EVENTS_FILE}"))
SPEED = 4.0


async def replay_through_bridge(recording: Recording, speed: float = SPEED):
    """Run the recording's two sides against the real app; returns the simulated caller."""
    script = CallerScript.from_recording(recording)
    call_info = recording.call
    async with harness(lambda: ReplayModel(recording)) as h:
        async with h.caller(
            call_sid=call_info["call_sid"],
            stream_sid=call_info["stream_sid"],
            parameters=call_info["parameters"],
            speed=speed,
        ) as call:
            await call.connect()
            await wait_for(lambda: bool(h.models) and h.model.started)
            await play(call, script.without_first_frames(recording.frames_before_model), Linger(quiet_s=None, max_s=10))
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

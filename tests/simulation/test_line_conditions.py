"""A bad line between the simulated caller and the bridge: noise at the level asked, packets lost at the rate
asked, late packets still in order, quiet and clipping callers, the same line from the same seed; and the
``line:`` field that asks for it."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent.offline.synthesizer import VoiceError
from telephony.codec import pcm16_to_ulaw, ulaw_level_dbfs, ulaw_to_pcm16
from telephony.simulation.caller.line_conditions import LOUDNESS_DB, LineConditions, Noise
from telephony.simulation.caller.simulated_caller import ULAW_SILENCE, SimulatedCaller
from telephony.simulation.caller.voice import Voice
from telephony.simulation.scenarios.line_field import line_from_option
from telephony.simulation.scenarios.scenario import ScenarioError
from telephony.simulation.scenarios.scenario_file import load_scenario

TONE = pcm16_to_ulaw((np.sin(np.arange(160) * 2 * np.pi * 440 / 8000) * 8000).astype("<i2").tobytes())
"""A 20 ms frame of a 440 Hz tone at about -15 dBFS, peaks at -12: as loud as the caller's voice at its loudest."""


def power_dbfs(frames: list[bytes]) -> float:
    return 10 * float(np.log10(np.mean([10 ** (ulaw_level_dbfs(frame) / 10) for frame in frames])))


@pytest.mark.parametrize("kind", ["white", "babble", "hum"])
@pytest.mark.parametrize("level", [-50.0, -30.0])
def test_noise_arrives_at_the_level_asked(kind: str, level: float) -> None:
    line = LineConditions(noise=Noise(kind, level)).line()
    assert line is not None
    frames = [line.frame(ULAW_SILENCE) for _ in range(400)]  # 8 s: the whole loop once
    assert power_dbfs([frame for frame in frames if frame is not None]) == pytest.approx(level, abs=1.0)


def test_babble_comes_and_goes_where_white_noise_is_steady() -> None:
    """What a voice detector meets in a waiting room: the level swings with the talkers' syllables."""

    def spread(kind: str) -> float:
        line = LineConditions(noise=Noise(kind, -40.0)).line()
        assert line is not None
        levels = [ulaw_level_dbfs(line.frame(ULAW_SILENCE) or b"") for _ in range(400)]
        return float(np.percentile(levels, 90) - np.percentile(levels, 10))

    assert spread("babble") > 8.0 > 3.0 > spread("white")


def test_the_same_seed_gives_the_same_line_and_another_seed_another() -> None:
    def heard(seed: int, run: int = 1) -> list[bytes | None]:
        line = LineConditions(noise=Noise("babble", -35.0), packet_loss=0.1, seed=seed).line(run)
        assert line is not None
        return [line.frame(TONE) for _ in range(300)]

    assert heard(7) == heard(7)
    assert heard(7) != heard(8)
    assert heard(7, run=1) != heard(7, run=2)  # runs: 5 is five different bad lines, the same five each time


def test_packets_are_lost_at_the_rate_asked_and_jitter_does_not_change_which() -> None:
    def lost(conditions: LineConditions) -> list[bool]:
        line = conditions.line()
        assert line is not None
        return [line.frame(TONE) is None for _ in range(5000)]

    plain = lost(LineConditions(packet_loss=0.05, seed=3))
    assert 0.04 < sum(plain) / len(plain) < 0.06
    assert lost(LineConditions(packet_loss=0.05, jitter_ms=80, seed=3)) == plain


def test_late_packets_arrive_in_order_and_at_most_the_jitter_late() -> None:
    line = LineConditions(jitter_ms=60, seed=2).line()
    assert line is not None
    due = [index * 0.02 for index in range(2000)]
    released = [line.release_at(at, now=100.0 + at) for at in due]  # each frame handed to the line on time
    assert released == sorted(released)
    late = [arrived - (100.0 + at) for arrived, at in zip(released, due, strict=True)]
    assert min(late) >= 0 and max(late) <= 0.060 + 1e-9
    assert np.mean(late) > 0.02  # late on average, not just now and then


def test_a_quiet_caller_is_20_db_down_and_a_clipping_one_is_cut_flat() -> None:
    quiet = LineConditions(loudness_db=LOUDNESS_DB["quiet"]).line()
    loud = LineConditions(loudness_db=LOUDNESS_DB["clipping"]).line()
    assert quiet is not None and loud is not None
    assert ulaw_level_dbfs(quiet.frame(TONE) or b"") == pytest.approx(ulaw_level_dbfs(TONE) - 20, abs=0.5)
    clipped = np.frombuffer(ulaw_to_pcm16(loud.frame(TONE) or b""), dtype="<i2")
    assert np.mean(np.abs(clipped) >= 32000) > 0.5  # most samples pinned at full scale: a square wave


def test_a_clean_line_is_no_line() -> None:
    assert LineConditions().line() is None and LineConditions(voice="en+m3").line() is None
    assert LineConditions().describe() == "a clean line"


class _Socket:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def send(self, data: str) -> None:
        self.sent.append(json.loads(data))


def test_the_caller_sends_through_the_line_and_keeps_what_it_really_said() -> None:
    """Lost frames never reach the bridge (the next timestamp shows the gap); ``said`` keeps the clean truth."""

    async def call() -> tuple[SimulatedCaller, _Socket]:
        line = LineConditions(noise=Noise("white", -40.0), packet_loss=0.2, seed=5).line()
        caller = SimulatedCaller("ws://unused", line=line)
        socket = _Socket()
        caller._ws = socket
        for _ in range(100):
            await caller.media(TONE)
        return caller, socket

    caller, socket = asyncio.run(call())
    stamps = [int(message["media"]["timestamp"]) for message in socket.sent]
    assert 65 <= len(stamps) <= 95 and stamps == sorted(stamps)
    assert any(later - earlier == 40 for earlier, later in itertools.pairwise(stamps))  # a lost frame
    assert [message["media"]["chunk"] for message in socket.sent] == [str(n) for n in range(1, len(stamps) + 1)]
    assert len(caller.said) == 100 and all(frame.payload == TONE for frame in caller.said)
    assert [frame.timestamp for frame in caller.said] == [120 + 20 * n for n in range(100)]


def test_another_caller_voice_sounds_different_and_a_wrong_name_fails_first() -> None:
    usual, other = asyncio.run(Voice().say("Hello there")), asyncio.run(Voice("en+m3").say("Hello there"))
    assert usual != other and len(other) > 4000
    with pytest.raises(VoiceError, match="no voice 'xx-nowhere'"):
        Voice("xx-nowhere")


# --- the line: field and --line ---------------------------------------------------------------------------


def test_a_scenario_reads_its_line(tmp_path: Path) -> None:
    path = tmp_path / "noisy.yaml"
    path.write_text(
        "caller: [{say: hi}]\n"
        "line:\n"
        "  noise: {kind: hum, level_dbfs: -42}\n"
        "  packet_loss: 0.03\n  jitter_ms: 50\n  loudness: quiet\n  voice: en+m3\n  seed: 4\n"
        "expect: {barge_in: {max_false_clears: 1}, keys: '12#'}\n",
        encoding="utf-8",
    )
    scenario = load_scenario(path)
    assert scenario.line == LineConditions(Noise("hum", -42.0), 0.03, 50.0, -20.0, "en+m3", 4)
    assert scenario.expect.barge_in.max_false_clears is not None and scenario.expect.barge_in.max_false_clears[0] == 1
    assert scenario.expect.keys is not None and scenario.expect.keys[0] == "12#"
    assert scenario.line.describe() == "hum noise at -42 dBFS, 3% packet loss, 50 ms jitter, quiet caller, voice en+m3"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("  noise: {kind: traffic, level_dbfs: -40}", "4: line.noise.kind: expected one of white, babble, hum"),
        ("  noise: {kind: white}", "line.noise.level_dbfs: is required"),
        ("  noise: {kind: white, level_dbfs: 3}", "4: line.noise.level_dbfs: is at most 0 (full scale), got 3"),
        ("  packet_loss: 5", "4: line.packet_loss: is a share below 1 (0.05: 5%), got 5"),
        ("  loudness: shouting", "4: line.loudness: expected normal, quiet, clipping or a gain in dB"),
        ("  jitter: 40", "4: line.jitter: unknown field; expected one of noise, packet_loss, jitter_ms"),
    ],
)
def test_line_mistakes_name_the_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"caller: [{{say: hi}}]\n\nline:\n{line}\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_scenario(path)


def test_line_for_a_whole_run_goes_over_each_scenarios_own(tmp_path: Path) -> None:
    own = LineConditions(noise=Noise("white", -50.0), packet_loss=0.01, seed=2)
    run = line_from_option("{noise: {kind: babble, level_dbfs: -35}, jitter_ms: 30}")
    assert run.over(own) == LineConditions(Noise("babble", -35.0), 0.01, 30.0, None, None, 2)
    saved = tmp_path / "cafe.yaml"
    saved.write_text("noise: {kind: babble, level_dbfs: -30}\n", encoding="utf-8")
    assert line_from_option(str(saved)).noise == Noise("babble", -30.0)
    with pytest.raises(ScenarioError, match=r"^--line: line\.packet_loss: is a share below 1"):
        line_from_option("{packet_loss: 2}")

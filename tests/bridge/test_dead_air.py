"""No dead air: a quiet model is rescued, a slow tool is covered, a quiet caller is checked on, and a caller's own
silence is never held against the agent. Through the real bridge, a fake Twilio caller and a model that answers
(tests/fakes/responder.py), mostly with the default settings and at the pace of a phone line."""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import pytest
from strands import tool

from telephony.bridge.ending import load_apology
from telephony.bridge.hold_sound import load_hold_sound
from tests.fakes.audio import frame_hz

from ..conftest import harness
from ..fakes.responder import PITCH, PITCH_TOOL_RESULT, Responder
from ..fakes.rest import FakeCallControl
from ..fakes.twilio import FakeTwilioCall

SPEECH = b"\x10" * 160 * 40
"""0.8 s of a loud caller (the fake model's detector and the bridge's both hear speech)."""


@tool
async def slow_lookup() -> str:
    """Looks something up slowly."""
    await asyncio.sleep(6.0)
    return "found it"


def heard(call: FakeTwilioCall) -> list[tuple[float, float]]:
    """(when, pitch) of every frame the caller's ear received; pitch 0 for a quiet frame."""
    return [(frame.at, frame_hz(frame.payload)) for frame in call.heard]


def first(call: FakeTwilioCall, hz: float, after: float = 0.0) -> float | None:
    return next((at for at, pitch in heard(call) if at > after and abs(pitch - hz) <= 50), None)


def longest_gap(call: FakeTwilioCall, start: float, end: float) -> float:
    """The longest stretch in (start, end) in which the caller's ear received no bot audio at all."""
    times = [start] + [at for at, _ in heard(call) if start < at < end] + [end]
    return max(later - earlier for earlier, later in itertools.pairwise(times))


def apologised(call: FakeTwilioCall) -> bool:
    return load_apology()[:1600] in b"".join(frame.payload for frame in call.heard)


async def speak(call: FakeTwilioCall) -> float:
    """Say something; returns when the caller stopped (on the call's clock)."""
    await call.stream(SPEECH)
    return call.now()


async def test_a_caller_who_thinks_for_25_seconds_is_answered_not_apologised_to(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="telephony")
    model = Responder()
    async with harness(lambda: model, hangup=FakeCallControl()) as h:
        async with h.caller() as call:
            await call.connect()
            await speak(call)
            await call.silence(25.0)
            spoke_again = await speak(call)
            await call.silence(2.0)
            assert not call.closed.is_set()
            await call.stop()
    assert model.answers[0] == "caller" and model.answers[-1] == "caller"
    assert model.answers.count("check_in") == 2  # checked on at ~10 s and ~20 s, never nudged or given up on
    assert "nudge" not in model.answers and "again" not in model.answers
    answered = first(call, PITCH["caller"], after=spoke_again)
    assert answered is not None and answered - spoke_again < 2.0
    assert not apologised(call)
    assert "outcome=completed-by-caller" in caplog.text


async def test_a_six_second_tool_leaves_no_stretch_of_silence_longer_than_2_5_seconds() -> None:
    model = Responder(tool=(1, "slow_lookup", {}))
    async with harness(lambda: model, tools=[slow_lookup]) as h:
        async with h.caller() as call:
            await call.connect()
            ended = await speak(call)
            await call.silence(9.0)
            await call.stop()
    answer = first(call, PITCH_TOOL_RESULT, after=ended)
    assert answer is not None and answer - ended > 6.0, "the tool's answer came before the tool could finish"
    assert longest_gap(call, ended, answer) < 2.5
    hold = load_hold_sound("")
    assert hold is not None and any(frame.payload in hold for frame in call.heard)  # the hold sound covered it
    assert not any(frame.payload in hold for frame in call.heard if frame.at > answer + 0.1)  # stopped for the answer


async def test_a_model_that_stalls_on_a_turn_is_heard_again_without_the_caller_speaking(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="telephony")
    model = Responder(silent={1})  # the first answer never comes, and that connection says nothing more
    async with harness(lambda: model) as h:
        async with h.caller() as call:
            await call.connect()
            ended = await speak(call)
            await call.silence(12.0)
            await call.stop()
    something = next((at for at, _ in heard(call) if at > ended), None)
    assert something is not None and something - ended < 4.0
    real = min(filter(None, (first(call, PITCH[kind], after=ended) for kind in ("caller", "again"))), default=None)
    assert real is not None and real - ended < 10.0
    assert model.connections == 2 and not apologised(call)
    assert "nudge:" in caplog.text and "reconnect:" in caplog.text


async def test_a_silent_caller_is_checked_on_then_the_bot_says_goodbye_and_hangs_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="telephony")
    model, rest = Responder(), FakeCallControl()
    async with harness(lambda: model, hangup=rest, greeting="Greet the caller.") as h:
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(70.0))
            await call.wait_closed(65.0)
            talker.cancel()
        metrics = await h_metrics(h)
    greeting = first(call, PITCH["greeting"])
    check_in = first(call, PITCH["check_in"])
    goodbye = first(call, PITCH["goodbye"])
    assert greeting is not None and check_in is not None and goodbye is not None
    assert check_in - (greeting + 0.6) < 15.0
    assert call.now() < 60.0 and len(rest.calls) == 1
    assert model.answers == ["greeting", "check_in", "check_in", "goodbye"]
    assert "outcome=completed-by-bot" in caplog.text and "dead_air_max=" in caplog.text
    assert 'voicebot_dead_air_steps_total{step="check_in"} 2.0' in metrics


async def h_metrics(h: Any) -> str:
    import httpx

    async with httpx.AsyncClient() as client:
        return (await client.get(f"http://{h.base}/metrics")).text


FAST = {"answer_timeout_s": 0.5, "agent_silence_timeout_s": 3.0}
"""Short rescue times, for the faults whose timing the tests above already check at the defaults."""


async def test_a_model_that_just_did_not_answer_answers_the_nudge() -> None:
    model = Responder(silent={1}, stalls_connection=False)
    async with harness(lambda: model, **FAST) as h:
        async with h.caller() as call:
            await call.connect()
            ended = await speak(call)
            await call.silence(2.5)
            await call.stop()
    assert model.answers == ["caller", "nudge"] and model.connections == 1
    nudged = first(call, PITCH["nudge"], after=ended)
    assert nudged is not None and nudged - ended < 1.5


async def test_an_answer_that_stops_midway_is_picked_up_on_a_new_connection() -> None:
    model = Responder(stalls={1})
    async with harness(lambda: model, **FAST) as h:
        async with h.caller() as call:
            await call.connect()
            await speak(call)
            await call.silence(4.0)
            await call.stop()
    assert model.connections == 2
    assert len(model.answers) >= 2 and not apologised(call)  # the new connection was told where the caller stopped


async def test_a_model_that_never_answers_is_a_start_failure_with_the_whole_apology(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="telephony")
    model, rest = Responder(dead=True), FakeCallControl()
    async with harness(lambda: model, hangup=rest, greeting="Greet the caller.", **FAST) as h:
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(20.0))
            await call.wait_closed(15.0)
            talker.cancel()
    assert apologised(call) and len(rest.calls) == 1
    assert model.connections == 2  # replaced once before it was given up on
    assert "outcome=failed-agent-start" in caplog.text


async def test_check_ins_can_be_turned_off() -> None:
    model = Responder()
    async with harness(lambda: model, greeting="Greet the caller.", caller_idle_timeout_s=0.0) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(12.0)
            await call.stop()
    assert model.answers == ["greeting"]


async def test_with_a_person_to_take_the_call_the_apology_is_followed_by_a_transfer_not_a_hang_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="telephony")
    model, rest = Responder(dead=True), FakeCallControl()
    settings = {"greeting": "Greet the caller.", "transfer_to": "+15550009999", **FAST}
    async with harness(lambda: model, hangup=rest, **settings) as h:
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(20.0))
            await call.wait_closed(15.0)
            talker.cancel()
    assert apologised(call)
    assert rest.calls == [] and len(rest.redirects) == 1 and "+15550009999" in rest.redirects[0][2]
    assert "outcome=failed-agent-start" in caplog.text and "transferred to +15550009999" in caplog.text


async def test_after_its_own_reconnect_the_guard_gives_up_on_time(caplog: pytest.LogCaptureFixture) -> None:
    """The new connection the guard asked for is no reason to start the wait again: the apology comes at
    ``VOICEBOT_AGENT_SILENCE_TIMEOUT`` after the answer was owed."""
    caplog.set_level(logging.INFO, logger="telephony")
    model = Responder(dead=True)
    async with harness(lambda: model, hangup=FakeCallControl(), greeting="Greet the caller.", **FAST) as h:
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(20.0))
            await call.wait_closed(15.0)
            talker.cancel()
    apology = load_apology()[:160]
    started = min(frame.at for frame in call.heard if frame.payload == apology)
    assert model.connections == 2 and 3.0 <= started < 3.0 + 1.0  # owed from ~0.1 s: apology at ~3.1 s

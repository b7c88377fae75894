"""Every call ends: time limits, a dead stream, a silent agent, a flood of garbage."""

from __future__ import annotations

import asyncio
import json

from telephony.bridge.ending import load_apology
from telephony.bridge.watchdog import CallClock, Limits, Verdict

from ..conftest import harness
from ..fakes.model import Hold, Say, WaitForText
from ..fakes.rest import FakeCallControl
from .test_bridge import frame_hz

LIMITS = Limits(max_call_s=100, warning_s=30, caller_silence_s=5, wrap_up_s=20)


def test_clock_reports_each_limit_once_in_order() -> None:
    clock = CallClock(LIMITS, now=0)
    for second in range(1, 70):
        clock.media(second)
        assert clock.check(second) is None
    clock.media(70)
    assert clock.check(70) is Verdict.WARN and clock.check(70.5) is None
    for second in range(71, 101):
        clock.media(second)
    assert clock.check(100) is Verdict.WRAP_UP
    for second in range(101, 121):
        clock.media(second)
    assert clock.check(119.9) is None and clock.check(120) is Verdict.FORCE_END


def test_clock_stream_gone() -> None:
    clock = CallClock(LIMITS, now=0)
    for tick in range(1, 10):
        clock.media(tick)
        assert clock.check(tick) is None
    assert clock.check(13.9) is None
    assert clock.check(14) is Verdict.STREAM_GONE  # no media since t=9


def test_shutdown_wrap_up_starts_the_grace_period() -> None:
    clock = CallClock(LIMITS, now=0)
    clock.wrap_up(5)
    for tick in range(6, 25):
        clock.media(tick)
        assert clock.check(tick) is None
    clock.media(25)
    assert clock.check(25) is Verdict.FORCE_END


async def test_a_stream_that_stops_sending_audio_is_hung_up() -> None:
    rest = FakeCallControl()
    async with harness([Hold()], hangup=rest, caller_silence_timeout_s=0.6) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.3)  # then nothing: the stream died without a stop
            await call.wait_closed(3)
    assert len(rest.calls) == 1


async def test_a_call_at_its_time_limit_is_warned_wrapped_up_and_ended() -> None:
    rest = FakeCallControl()
    script = [WaitForText("ends automatically"), Say("we are nearly out of time", 0.3, tone_hz=1000), Hold()]
    async with harness(script, hangup=rest, max_call_s=1.5, call_warning_s=1.0, wrap_up_s=1.0) as h:
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(30))
            await call.wait_closed(30)
            talker.cancel()
        texts = h.model.texts
    assert any("ends automatically in about 1 seconds" in text for text in texts)
    assert any("reached its time limit" in text for text in texts)
    assert any(frame_hz(payload) == 1000 for payload in call.media_payloads())
    assert len(rest.calls) == 1  # the agent never said goodbye, so the wrap-up ran out and the call was ended


async def test_an_agent_that_never_answers_the_caller_gets_the_apology() -> None:
    rest = FakeCallControl()
    settings = {"answer_timeout_s": 0.3, "agent_silence_timeout_s": 0.8}
    async with harness([Hold()], hangup=rest, **settings) as h:
        async with h.caller() as call:
            await call.connect()
            await call.stream(b"\x10" * 160 * 25)  # half a second of loud caller, then quiet; a silent agent
            talker = asyncio.create_task(call.silence(15))
            await call.wait_closed(15)
            talker.cancel()
        texts = h.model.texts
    assert len(rest.calls) == 1
    heard = b"".join(frame.payload for frame in call.heard)
    assert load_apology() in heard
    assert any("waiting for your answer" in text for text in texts)  # nudged before it was given up on


async def test_a_flood_of_garbage_closes_the_stream_and_spares_other_calls() -> None:
    async with harness([Say("hi", 0.3, tone_hz=1000), Hold()], max_bad_messages=50) as h:
        async with h.caller() as bad, h.caller(call_sid="CA" + "9" * 32, stream_sid="MZ" + "8" * 32) as good:
            await bad.connect()
            await good.connect()
            for index in range(60):
                await bad.send(json.dumps({"event": "media", "streamSid": bad.stream_sid, "media": {"payload": index}}))
            await bad.wait_closed(3)
            await good.silence(0.6)
            assert not good.closed.is_set()
            await good.stop()
    assert bad.close_code == 1008
    assert any(frame_hz(payload) == 1000 for payload in good.media_payloads())

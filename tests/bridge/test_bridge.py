"""The call bridge end to end: fake Twilio <-> real app on loopback <-> scripted BidiAgent model."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import math
from pathlib import Path

import numpy as np
import pytest

from telephony.bridge.ending import load_apology
from telephony.bridge.playback import MAX_FRAMES_PER_MESSAGE
from telephony.codec import pcm16_to_ulaw, ulaw_to_pcm16

from ..audio import dominant_hz, frame_hz, pcm, rms_dbfs
from ..conftest import harness, settle_tasks
from ..fakes.model import (
    BargeIn,
    CallTool,
    CloseSilently,
    Fail,
    Hold,
    Say,
    SayMore,
    ScriptedModel,
    WaitForAudio,
    WaitForText,
)
from ..fakes.rest import FakeCallControl

DATA = Path(__file__).parents[1] / "data"
ALLOWED_KEYS = {
    "media": {"event", "streamSid", "media"},
    "mark": {"event", "streamSid", "mark"},
    "clear": {"event", "streamSid"},
}


# --- the protocol we send ---------------------------------------------------------------------------


async def test_bot_audio_goes_out_as_whole_20ms_frames_joined_with_the_stream_sid() -> None:
    async with harness([Say("hello", 1.0, tone_hz=1000)]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(1.5)
            await call.stop()
    frames = call.media_payloads()
    assert 49 <= len(frames) <= 52  # 1.0 s of audio plus the resampler's tail, padded to whole frames
    for item in call.received:
        message = item.message
        assert set(message) == ALLOWED_KEYS[message["event"]], message
        assert message["streamSid"] == call.stream_sid
    sizes = [len(base64.b64decode(item.message["media"]["payload"])) for item in call.events("media")]
    assert all(size % 160 == 0 and 160 <= size <= 160 * MAX_FRAMES_PER_MESSAGE for size in sizes), sizes
    assert len(sizes) < len(frames)  # frames queued back to back left together
    marks = [item.message["mark"]["name"] for item in call.events("mark")]
    assert marks and marks[-1].startswith("end-")
    assert marks[-1] in call.echoed  # the end-of-utterance mark came back: the caller heard it all


@pytest.mark.parametrize("output_rate", [8000, 16000, 24000])
async def test_bot_audio_is_transcoded_from_the_rate_the_model_declares(output_rate: int) -> None:
    """A rate mismatch would shift the pitch (chipmunk) and change the duration."""
    async with harness(lambda: ScriptedModel([Say("tone", 1.0, tone_hz=1000)], output_rate=output_rate)) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(1.5)
            await call.stop()
    audio = pcm(ulaw_to_pcm16(b"".join(call.media_payloads())))
    frames = audio[: len(audio) // 160 * 160].reshape(-1, 160)
    voiced = frames[[rms_dbfs(frame) > -40 for frame in frames]].ravel()
    assert abs(dominant_hz(audio, 8000) - 1000) < 10
    assert abs(len(voiced) / 8000 - 1.0) < 0.03
    expected_dbfs = rms_dbfs(0.3 * 32767 * np.sin(np.linspace(0, 2 * math.pi * 1000, 8000)))
    assert abs(rms_dbfs(voiced) - expected_dbfs) < 0.5


@pytest.mark.parametrize("input_rate", [8000, 16000, 24000])
async def test_caller_audio_reaches_the_model_at_its_input_rate(input_rate: int) -> None:
    caller_tone = 0.25 * 32767 * np.sin(2 * math.pi * 700 * np.arange(8000) / 8000)
    ulaw = pcm16_to_ulaw(caller_tone.astype("<i2").tobytes())
    async with harness(lambda: ScriptedModel([Hold()], input_rate=input_rate)) as h:
        async with h.caller(speed=4) as call:
            await call.connect()
            await asyncio.sleep(0.2)  # the agent starts; audio before it is built is not queued
            await call.stream(ulaw)
            await asyncio.sleep(0.3)
            received = pcm(bytes(h.model.audio_received))
            await call.stop()
    assert abs(len(received) / input_rate - 1.0) < 0.05
    assert abs(dominant_hz(received, input_rate) - 700) < 5


# --- barge-in ---------------------------------------------------------------------------------------


async def test_barge_in_clears_twilio_and_nothing_stale_follows() -> None:
    script = [
        Say("a long answer", 3.0, tone_hz=400, stop=False),
        WaitForAudio(0.6),
        BargeIn(),
        SayMore(1.0, tone_hz=400),  # a model may keep streaming the interrupted utterance
        Say("sure, go ahead", 0.6, tone_hz=1000),
        Hold(),
    ]
    async with harness(script) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(2.0)
            await call.stop()
    clears = call.events("clear")
    assert len(clears) == 1
    cleared_at = clears[0].at
    after_clear = [item for item in call.received if item.at > cleared_at and item.message["event"] == "media"]
    assert after_clear, "the reply after the barge-in never arrived"
    tones = {round(frame_hz(base64.b64decode(item.message["media"]["payload"])), -2) for item in after_clear}
    assert tones <= {1000.0, 0.0}, f"stale audio after clear: {tones}"
    heard_400 = [frame for frame in call.heard if round(frame_hz(frame.payload), -2) == 400]
    assert len(heard_400) * 0.02 < 1.3  # heard ~0.6 s of caller time plus latency, not the 4 s queued
    # Marks pending at the clear were echoed at once by the (fake) Twilio but not counted as heard.
    assert any(name.startswith("at-") or name.startswith("end-") for name in call.echoed)


# --- hanging up -------------------------------------------------------------------------------------


async def test_goodbye_is_heard_in_full_then_rest_hangup() -> None:
    hangup = FakeCallControl()
    script = [Say("Goodbye!", 1.0, tone_hz=1000), CallTool("end_conversation", {"reason": "caller said bye"}), Hold()]
    async with harness(script, hangup=hangup) as h:
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(8))
            await call.wait_closed(8)
            talker.cancel()
            model = h.model
    assert len(hangup.calls) == 1 and hangup.calls[0][1] == call.call_sid
    sent = len(call.media_payloads())
    assert len(call.heard) == sent  # every frame of the goodbye was played before the hang-up
    last_heard = call.heard[-1].at + 0.02
    hung_up_at = hangup.calls[0][0] - call._t0
    assert last_heard <= hung_up_at <= last_heard + 1.0
    assert model.tool_results and model.tool_results[0].status == "success"
    assert model.stopped


async def test_goodbye_without_rest_credentials_closes_the_socket() -> None:
    script = [Say("Bye now", 0.8, tone_hz=1000), CallTool("end_conversation", {"reason": "done"}), Hold()]
    async with harness(script) as h:
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(8))
            await call.wait_closed(8)
            closed_at = call.now()
            talker.cancel()
    assert call.close_code == 1000
    assert len(call.heard) == len(call.media_payloads())
    assert call.heard[-1].at + 0.02 <= closed_at <= call.heard[-1].at + 1.0


async def test_caller_talking_over_the_goodbye_keeps_the_call() -> None:
    hangup = FakeCallControl()
    script = [
        Say("Goodbye then", 2.0, tone_hz=1000),
        CallTool("end_conversation", {"reason": "bye"}),
        WaitForAudio(0.3),
        BargeIn(),
        Say("Oh, what else can I do?", 0.4, tone_hz=400),
        Hold(),
    ]
    async with harness(script, hangup=hangup) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(3.0)
            assert not call.closed.is_set()
            await call.stop()
            await call.wait_closed(3)
    assert hangup.calls == []
    assert any(round(frame_hz(frame.payload), -2) == 400 for frame in call.heard)


async def test_rest_failure_falls_back_to_closing_the_socket() -> None:
    hangup = FakeCallControl(error=RuntimeError("Twilio is down"))
    script = [Say("Bye", 0.4, tone_hz=1000), CallTool("end_conversation", {"reason": "done"}), Hold()]
    async with harness(script, hangup=hangup) as h:
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(6))
            await call.wait_closed(6)
            talker.cancel()
    assert len(hangup.calls) == 3  # a bounded number of retries, then the socket is closed instead
    assert hangup.calls[-1][0] - hangup.calls[0][0] < 5.0
    assert call.close_code == 1000


async def test_caller_hangs_up_mid_utterance_and_nothing_leaks() -> None:
    baseline = set(asyncio.all_tasks())
    async with harness([Say("a slow long answer", 5.0, tone_hz=1000, realtime=True), Hold()]) as h:
        inner_baseline = set(asyncio.all_tasks())
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.6)
            await call.stop()
            await call.wait_closed(3)
        leftover = await settle_tasks(inner_baseline)
        assert not leftover, f"tasks left running after the call: {leftover}"
        assert h.model.stopped
        assert not h.app.state.sessions
    assert not await settle_tasks(baseline)


# --- failures ---------------------------------------------------------------------------------------


async def _assert_apology_then_hangup(h, hangup: FakeCallControl) -> None:
    apology = load_apology()
    async with h.caller() as call:
        await call.connect()
        talker = asyncio.create_task(call.silence(12))
        await call.wait_closed(12)
        talker.cancel()
    heard = b"".join(frame.payload for frame in call.heard)
    assert apology in heard, "the caller did not hear the whole apology"
    assert len(hangup.calls) == 1
    assert call.heard[-1].at <= hangup.calls[0][0] - call._t0 + 0.05


async def test_agent_failing_mid_call_apologises_and_hangs_up() -> None:
    hangup = FakeCallControl()
    script = [Say("hi", 0.3, tone_hz=1000), WaitForAudio(0.3), Fail(RuntimeError("model exploded")), Hold()]
    async with harness(script, hangup=hangup) as h:
        await _assert_apology_then_hangup(h, hangup)
        assert h.model.stopped


async def test_agent_failing_to_start_apologises_and_hangs_up(caplog: pytest.LogCaptureFixture) -> None:
    hangup = FakeCallControl()
    caplog.set_level(logging.INFO, logger="telephony")
    maker = lambda: ScriptedModel([Hold()], fail_start=ConnectionError("no credentials"))  # noqa: E731
    async with harness(maker, hangup=hangup) as h:
        await _assert_apology_then_hangup(h, hangup)
    assert any(
        "agent failed to start" in record.getMessage() and "call=CA" in record.getMessage() for record in caplog.records
    )


async def test_agent_start_timeout_apologises() -> None:
    hangup = FakeCallControl()
    maker = lambda: ScriptedModel([Hold()], start_delay=30)  # noqa: E731
    async with harness(maker, hangup=hangup, agent_start_timeout_s=0.5) as h:
        await _assert_apology_then_hangup(h, hangup)


async def test_model_stream_closing_silently_does_not_leave_the_caller_hanging() -> None:
    hangup = FakeCallControl()
    async with harness([Say("hi", 0.2, tone_hz=1000), WaitForAudio(0.2), CloseSilently()], hangup=hangup) as h:
        await _assert_apology_then_hangup(h, hangup)


# --- bad input --------------------------------------------------------------------------------------


async def test_malformed_and_unknown_messages_are_ignored_and_the_call_goes_on() -> None:
    garbage: list[str | bytes] = [
        "not json",
        "[1, 2, 3]",
        json.dumps({"event": 42}),
        json.dumps({"event": "brand_new_event", "streamSid": "MZ" + "2" * 32}),
        json.dumps({"event": "media", "streamSid": "MZ" + "2" * 32}),
        json.dumps({"event": "media", "streamSid": "MZ" + "2" * 32, "media": {"payload": "***not base64***"}}),
        json.dumps({"event": "media", "streamSid": "MZ" + "2" * 32, "media": {"payload": 12345}}),
        json.dumps({"event": "media", "streamSid": "MZwrong", "media": {"payload": "//8="}}),
        json.dumps({"event": "mark", "streamSid": "MZ" + "2" * 32, "mark": {"name": "never-sent"}}),
        json.dumps({"event": "start", "streamSid": "MZ" + "2" * 32, "start": {"callSid": "CAother"}}),
        json.dumps({"event": "media", "padding": "x" * 70_000}),
        b"\x00\x01binary",
    ]
    script = [WaitForAudio(0.3), Say("still here", 0.4, tone_hz=1000), Hold()]
    async with harness(script) as h:
        async with h.caller() as call, h.caller(call_sid="CA" + "9" * 32, stream_sid="MZ" + "8" * 32) as other:
            await call.connect()
            await other.connect()
            for item in garbage:
                await call.send(item)
            await asyncio.gather(call.silence(1.2), other.silence(1.2))
            await call.stop()
            await other.stop()
    for each in (call, other):
        assert any(frame_hz(payload) == 1000 for payload in each.media_payloads())
    assert len(h.models) == 2 and all(model.audio_seconds > 0.5 for model in h.models)


async def test_nothing_after_stop_is_taken_though_it_came_in_the_same_read() -> None:
    async with harness([Hold()]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.3)
            await call.stop()
            await call.dtmf("5")  # right behind the stop: the server reads both at once, and takes the stop alone
            await call.wait_closed(3)
    assert not any("pressed 5" in text for text in h.models[0].texts)


async def test_a_message_that_breaks_the_bridge_ends_the_call_as_a_crash_of_its_reader(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Messages are taken inside the server's read (no reader task runs them): a bug there still ends the call."""
    from telephony.bridge.session import CallSession

    def broken(self: CallSession, media: object) -> None:
        raise RuntimeError("a bug in the audio path")

    monkeypatch.setattr(CallSession, "caller_audio", broken)
    caplog.set_level(logging.INFO, logger="telephony")
    async with harness([Hold()]) as h:
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(3))
            await call.wait_closed(3)
            talker.cancel()
    crashes = [record for record in caplog.records if "crashed" in record.getMessage()]
    assert crashes and "reader:CA" in crashes[0].getMessage() and "a bug in the audio path" in crashes[0].getMessage()


# --- recorded Twilio sequences -----------------------------------------------------------------------


async def test_recorded_call_with_keypress_replays_through_the_bridge() -> None:
    async with harness([WaitForText("pressed 5"), Say("You pressed five", 0.3, tone_hz=1000), Hold()]) as h:
        async with h.caller(speed=2) as call:
            await call.replay(DATA / "inbound_call_with_keypress.jsonl")
            await call.wait_closed(5)
        model = h.model
        call_info = h.calls[0]
    assert call_info.call_sid == "CA" + "b" * 32 and call_info.parameters == {}
    assert any("pressed 5" in text for text in model.texts)
    assert model.audio_seconds > 1.0
    assert model.stopped


# --- observers --------------------------------------------------------------------------------------


class ListObserver:
    def __init__(self, call) -> None:
        self.call = call
        self.seen: list[tuple[str, object]] = []
        self.ended: tuple[str, str] | None = None

    def model_audio(self, input_rate: int, output_rate: int) -> None:
        self.seen.append(("model_audio", (input_rate, output_rate)))

    def twilio_received(self, text: str) -> None:
        self.seen.append(("in", json.loads(text)["event"]))

    def twilio_sent(self, text: str) -> None:
        self.seen.append(("out", json.loads(text)["event"]))

    def agent_event(self, event) -> None:
        self.seen.append(("agent", event["type"]))

    def agent_input(self, item) -> None:
        self.seen.append(("input", type(item).__name__))

    def note(self, kind: str, detail: str) -> None:
        self.seen.append(("note", kind))

    async def call_ended(self, reason: str, ended_by: str) -> None:
        self.ended = (reason, ended_by)


class BrokenObserver(ListObserver):
    def twilio_sent(self, text: str) -> None:
        raise OSError("disk full")


async def test_observers_see_the_whole_call_and_a_broken_one_is_dropped() -> None:
    made: list[ListObserver] = []

    def make(cls):
        def factory(call):
            made.append(cls(call))
            return made[-1]

        return factory

    script = [Say("hello", 0.3, tone_hz=1000), WaitForAudio(0.2), BargeIn(), Hold()]
    async with harness(script, observers=[make(BrokenObserver), make(ListObserver)]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.8)
            await call.stop()
    broken, good = made
    kinds = [kind for kind, _ in good.seen]
    assert good.seen[:2] == [("in", "connected"), ("in", "start")]  # delivered although they came first
    assert ("model_audio", (16000, 16000)) in good.seen
    assert ("out", "media") in good.seen and ("out", "clear") in good.seen and ("in", "mark") in good.seen
    assert ("agent", "bidi_audio_delta") in good.seen and ("note", "barge_in") in good.seen
    assert kinds.count("input") >= 1 and good.seen[-2:] == [("in", "stop"), ("note", "outcome")]
    assert good.ended == ("stream stopped (caller hung up or call ended)", "caller")
    assert good.call.call_sid == call.call_sid
    assert broken.ended is None and ("out", "media") not in broken.seen  # dropped at its first failure
    assert any(frame_hz(payload) == 1000 for payload in call.media_payloads())

"""Phone calls through the real Gemini Live client: the path real callers take, end to end, offline.

simulated Twilio caller -> the real app on loopback -> the default agent factory (VOICEBOT_MODEL=gemini) ->
``agent.gemini.GeminiLiveModel`` (strands' ``GoogleGeminiLiveModel``, google-genai's ``aio.live.connect``) ->
WebSocket over TLS on 127.0.0.1 -> the local Gemini (``local_gemini`` fixture: ``GOOGLE_GEMINI_BASE_URL``,
``SSL_CERT_FILE``, a fake ``GOOGLE_API_KEY``), which checks every message and fails the test on a violation.

Bot speech is tones at 24 kHz (a reply's frequency tells which reply the caller heard); caller speech is a tone
the local Gemini's level detector hears as a turn (the helpers, shared with the other models' call tests, are in
``model_calls.py``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time

import pytest

import agent.gemini  # noqa: F401  google-genai's import (~1-3 s) paid at collection, not inside a call's start limit
from telephony.bridge import session as session_module
from telephony.simulation.local_gemini import Fault, LocalGemini, Reply, ScriptedBrain, TimeLimits, Tone, ToolRequest
from telephony.simulation.local_gemini.turns import Pacing

from ..audio import dominant_hz, frame_hz, pcm
from ..fakes.rest import FakeCallControl
from ..fakes.twilio import FakeTwilioCall
from ..waiting import until
from .model_calls import (
    ANSWER_HZ,
    CALL_SID,
    CALLER_HZ,
    GEMINI,
    GREETING,
    GREETING_HZ,
    LONG_HZ,
    call_until_hung_up,
    gemini_line,
    heard_at_least,
    heard_hz,
    heard_the_apology,
    listen_until,
    seconds_of,
    talk,
    talk_until_answered,
    voiced_seconds,
)

MODEL_ID = GEMINI.model_id


# --- a call heard both ways --------------------------------------------------------------------------


async def test_greeting_and_a_turn_are_heard_both_ways(
    local_gemini: LocalGemini, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    local_gemini.brain = brain = ScriptedBrain(
        texts=[Reply(text="Hello, front desk.", audio=Tone(0.6, hz=GREETING_HZ))],
        turns=[Reply(text="Sure thing.", audio=Tone(0.8, hz=ANSWER_HZ), heard="can you help me")],
    )
    caplog.set_level(logging.INFO)
    async with gemini_line(local_gemini, monkeypatch) as line:
        async with line.caller() as call:
            await call.connect()
            await listen_until(call, heard_at_least(GREETING_HZ, 0.6))
            await talk_until_answered(call, 0.6, 0.8)  # a turn, then its answer plays
            await call.stop()

    [session] = local_gemini.sessions
    assert session.model_id == MODEL_ID and session.api_key == "local-gemini-key-not-checked"
    assert session.path == "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
    assert session.text_inputs == [GREETING]
    assert {"realtime_input", "client_content"} <= session.snake_keys  # the SDK's own spelling, accepted
    assert session.urlsafe_audio  # google-genai writes the audio's base64 URL-safe (pydantic's bytes as JSON)
    # caller audio reached Gemini at 16 kHz, at the pitch the caller spoke
    assert session.caller_sample_rate == 16000
    assert voiced_seconds(bytes(session.caller_audio), 16000) == pytest.approx(0.6, abs=0.04)
    [turn] = brain.heard
    assert abs(dominant_hz(pcm(turn.pcm), 16000) - CALLER_HZ) < 5
    # Gemini spoke at 24 kHz; the caller heard both replies in full at 8 kHz, at their pitch
    hz = heard_hz(call)
    assert seconds_of(hz, GREETING_HZ) == pytest.approx(0.6, abs=0.06)
    assert seconds_of(hz, ANSWER_HZ) == pytest.approx(0.8, abs=0.06)
    assert hz.index(GREETING_HZ) < hz.index(ANSWER_HZ)
    assert not call.events("clear") and session.barge_ins == 0
    log = caplog.text
    assert f"gemini live endpoint: wss://{local_gemini.base_url.removeprefix('https://')}/ws/" in log
    assert f"(trusting {local_gemini.ca_file})" in log
    assert "model audio | input=16000 Hz output=24000 Hz" in log
    assert "caller said: can you help me" in log and "bot said: Sure thing." in log


# --- barge-in ------------------------------------------------------------------------------------------


async def test_barge_in_clears_the_line_with_nothing_stale_after_it(
    local_gemini: LocalGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_gemini.brain = ScriptedBrain(
        texts=[Reply(text="Let me tell you about all our opening hours.", audio=Tone(4.0, hz=LONG_HZ))],
        turns=[Reply(text="Go ahead.", audio=Tone(0.6, hz=ANSWER_HZ), heard="wait a moment")],
    )
    async with gemini_line(local_gemini, monkeypatch) as line:
        async with line.caller() as call:
            await call.connect()
            # 4 s of greeting streams in 1 s; talk over it while it is still playing at the caller's end
            await listen_until(call, heard_at_least(LONG_HZ, 0.6), then_s=0.0)
            onset = time.monotonic() - call.started
            await talk_until_answered(call, 0.5, 0.6)
            await call.stop()

    [session] = local_gemini.sessions
    assert session.barge_ins == 1 and "serverContent" in session.sent
    [clear] = call.events("clear")
    after_interrupted = call.started + clear.at - session.interrupted_at[0]
    print(f"caller onset -> clear: {(clear.at - onset) * 1000:.0f} ms")  # shown with -s
    print(f"server's interrupted -> clear: {after_interrupted * 1000:.1f} ms")
    assert 0.0 < clear.at - onset < 0.5  # the level detector's 60 ms onset, a send chunk, the loopback
    assert 0.0 < after_interrupted < 0.1
    hz = heard_hz(call)
    assert 0.6 <= seconds_of(hz, LONG_HZ) < 1.6  # the caller talked after 0.6 s of it; cut well short of 4 s
    after_clear = [
        round(frame_hz(payload), -2)
        for item in call.received
        if item.at > clear.at and item.message["event"] == "media"
        for payload in [base64.b64decode(item.message["media"]["payload"])]
    ]
    assert set(after_clear) <= {ANSWER_HZ, 0.0}, "stale audio after the clear"
    assert seconds_of(hz, ANSWER_HZ) == pytest.approx(0.6, abs=0.06)


# --- tools and hanging up ------------------------------------------------------------------------------


async def test_a_tool_round_trip_and_end_conversation_hang_up_after_the_goodbye_is_heard(
    local_gemini: LocalGemini, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    bye = ToolRequest("end_conversation", {"reason": "the caller said goodbye"}, tool_use_id="function-call-bye")
    local_gemini.brain = ScriptedBrain(
        texts=[Reply(text="Hello.", audio=Tone(0.4, hz=GREETING_HZ))],
        turns=[Reply(text="Goodbye, have a lovely day.", audio=Tone(1.0, hz=ANSWER_HZ), tool_uses=(bye,))],
    )
    rest = FakeCallControl()
    caplog.set_level(logging.INFO)
    async with gemini_line(local_gemini, monkeypatch, rest=rest) as line:
        async with line.caller() as call:
            await call.connect()
            await listen_until(call, heard_at_least(GREETING_HZ, 0.4))
            await talk(call, 0.5, 0.0)
            listening = asyncio.create_task(call.silence(8.0))
            await call.wait_closed(8.0)
            listening.cancel()

    [session] = local_gemini.sessions
    declared = session.info.tools if session.info else {}
    assert "end_conversation" in declared
    [(call_id, name, result)] = session.tool_results  # the tool ran; its result went back with the call's id
    assert (call_id, name) == ("function-call-bye", "end_conversation") and "goodbye has played" in json.dumps(result)
    hz = heard_hz(call)
    assert seconds_of(hz, ANSWER_HZ) == pytest.approx(1.0, abs=0.06)  # the goodbye was heard in full...
    last_goodbye_frame = max(frame.at for frame in call.heard if round(frame_hz(frame.payload), -2) == ANSWER_HZ)
    [(hung_up_at, sid)] = rest.calls
    assert sid == CALL_SID
    assert last_goodbye_frame < hung_up_at - call.started < last_goodbye_frame + 1.5  # ...before the hang-up
    print(f"last goodbye frame -> hang-up: {(hung_up_at - call.started - last_goodbye_frame) * 1000:.0f} ms")
    assert "agent ended the call (the caller said goodbye)" in caplog.text


async def test_calls_hanging_up_mid_reply_end_at_once_and_close_their_connections(
    local_gemini: LocalGemini, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Three callers hang up while Gemini still streams a long greeting, faster than the bridge reads it (as on a
    loaded server): each call ends and counts in ``/stats`` at once, and closes its Gemini connection. Before
    ``agent.closing`` the unread reply held every agent's stop for the bridge's 5 s limit, left the connection
    open, and the load benchmark, reading ``/stats`` a second after its callers hung up, found no samples."""
    local_gemini.brain = ScriptedBrain(default=Reply(text="Let me read you the menu.", audio=Tone(60.0, hz=LONG_HZ)))
    local_gemini.pacing = Pacing(speedup=500.0)
    caplog.set_level(logging.WARNING)

    async def hang_up_mid_reply(index: int) -> None:
        async with FakeTwilioCall(f"ws://{line.base}/media-stream", call_sid=f"CA{index:032x}") as call:
            await call.connect()
            await listen_until(call, heard_at_least(LONG_HZ, 0.2), then_s=0.0)
            await call.stop()

    async with gemini_line(local_gemini, monkeypatch) as line:
        await asyncio.gather(*(hang_up_mid_reply(index) for index in range(3)))
        hung_up = time.monotonic()
        await until(lambda: not line.app.state.sessions, session_module.AGENT_STOP_TIMEOUT_S + 2, "the calls to end")
        ended_in = time.monotonic() - hung_up
        print(f"last hang-up -> every call ended: {ended_in * 1000:.0f} ms")
        assert ended_in < 1.5
        assert line.app.state.latency.summary()["start_to_first_audio"]["count"] == 3
        await until(lambda: all(record.ended_by for record in local_gemini.sessions), 2.0, "the connections to close")

    assert [record.ended_by for record in local_gemini.sessions] == ["client closed"] * 3
    assert "agent did not stop cleanly" not in caplog.text


async def test_cold_transfer_after_the_hand_off_line(
    local_gemini: LocalGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    transfer = ToolRequest("transfer_call", {"reason": "the caller asked for a person"})
    local_gemini.brain = ScriptedBrain(
        texts=[Reply(text="Let me put you through.", audio=Tone(0.8, hz=GREETING_HZ), tool_uses=(transfer,))]
    )
    rest = FakeCallControl()
    async with gemini_line(local_gemini, monkeypatch, rest=rest, transfer_to="+15550003333") as line:
        call = await call_until_hung_up(line, timeout=8.0)

    [(redirected_at, sid, twiml)] = rest.redirects
    assert sid == CALL_SID and "<Dial" in twiml and "+15550003333" in twiml
    assert seconds_of(heard_hz(call), GREETING_HZ) == pytest.approx(0.8, abs=0.06)
    assert redirected_at - call.started > max(frame.at for frame in call.heard if frame_hz(frame.payload))
    [session] = local_gemini.sessions
    [(_, name, result)] = session.tool_results
    assert name == "transfer_call" and "transferred" in json.dumps(result)
    assert session.info is not None and sorted(session.info.tools) == ["end_conversation", "transfer_call"]


async def test_keypresses_reach_gemini_as_text(local_gemini: LocalGemini, monkeypatch: pytest.MonkeyPatch) -> None:
    local_gemini.brain = ScriptedBrain(
        texts=[
            Reply(text="Hello.", audio=Tone(0.3, hz=GREETING_HZ)),
            Reply(text="Five.", audio=Tone(0.3, hz=ANSWER_HZ)),
        ]
    )
    async with gemini_line(local_gemini, monkeypatch) as line:
        async with line.caller() as call:
            await call.connect()
            await listen_until(call, heard_at_least(GREETING_HZ, 0.3))
            await call.dtmf("5")
            await listen_until(call, heard_at_least(ANSWER_HZ, 0.3))
            await call.stop()

    [session] = local_gemini.sessions
    assert session.text_inputs == [GREETING, "The caller pressed 5 on their keypad."]


async def test_the_connection_opened_at_the_webhook_is_the_one_the_call_uses(
    local_gemini: LocalGemini, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    local_gemini.brain = ScriptedBrain(texts=[Reply(text="Hello.", audio=Tone(0.4, hz=GREETING_HZ))])
    caplog.set_level(logging.INFO)
    async with gemini_line(local_gemini, monkeypatch, prewarm=True) as line:
        assert (await line.post("/twiml", From="+15550001111")).status_code == 200
        await local_gemini.wait_for_sessions(1)  # Gemini is connected before the stream exists
        await asyncio.sleep(0.5)
        async with line.caller() as call:
            await call.connect()
            await call.silence(1.0)
            await call.stop()

    assert len(local_gemini.sessions) == 1  # no second connection for the call
    assert local_gemini.sessions[0].text_inputs == [GREETING]
    assert seconds_of(heard_hz(call), GREETING_HZ) == pytest.approx(0.4, abs=0.06)
    assert min(frame.at for frame in call.heard if frame_hz(frame.payload)) < 0.5  # paid while the phone rang
    assert "(pre-warmed)" in caplog.text


# --- refusals: the caller hears the apology, the log says what to do -----------------------------------


@pytest.mark.parametrize(
    ("fault", "logged"),
    [
        (
            Fault.bad_key(),
            "APIError: 1007 None. API key not valid. Please pass a valid API key. | what to do: the Gemini API "
            "rejected the API key",
        ),
        (
            Fault.rate_limited(),
            "APIError: 1011 None. You exceeded your current quota, please check your plan and billing details. | "
            f"what to do: the Gemini API is limiting {MODEL_ID} for this key",
        ),
        (
            Fault.model_not_found(MODEL_ID),
            f"is not supported for bidiGenerateContent. | what to do: the Gemini API does not offer {MODEL_ID}",
        ),
    ],
    ids=["bad-key", "rate-limited", "model-not-found"],
)
async def test_refusals_at_connect_get_the_apology_and_an_operator_hint(
    local_gemini: LocalGemini,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    fault: Fault,
    logged: str,
) -> None:
    local_gemini.faults.push(fault)
    rest = FakeCallControl()
    caplog.set_level(logging.INFO)
    async with gemini_line(local_gemini, monkeypatch, rest=rest) as line:
        call = await call_until_hung_up(line)

    assert heard_the_apology(call)
    assert len(rest.calls) == 1  # then the line was hung up
    failures = [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR]
    assert len(failures) == 1 and failures[0].startswith(f"call={CALL_SID} | agent failed")
    assert logged in failures[0]
    [session] = local_gemini.sessions  # the SDK does not retry
    assert session.ended_by is not None and session.ended_by.startswith("refused: ")


async def test_a_quota_close_mid_call_gets_the_apology_and_an_operator_hint(
    local_gemini: LocalGemini, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    local_gemini.faults.push(Fault.close(1.2, 1011, "You exceeded your current quota, please check your plan."))
    local_gemini.brain = ScriptedBrain(texts=[Reply(text="Hello.", audio=Tone(0.4, hz=GREETING_HZ))])
    rest = FakeCallControl()
    caplog.set_level(logging.INFO)
    async with gemini_line(local_gemini, monkeypatch, rest=rest) as line:
        call = await call_until_hung_up(line)

    assert seconds_of(heard_hz(call), GREETING_HZ) == pytest.approx(0.4, abs=0.06)
    assert heard_the_apology(call) and len(rest.calls) == 1
    failures = [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR]
    assert (
        len(failures) == 1
        and "agent failed mid-call: APIError: 1011 None. You exceeded your current quota" in (failures[0])
    )
    assert f"what to do: the Gemini API is limiting {MODEL_ID} for this key" in failures[0]
    assert local_gemini.sessions[0].ended_by == "fault: close 1011"
    assert "agent did not stop cleanly" not in caplog.text


# --- the connection limit: goAway, resumption by handle -------------------------------------------------


async def test_go_away_resumes_by_handle_and_the_call_goes_on(
    local_gemini: LocalGemini, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Gemini's 10-minute connection at 1/200 scale: goAway at 2.75 s, strands resumes the session by its handle."""
    local_gemini.limits = TimeLimits(time_scale=1 / 200)
    local_gemini.brain = brain = ScriptedBrain(
        texts=[Reply(text="Hello.", audio=Tone(0.4, hz=GREETING_HZ))],
        turns=[Reply(text="Still here.", audio=Tone(0.5, hz=ANSWER_HZ), heard="are you still there")],
    )
    caplog.set_level(logging.INFO)
    async with gemini_line(local_gemini, monkeypatch) as line:
        async with line.caller() as call:
            await call.connect()
            await call.silence(3.5)  # the first connection is told to go at 2.75 s
            await talk(call, 0.5, 0.0)
            await listen_until(call, heard_at_least(ANSWER_HZ, 0.5))
            await call.stop()

    first, second = local_gemini.sessions[:2]
    assert "goAway" in first.sent
    assert second.resumed_handle is not None and second.resumed_handle in first.handles  # the newest handle...
    assert second.resumed_handle == first.handles[-1]
    assert second.conversation == first.conversation  # ...continued the same conversation
    assert not second.history and second.text_inputs == []  # nothing replayed
    assert len(brain.heard) == 1  # the caller's turn was heard once, on the new connection
    assert seconds_of(heard_hz(call), ANSWER_HZ) == pytest.approx(0.5, abs=0.06)
    assert not heard_the_apology(call)
    assert "(resuming by handle)" in caplog.text


async def test_a_refused_resumption_starts_afresh_with_the_history_replayed(
    local_gemini: LocalGemini, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An expired handle: the service refuses it; strands logs it, starts a fresh session and replays the history."""
    local_gemini.limits = TimeLimits(time_scale=1 / 200)
    local_gemini.faults.push(Fault.refuse_resume())
    local_gemini.brain = ScriptedBrain(
        texts=[Reply(text="Hello.", audio=Tone(0.4, hz=GREETING_HZ))],
        turns=[Reply(text="Still here.", audio=Tone(0.5, hz=ANSWER_HZ), heard="are you still there")],
    )
    caplog.set_level(logging.INFO)
    async with gemini_line(local_gemini, monkeypatch) as line:
        async with line.caller() as call:
            await call.connect()
            await call.silence(3.5)
            await talk(call, 0.5, 0.0)
            await listen_until(call, heard_at_least(ANSWER_HZ, 0.5))
            await call.stop()

    first, refused, fresh = local_gemini.sessions[:3]
    assert refused.info is not None and refused.info.resume_handle == first.handles[-1]  # asked to resume...
    assert refused.ended_by == "refused: Session not found or expired."  # ...and was refused
    assert fresh.info is not None and fresh.info.resume_handle is None and fresh.conversation != first.conversation
    assert ("model", "Hello.") in fresh.history  # the conversation so far, replayed as initial history
    assert seconds_of(heard_hz(call), ANSWER_HZ) == pytest.approx(0.5, abs=0.06)
    assert not heard_the_apology(call)
    assert "gemini resume failed | falling back to fresh session" in caplog.text

"""Phone calls through the real OpenAI Realtime client: the path real callers take, end to end, offline.

simulated Twilio caller -> the real app on loopback -> the default agent factory (VOICEBOT_MODEL=openai) ->
``agent.openai.OpenAIRealtime`` (strands' ``OpenAIRealtimeModel``, websockets) -> ``OPENAI_BASE_URL`` on 127.0.0.1
-> the local OpenAI Realtime (``local_openai`` fixture), which checks every event the client sends and fails the
test on any protocol violation.

Bot speech is tones (a reply's frequency tells which reply the caller heard); caller speech is a tone the local
server's VAD hears as a turn. The helpers (``model_calls.py``) are the other models' call tests' too: the bridge does
not know which model it runs.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any

import pytest

from telephony.simulation.local_nova import Pacing, Reply, ScriptedBrain, Tone, ToolRequest
from telephony.simulation.local_openai import Fault, LocalOpenAI, SessionLimits

from ..audio import dominant_hz, frame_hz, pcm
from ..fakes.rest import FakeCallControl
from .model_calls import (
    ANSWER_HZ,
    CALL_SID,
    CALLER_HZ,
    GREETING,
    GREETING_HZ,
    LONG_HZ,
    OPENAI,
    call_until_hung_up,
    heard_at_least,
    heard_hz,
    heard_the_apology,
    listen_until,
    openai_line,
    seconds_of,
    talk,
    talk_until_answered,
    voiced_seconds,
)

MODEL_ID = OPENAI.model_id


# --- a call heard both ways --------------------------------------------------------------------------


@pytest.mark.parametrize("late_transcripts", [False, True], ids=["transcript-first", "transcript-after-answer"])
async def test_greeting_and_a_turn_are_heard_both_ways_at_24_khz(
    local_openai: LocalOpenAI, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, late_transcripts: bool
) -> None:
    local_openai.late_transcripts = late_transcripts
    local_openai.brain = brain = ScriptedBrain(
        texts=[Reply(text="Hello, front desk.", audio=Tone(0.6, hz=GREETING_HZ))],
        turns=[Reply(text="Sure thing.", audio=Tone(0.8, hz=ANSWER_HZ), heard="can you help me")],
    )
    caplog.set_level(logging.INFO)
    async with openai_line(local_openai, monkeypatch) as line:
        async with line.caller() as call:
            await call.connect()
            await listen_until(call, heard_at_least(GREETING_HZ, 0.6))
            await talk_until_answered(call, 0.6, 0.8)
            await call.stop()

    [session] = local_openai.sessions
    assert session.model_id == MODEL_ID
    assert session.text_inputs == [GREETING]
    audio = session.session["audio"]
    assert audio["input"]["format"] == audio["output"]["format"] == {"type": "audio/pcm", "rate": 24000}
    assert sorted(tool["name"] for tool in session.session["tools"]) == ["end_conversation"]
    # caller audio reached the service at 24 kHz, at the pitch the caller spoke
    assert voiced_seconds(bytes(session.caller_audio), 24000) == pytest.approx(0.6, abs=0.06)
    [turn] = brain.heard
    assert turn.sample_rate == 24000 and abs(dominant_hz(pcm(turn.pcm), 24000) - CALLER_HZ) < 5
    # 24 kHz bot audio reached the caller at 8 kHz, both replies in full, in order
    hz = heard_hz(call)
    assert seconds_of(hz, GREETING_HZ) == pytest.approx(0.6, abs=0.06)
    assert seconds_of(hz, ANSWER_HZ) == pytest.approx(0.8, abs=0.06)
    assert hz.index(GREETING_HZ) < hz.index(ANSWER_HZ)
    assert not call.events("clear") and session.barge_ins == 0
    log = caplog.text
    assert f"openai realtime endpoint: {local_openai.realtime_url}" in log
    assert "model audio | input=24000 Hz output=24000 Hz" in log
    assert "caller said: can you help me" in log and "bot said: Sure thing." in log


async def test_the_endpoint_is_trusted_through_ssl_cert_file_over_tls(monkeypatch: pytest.MonkeyPatch) -> None:
    async with LocalOpenAI(ScriptedBrain(texts=[Reply(text="Hi.", audio=Tone(0.3, hz=GREETING_HZ))]), tls=True) as tls:
        monkeypatch.setenv("OPENAI_BASE_URL", tls.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", tls.api_key)
        monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca_file))
        assert tls.base_url.startswith("https://")
        async with openai_line(tls, monkeypatch) as line:
            async with line.caller() as call:
                await call.connect()
                await listen_until(call, heard_at_least(GREETING_HZ, 0.3))
                await call.stop()
        assert not tls.violations and len(tls.sessions) == 1
    assert seconds_of(heard_hz(call), GREETING_HZ) == pytest.approx(0.3, abs=0.06)


# --- barge-in -----------------------------------------------------------------------------------------


async def test_barge_in_while_the_reply_is_still_generating_clears_the_line(
    local_openai: LocalOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow reply (generated at 1.5x real time) is cancelled by the service: response.done, turn_detected."""
    local_openai.pacing = Pacing(speedup=1.5)
    local_openai.brain = ScriptedBrain(
        texts=[Reply(text="Let me tell you about all our opening hours.", audio=Tone(6.0, hz=LONG_HZ))],
        turns=[Reply(text="Go ahead.", audio=Tone(0.6, hz=ANSWER_HZ), heard="wait a moment")],
    )
    async with openai_line(local_openai, monkeypatch) as line:
        async with line.caller() as call:
            await call.connect()
            await listen_until(call, lambda call: seconds_of(heard_hz(call), LONG_HZ) >= 0.6, then_s=0.0)
            await talk_until_answered(call, 0.5, 0.6)
            await call.stop()

    [session] = local_openai.sessions
    assert session.cancelled == 1 and session.barge_ins == 1
    [clear] = call.events("clear")
    hz = heard_hz(call)
    assert 0.6 <= seconds_of(hz, LONG_HZ) < 2.0  # the caller talked after 0.6 s of it; cut well short of 6 s
    after_clear = [
        round(frame_hz(payload), -2)
        for item in call.received
        if item.at > clear.at and item.message["event"] == "media"
        for payload in [base64.b64decode(item.message["media"]["payload"])]
    ]
    assert set(after_clear) <= {ANSWER_HZ, 0.0}, "stale audio after the clear"
    assert seconds_of(hz, ANSWER_HZ) == pytest.approx(0.6, abs=0.06)


async def test_barge_in_on_a_reply_already_generated_clears_the_line_and_truncates_what_was_not_heard(
    local_openai: LocalOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real service's common case: the reply was generated in full long before it played, so the service says
    only ``speech_started`` (there is nothing to cancel). The caller must still stop hearing it, and the model be
    told how much was heard (``conversation.item.truncate``)."""
    local_openai.pacing = Pacing(speedup=20.0)
    local_openai.brain = ScriptedBrain(
        texts=[Reply(text="Let me tell you about all our opening hours.", audio=Tone(6.0, hz=LONG_HZ))],
        turns=[Reply(text="Go ahead.", audio=Tone(0.6, hz=ANSWER_HZ), heard="wait a moment")],
    )
    async with openai_line(local_openai, monkeypatch) as line:
        async with line.caller() as call:
            await call.connect()
            await listen_until(call, lambda call: seconds_of(heard_hz(call), LONG_HZ) >= 0.6, then_s=0.0)
            await talk_until_answered(call, 0.5, 0.6)
            await call.stop()

    [session] = local_openai.sessions
    assert session.cancelled == 0 and session.barge_ins == 1  # done generating: nothing was cancelled
    [clear] = call.events("clear")
    assert seconds_of(heard_hz(call), LONG_HZ) < 2.0
    after_clear = [
        round(frame_hz(payload), -2)
        for item in call.received
        if item.at > clear.at and item.message["event"] == "media"
        for payload in [base64.b64decode(item.message["media"]["payload"])]
    ]
    assert set(after_clear) <= {ANSWER_HZ, 0.0}, "stale audio after the clear"
    [(_, index, heard_ms)] = session.truncations
    assert index == 0 and 600 <= heard_ms <= 2000


# --- tools and hanging up -----------------------------------------------------------------------------


async def test_end_conversation_round_trip_hangs_up_after_the_goodbye_is_heard(
    local_openai: LocalOpenAI, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    bye = ToolRequest("end_conversation", {"reason": "the caller said goodbye"}, tool_use_id="call_bye")
    local_openai.brain = ScriptedBrain(
        texts=[Reply(text="Hello.", audio=Tone(0.4, hz=GREETING_HZ))],
        turns=[Reply(text="Goodbye, have a lovely day.", audio=Tone(1.0, hz=ANSWER_HZ), tool_uses=(bye,))],
    )
    rest = FakeCallControl()
    caplog.set_level(logging.INFO)
    async with openai_line(local_openai, monkeypatch, rest=rest) as line:
        async with line.caller() as call:
            await call.connect()
            await listen_until(call, heard_at_least(GREETING_HZ, 0.4))
            await talk(call, 0.5, 0.0)
            listening = asyncio.create_task(call.silence(8.0))
            await call.wait_closed(8.0)
            listening.cancel()

    [session] = local_openai.sessions
    [(call_id, output)] = session.tool_results  # the tool ran and its output went back as function_call_output
    assert call_id == "call_bye" and "goodbye has played" in output
    hz = heard_hz(call)
    assert seconds_of(hz, ANSWER_HZ) == pytest.approx(1.0, abs=0.06)
    last_goodbye_frame = max(frame.at for frame in call.heard if round(frame_hz(frame.payload), -2) == ANSWER_HZ)
    [(hung_up_at, sid)] = rest.calls
    assert sid == CALL_SID
    assert last_goodbye_frame < hung_up_at - call.started < last_goodbye_frame + 1.5
    assert "agent ended the call (the caller said goodbye)" in caplog.text


async def test_a_refused_transfer_is_told_to_the_model_which_answers_after_the_tool(
    local_openai: LocalOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    transfer = ToolRequest("transfer_call", {"reason": "the caller asked for a person"})
    local_openai.brain = brain = ScriptedBrain(
        texts=[
            Reply(text="Let me put you through.", audio=Tone(0.4, hz=GREETING_HZ), tool_uses=(transfer,)),
            Reply(text="Sorry, nobody is free. Can I help?", audio=Tone(0.6, hz=ANSWER_HZ)),
        ]
    )
    rest = FakeCallControl(error=RuntimeError("Twilio refused the redirect"))
    async with openai_line(local_openai, monkeypatch, rest=rest, transfer_to="+15550003333") as line:
        async with line.caller() as call:
            await call.connect()
            await call.silence(3.0)
            await call.stop()

    assert len(rest.redirects) == 1
    [(_, name, _)] = brain.tool_results  # the tool's output went back first...
    assert name == "transfer_call"
    assert brain.texts[1].startswith("The transfer failed")  # ...then the refusal, as a note the model answers
    assert seconds_of(heard_hz(call), ANSWER_HZ) == pytest.approx(0.6, abs=0.06)


async def test_keypresses_and_answering_machine_notes_reach_the_model_as_text(
    local_openai: LocalOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_openai.brain = ScriptedBrain(
        texts=[
            Reply(text="Hello.", audio=Tone(0.3, hz=GREETING_HZ)),
            Reply(text="Five.", audio=Tone(0.3, hz=ANSWER_HZ)),
        ]
    )
    async with openai_line(local_openai, monkeypatch) as line:
        async with line.caller() as call:
            await call.connect()
            await listen_until(call, heard_at_least(GREETING_HZ, 0.3))
            await call.dtmf("5")
            await call.silence(0.8)
            assert (await line.post("/status/amd", AnsweredBy="machine_end_beep")).status_code == 204
            await call.silence(0.6)
            await call.stop()

    [session] = local_openai.sessions
    assert session.text_inputs[:2] == [GREETING, "The caller pressed 5 on their keypad."]
    assert session.text_inputs[2].startswith("Answering machine detection: this call was answered by a machine")
    assert seconds_of(heard_hz(call), ANSWER_HZ) == pytest.approx(0.3, abs=0.06)


async def test_the_connection_opened_at_the_webhook_is_the_one_the_call_uses(
    local_openai: LocalOpenAI, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    local_openai.brain = ScriptedBrain(texts=[Reply(text="Hello.", audio=Tone(0.4, hz=GREETING_HZ))])
    caplog.set_level(logging.INFO)
    async with openai_line(local_openai, monkeypatch, prewarm=True) as line:
        assert (await line.post("/twiml", From="+15550001111")).status_code == 200
        await local_openai.wait_for_sessions(1)  # connected before the stream exists
        await asyncio.sleep(0.5)
        async with line.caller() as call:
            await call.connect()
            await call.silence(1.0)
            await call.stop()

    assert len(local_openai.sessions) == 1 and local_openai.sessions[0].text_inputs == [GREETING]
    assert seconds_of(heard_hz(call), GREETING_HZ) == pytest.approx(0.4, abs=0.06)
    assert min(frame.at for frame in call.heard if frame_hz(frame.payload)) < 0.5
    assert f"agent started | model={MODEL_ID} (pre-warmed)" in caplog.text


# --- faults: the caller hears the apology, the log says what to do -----------------------------------


@pytest.mark.parametrize(
    ("setup", "logged"),
    [
        ("bad-key", "what to do: OpenAI rejected the API key: check OPENAI_API_KEY"),
        ("rate-limit", "rate_limit_exceeded: Rate limit reached for requests. Please try again later. | what to do: "
         "OpenAI is limiting this key (rate_limit_exceeded)"),
        ("no-such-model", "model_not_found: The model does not exist or you do not have access to it. | what to do: "
         "OpenAI does not offer gpt-nope to this key: check VOICEBOT_MODEL_ID"),
    ],
)  # fmt: skip
async def test_service_errors_get_the_apology_and_an_operator_hint(
    local_openai: LocalOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    setup: str,
    logged: str,
) -> None:
    local_openai.brain = ScriptedBrain(texts=[Reply(text="Hello.", audio=Tone(0.4, hz=GREETING_HZ))])
    overrides: dict[str, Any] = {}
    if setup == "bad-key":
        monkeypatch.setenv("OPENAI_API_KEY", "sk-not-the-right-key")
    elif setup == "rate-limit":
        local_openai.faults.push(Fault.rate_limited())
    else:
        overrides["model_id"] = "gpt-nope"
    rest = FakeCallControl()
    caplog.set_level(logging.INFO)
    async with openai_line(local_openai, monkeypatch, rest=rest, **overrides) as line:
        call = await call_until_hung_up(line)

    assert heard_the_apology(call) and len(rest.calls) == 1
    assert seconds_of(heard_hz(call), GREETING_HZ) == 0
    failures = [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR]
    failures = [failure for failure in failures if failure.startswith(f"call={CALL_SID} | agent failed")]
    assert len(failures) == 1 and logged in failures[0], failures
    assert (local_openai.refused == ["invalid_api_key"]) == (setup == "bad-key")


# --- the session limit ---------------------------------------------------------------------------------


async def test_the_session_limit_restarts_the_model_with_the_history_and_the_call_goes_on(
    local_openai: LocalOpenAI, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The service's hour, at 2.4 s: it says ``session_expired``; strands reconnects and replays the history."""
    local_openai.limits = SessionLimits(session_limit_s=2.4)
    local_openai.brain = ScriptedBrain(
        texts=[Reply(text="Hello.", audio=Tone(0.4, hz=GREETING_HZ))],
        turns=[Reply(text="Still here.", audio=Tone(0.5, hz=ANSWER_HZ), heard="are you still there")],
    )
    caplog.set_level(logging.INFO)
    async with openai_line(local_openai, monkeypatch) as line:
        async with line.caller() as call:
            await call.connect()
            await call.silence(3.2)
            await talk(call, 0.5, 0.0)
            await listen_until(call, lambda call: seconds_of(heard_hz(call), ANSWER_HZ) >= 0.46)
            await call.stop()

    first, second = local_openai.sessions[:2]
    assert first.ended_by == "session limit"
    assert ("assistant", "Hello.") in second.history  # the conversation so far, replayed
    assert seconds_of(heard_hz(call), ANSWER_HZ) == pytest.approx(0.5, abs=0.06)
    assert seconds_of(heard_hz(call), GREETING_HZ) == pytest.approx(0.4, abs=0.06)  # not greeted twice
    assert not heard_the_apology(call)
    assert "model connection being replaced (#1, it timed out" in caplog.text

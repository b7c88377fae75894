"""The local Gemini Live on its own: what it refuses, how it answers, and its clock, with a raw WebSocket client;
its faults as strands' own Gemini Live model meets them."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import ssl
import time
from typing import Any

import numpy as np
import pytest
from google.genai import errors
from strands.bidi.types import BidiMessage, BidiResponseStopEvent
from strands.bidi.types.media import AudioDelta
from strands.types.content import TextBlock
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from agent.gemini import GeminiLiveModel
from telephony.simulation.local_gemini import Fault, LocalGemini, Reply, ScriptedBrain, TimeLimits, Tone, ToolRequest
from telephony.simulation.local_nova import SetupDelay

from ..waiting import until
from .stream_events import audio_s, received_within

PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
SETUP = {
    "setup": {
        "model": "models/gemini-live-2.5-flash-preview",
        "generationConfig": {"responseModalities": ["AUDIO"]},
        "sessionResumption": {},
        "inputAudioTranscription": {},
        "outputAudioTranscription": {},
    }
}


def tls(gemini: LocalGemini) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(gemini.ca_file))


async def open_live(gemini: LocalGemini, setup: Any = SETUP, path: str = PATH, key: str = "k") -> ClientConnection:
    url = gemini.base_url.replace("https://", "wss://") + path
    websocket = await connect(url, ssl=tls(gemini), additional_headers={"x-goog-api-key": key} if key else {})
    await websocket.send(json.dumps(setup))
    return websocket


async def messages_until(websocket: ClientConnection, kind: str, timeout: float = 5.0) -> list[dict[str, Any]]:
    """Server messages up to and including the first whose content holds ``kind``."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        message = json.loads(await websocket.recv())
        seen.append(message)
        if kind in message or kind in message.get("serverContent", {}):
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"no {kind} in {seen}")


async def closed_with(websocket: ClientConnection) -> tuple[int | None, str]:
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            await websocket.recv()
    received = closed.value.rcvd
    return (received.code, received.reason) if received else (None, "")


def tone_16k(seconds: float, hz: float = 300.0) -> bytes:
    t = np.arange(int(seconds * 16000)) / 16000
    return (0.3 * 32767 * np.sin(2 * math.pi * hz * t)).astype("<i2").tobytes()


def audio_message(pcm: bytes, urlsafe: bool = True) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    blob = {"data": encode(pcm).decode(), "mime_type": "audio/pcm;rate=16000"}
    return json.dumps({"realtime_input": {"audio": blob}})


async def test_setup_complete_then_a_resumption_handle(local_gemini: LocalGemini) -> None:
    websocket = await open_live(local_gemini)
    assert json.loads(await websocket.recv()) == {"setupComplete": {}}
    update = json.loads(await websocket.recv())["sessionResumptionUpdate"]
    assert update["resumable"] is True and update["newHandle"] in local_gemini.handles
    await websocket.close()


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ({"setup": {**SETUP["setup"], "generationConfig": {"responseModalities": ["TEXT"]}}}, "[AUDIO]"),
        ({"setup": {**SETUP["setup"], "model": "gemini-live"}}, "models/<id>"),
        ({"setup": {**SETUP["setup"], "voice": "Puck"}}, 'Unknown name "voice"'),
        ({"realtimeInput": {}}, "exactly one setup"),
    ],
    ids=["text-modality", "bare-model", "unknown-field", "no-setup"],
)
async def test_a_bad_setup_is_closed_with_1007_and_recorded(
    local_gemini: LocalGemini, setup: dict[str, Any], reason: str
) -> None:
    websocket = await open_live(local_gemini, setup)
    code, said = await closed_with(websocket)
    assert code == 1007 and reason in said
    [violation] = local_gemini.take_violations()
    assert reason in violation


async def test_an_unknown_path_is_a_404_and_a_violation(local_gemini: LocalGemini) -> None:
    with pytest.raises(InvalidStatus, match="404"):
        await open_live(local_gemini, path="/ws/google.ai.generativelanguage.v1.GenerativeService.Nothing")
    assert "unknown path" in local_gemini.take_violations()[0]


async def test_refusals_close_after_the_setup_as_the_service_does(local_gemini: LocalGemini) -> None:
    assert (await closed_with(await open_live(local_gemini, key="")))[0] == 1008  # no key at all
    local_gemini.api_keys = {"right"}
    code, reason = await closed_with(await open_live(local_gemini, key="wrong"))
    assert (code, reason) == (1007, "API key not valid. Please pass a valid API key.")
    local_gemini.api_keys = None
    local_gemini.faults.push(Fault.model_not_found("gemini-live-2.5-flash-preview"))
    code, reason = await closed_with(await open_live(local_gemini))
    assert code == 1008 and "is not found for API version v1beta" in reason
    unknown = {"setup": {**SETUP["setup"], "sessionResumption": {"handle": "nobody-issued-this"}}}
    assert (await closed_with(await open_live(local_gemini, unknown)))[0] == 1008
    assert not local_gemini.violations


async def test_caller_speech_is_answered_and_talking_over_the_answer_interrupts_it(local_gemini: LocalGemini) -> None:
    local_gemini.brain = ScriptedBrain(turns=[Reply(text="A long answer.", audio=Tone(3.0), heard="hello")])
    websocket = await open_live(local_gemini)
    await messages_until(websocket, "sessionResumptionUpdate")
    await websocket.send(audio_message(tone_16k(0.4), urlsafe=False))  # standard base64 is taken too
    await websocket.send(audio_message(bytes(32000)))  # 1 s of silence ends the turn
    answer = await messages_until(websocket, "modelTurn")
    assert {"serverContent": {"inputTranscription": {"text": "hello"}}} in answer
    inline = answer[-1]["serverContent"]["modelTurn"]["parts"][0]["inlineData"]
    assert inline["mimeType"] == "audio/pcm;rate=24000"
    await websocket.send(audio_message(tone_16k(0.2)))  # the answer is still playing at the caller's end
    after = await messages_until(websocket, "interrupted")
    assert {"serverContent": {"turnComplete": True}} not in after
    assert json.loads(await websocket.recv()) == {"serverContent": {"turnComplete": True}}
    await websocket.close()
    [record] = local_gemini.sessions
    await until(lambda: record.ended_by is not None, what="the connection to end")
    assert record.barge_ins == 1 and record.caller_sample_rate == 16000 and record.urlsafe_audio


async def test_a_tool_call_waits_for_its_response_and_a_wrong_id_is_a_violation(local_gemini: LocalGemini) -> None:
    lookup = ToolRequest("lookup", {"q": "hours"}, tool_use_id="function-call-1")
    local_gemini.brain = ScriptedBrain(
        texts=[Reply(text="Let me look.", audio=Tone(0.1), tool_uses=(lookup,))],
        tool_results=[Reply(text="Nine to five.", audio=Tone(0.1))],
    )
    websocket = await open_live(local_gemini)
    turn = {"turns": [{"role": "user", "parts": [{"text": "hours?"}]}], "turn_complete": True}
    await websocket.send(json.dumps({"client_content": turn}))
    [*_, call] = await messages_until(websocket, "toolCall")
    assert call["toolCall"]["functionCalls"] == [{"id": "function-call-1", "name": "lookup", "args": {"q": "hours"}}]
    response = {"id": "function-call-1", "name": "lookup", "response": {"result": "9-5"}}
    await websocket.send(json.dumps({"tool_response": {"functionResponses": [response]}}))
    finished = await messages_until(websocket, "turnComplete")
    assert any("outputTranscription" in message.get("serverContent", {}) for message in finished)
    await websocket.send(json.dumps({"tool_response": {"functionResponses": [response]}}))  # answered already
    code, reason = await closed_with(websocket)
    assert code == 1007 and "answers no open function call" in reason
    assert "answers no open function call" in local_gemini.take_violations()[0]


async def test_go_away_comes_before_the_connection_limit(local_gemini: LocalGemini) -> None:
    # A 120 s limit at 1/120 speed: one real second, the notice 0.42 s before it. (At 1/600 a busy machine's 21 ms
    # of lateness read as 13 s of notice lost.)
    local_gemini.limits = TimeLimits(connection_limit_s=120, go_away_notice_s=50, time_scale=1 / 120)
    websocket = await open_live(local_gemini)
    opened = time.monotonic()
    [*_, go_away] = await messages_until(websocket, "goAway")
    assert 0.55 < time.monotonic() - opened < 0.75
    assert float(go_away["goAway"]["timeLeft"].removesuffix("s")) == pytest.approx(50, abs=10)
    assert (await closed_with(websocket))[0] == 1000
    assert 0.95 < time.monotonic() - opened < 1.3
    assert local_gemini.sessions[0].ended_by == "connection limit"


@pytest.mark.parametrize("how", ["fault", "now"])
async def test_go_away_can_come_sooner_than_the_limit(local_gemini: LocalGemini, how: str) -> None:
    """A queued ``Fault.go_away`` or ``go_away(index)``: the limit's notice early, then the close when it runs out."""
    local_gemini.limits = TimeLimits(connection_limit_s=600, go_away_notice_s=50, time_scale=1 / 100)
    if how == "fault":
        local_gemini.faults.push(Fault.go_away(0.3))
    websocket = await open_live(local_gemini)
    await messages_until(websocket, "setupComplete")
    opened = time.monotonic()
    if how == "now":
        assert local_gemini.go_away(0) and not local_gemini.go_away(1)  # only an open connection can be told
    [*_, go_away] = await messages_until(websocket, "goAway")
    told = time.monotonic()
    assert (0.25 if how == "fault" else 0.0) < told - opened < 0.45  # not 5.5 s, the limit's
    assert float(go_away["goAway"]["timeLeft"].removesuffix("s")) == pytest.approx(50, abs=5)
    assert (await closed_with(websocket))[0] == 1000
    assert 0.45 < time.monotonic() - told < 0.8  # when the 50 s notice (0.5 s here) ran out
    assert local_gemini.sessions[0].sent.count("goAway") == 1


async def test_a_slow_set_up_holds_back_setup_complete(local_gemini: LocalGemini) -> None:
    local_gemini.setup_delay = SetupDelay(fixed_s=0.4)
    started = time.monotonic()
    websocket = await open_live(local_gemini)
    await messages_until(websocket, "setupComplete")
    assert time.monotonic() - started >= 0.4  # held back (no upper bound: a loaded machine adds its own delay)
    assert local_gemini.setup_delay.drawn == [0.4]
    await websocket.close()


# --- faults seen through strands' own Gemini Live model (google-genai underneath) -------------------------------

MODEL_ID = "gemini-live-2.5-flash-preview"


async def started(gemini: LocalGemini, fault: Fault) -> GeminiLiveModel:
    """strands' model on a connection with ``fault``, asked for a greeting of 2 s."""
    gemini.faults.push(fault)
    gemini.brain = ScriptedBrain(default=Reply(text="A long answer.", audio=Tone(2.0)))
    model = GeminiLiveModel(model_id=MODEL_ID)
    await model.start(system_prompt="test")
    await model.send(BidiMessage(content=[TextBlock(text="Greet")]))
    return model


async def test_a_throttled_open_is_closed_with_1011_at_set_up(local_gemini: LocalGemini) -> None:
    local_gemini.faults.push(Fault.throttled_open())
    model = GeminiLiveModel(model_id=MODEL_ID)
    with pytest.raises(errors.APIError) as refused:
        await model.start(system_prompt="test")
    assert refused.value.code == 1011 and "exceeded your current quota" in str(refused.value)
    assert local_gemini.sessions[0].sent == [] and not local_gemini.faults


async def test_never_answers_completes_the_set_up_then_says_nothing(local_gemini: LocalGemini) -> None:
    model = await started(local_gemini, Fault.never_answers())
    try:
        events = await received_within(model, 1.0)
        await model.send(AudioDelta(format="pcm", source={"bytes": tone_16k(0.5) + bytes(32000)}))
        await until(lambda: local_gemini.sessions[0].caller_audio, timeout=2, what="the audio to be read")
    finally:
        await model.stop()
    assert [event["type"] for event in events] == ["bidi_connection_start"]  # strands' own, then nothing
    [record] = local_gemini.sessions
    assert record.sent == ["setupComplete", "sessionResumptionUpdate"] and record.text_inputs == ["Greet"]


async def test_a_stall_mid_answer_sends_some_audio_then_nothing_and_keeps_reading(local_gemini: LocalGemini) -> None:
    model = await started(local_gemini, Fault.stall_mid_answer(audio_s=0.5))
    try:
        events = await received_within(model, 1.5)  # 2 s of audio at 4x would be done in 0.5 s
        await model.send(BidiMessage(content=[TextBlock(text="Hello?")]))
        [record] = local_gemini.sessions
        await until(lambda: record.text_inputs == ["Greet", "Hello?"], timeout=2, what="the input to be read")
    finally:
        await model.stop()
    assert 0.5 <= audio_s(events, 24000) < 0.6  # the first 0.5 s (whole 40 ms chunks) of the answer, then nothing
    assert not [event for event in events if isinstance(event, BidiResponseStopEvent)]
    assert record.sent[-1] == "serverContent" and "usageMetadata" not in record.sent
    assert record.ended_by == "fault: stall mid-answer"


async def test_close_mid_answer_closes_with_1011(local_gemini: LocalGemini) -> None:
    model = await started(local_gemini, Fault.close_mid_answer(audio_s=0.3))
    events: list[Any] = []
    try:
        with pytest.raises(errors.APIError) as closed:
            async with asyncio.timeout(2):
                async for event in model.receive():
                    events.append(event)
    finally:
        await model.stop()
    assert closed.value.code == 1011 and "Internal error encountered." in str(closed.value)
    assert 0.3 <= audio_s(events, 24000) < 0.4
    assert local_gemini.sessions[0].ended_by == "fault: close mid-answer"

"""The local OpenAI Realtime on its own: its strict checks, barge-in both ways, truncation, faults, process mode."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import math
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
import pytest
from strands.bidi.types import BidiAudioStartEvent, BidiResponseStopEvent
from strands.bidi.types.content import BidiMessage, TextBlock
from strands.bidi.types.media import AudioDelta
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedError, InvalidStatus

from agent.openai import OpenAIRealtime
from telephony.simulation.local_nova import Pacing, Reply, ScriptedBrain, SetupDelay, Tone
from telephony.simulation.local_openai import Fault, LocalOpenAI

from ..waiting import until
from .stream_events import audio_s, received_within

SESSION = {
    "type": "realtime",
    "audio": {
        "input": {"format": {"type": "audio/pcm", "rate": 24000}, "turn_detection": {"type": "server_vad"}},
        "output": {"format": {"type": "audio/pcm", "rate": 24000}},
    },
}


@asynccontextmanager
async def raw(server: LocalOpenAI, key: str | None = None) -> AsyncIterator[ClientConnection]:
    headers = [("Authorization", f"Bearer {key or server.api_key}")]
    async with connect(f"{server.realtime_url}?model=gpt-realtime", additional_headers=headers) as websocket:
        yield websocket


async def next_of(websocket: ClientConnection, kind: str, timeout: float = 3.0) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            event = json.loads(await websocket.recv())
            if event["type"] == kind:
                return event


@pytest.mark.parametrize(
    ("events", "violation"),
    [
        ([{"type": "input_audio_buffer.append", "audio": "AAAA"}], "before session.update"),
        ([{"type": "session.update", "session": {**SESSION, "type": "transcription"}}], "session.type"),
        ([{"type": "session.update", "session": {**SESSION, "voice": "alloy"}}], "unknown session fields"),
        ([{"type": "session.update", "session": SESSION}, {"type": "response.cancel.all"}], "unknown client event"),
        ([{"type": "session.update", "session": SESSION}, {"type": "input_audio_buffer.append", "audio": "AAA"}],
         "base64"),
        ([{"type": "session.update", "session": SESSION},
          {"type": "conversation.item.create", "item": {"type": "function_call_output", "call_id": "c", "output": ""}}],
         "no function_call with call_id c"),
        ([{"type": "session.update", "session": SESSION},
          {"type": "conversation.item.truncate", "item_id": "item_x", "content_index": 0, "audio_end_ms": 0}],
         "item item_x does not exist"),
    ],
)  # fmt: skip
async def test_a_breach_gets_an_error_event_and_is_recorded(
    local_openai: LocalOpenAI, events: list[dict[str, Any]], violation: str
) -> None:
    async with raw(local_openai) as websocket:
        for event in events:
            await websocket.send(json.dumps(event))
        error = await next_of(websocket, "error")
    assert violation in error["error"]["message"]
    [recorded] = local_openai.take_violations()
    assert violation in recorded


async def test_a_wrong_key_is_refused_at_the_handshake_with_401(local_openai: LocalOpenAI) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with raw(local_openai, key="sk-wrong"):
            pass
    assert refused.value.response.status_code == 401
    assert json.loads(refused.value.response.body)["error"]["code"] == "invalid_api_key"


async def test_a_throttled_open_is_refused_at_the_handshake_with_429(local_openai: LocalOpenAI) -> None:
    local_openai.faults.push(Fault.throttled_open())
    model = OpenAIRealtime(model_id="gpt-realtime", transcription_model_id="gpt-4o-transcribe")
    with pytest.raises(InvalidStatus) as refused:
        await model.start(system_prompt="test")
    assert refused.value.response.status_code == 429
    assert json.loads(refused.value.response.body)["error"] == {
        "message": "Rate limit reached for requests. Please try again later.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    assert "OpenAI is limiting this key (rate_limit_exceeded)" in refused.value.__notes__[0]
    assert local_openai.refused == ["rate_limit_exceeded"] and not local_openai.sessions
    async with raw(local_openai):  # the fault was the next connection's only
        pass
    assert len(local_openai.sessions) == 1


async def started(server: LocalOpenAI, fault: Fault, reply_s: float = 2.0) -> OpenAIRealtime:
    """strands' model on a session with ``fault``, asked for a greeting of ``reply_s`` seconds."""
    server.faults.push(fault)
    server.brain = ScriptedBrain(default=Reply(text="A long answer.", audio=Tone(reply_s)))
    model = OpenAIRealtime(model_id="gpt-realtime", transcription_model_id="gpt-4o-transcribe")
    await model.start(system_prompt="test")
    await model.send(BidiMessage(content=[TextBlock(text="Greet")]))
    return model


async def test_never_answers_sets_up_the_session_then_says_nothing(local_openai: LocalOpenAI) -> None:
    model = await started(local_openai, Fault.never_answers())
    try:
        events = await received_within(model, 1.0)
        await model.send(AudioDelta(format="pcm", source={"bytes": tone(0.5) + bytes(48000)}))
        await until(lambda: local_openai.sessions[0].caller_audio, timeout=2, what="the audio to be read")
    finally:
        await model.stop()
    assert [event["type"] for event in events] == ["bidi_connection_start"]  # strands' own, then nothing
    [session] = local_openai.sessions
    assert session.sent == ["session.created", "session.updated"]
    assert {"conversation.item.create", "response.create"} <= set(session.event_types())  # read, not answered


async def test_a_stall_mid_answer_sends_some_audio_then_no_event_and_keeps_reading(local_openai: LocalOpenAI) -> None:
    model = await started(local_openai, Fault.stall_mid_answer(audio_s=0.5))
    try:
        events = await received_within(model, 1.5)  # 2 s of audio at 4x would be done in 0.5 s
        await model.send(BidiMessage(content=[TextBlock(text="Hello?")]))
        [session] = local_openai.sessions
        await until(lambda: session.history[-1:] == [("user", "Hello?")], timeout=2, what="the input")
    finally:
        await model.stop()
    assert 0.5 <= audio_s(events, 24000) < 0.6  # the first 0.5 s (whole 40 ms chunks) of the answer, then nothing
    assert not [event for event in events if isinstance(event, BidiResponseStopEvent)]
    assert session.sent[-1] == "response.output_audio.delta" and session.ended_by == "fault: stall mid-answer"


async def test_close_mid_answer_closes_with_1011_and_no_error_event(local_openai: LocalOpenAI) -> None:
    model = await started(local_openai, Fault.close_mid_answer(audio_s=0.3))
    events: list[Any] = []
    try:
        with pytest.raises(ConnectionClosedError) as closed:
            async with asyncio.timeout(2):
                async for event in model.receive():
                    events.append(event)
    finally:
        await model.stop()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011
    assert 0.3 <= audio_s(events, 24000) < 0.4
    [session] = local_openai.sessions
    assert "error" not in session.sent and session.sent[-1] == "response.output_audio.delta"
    assert session.ended_by == "fault: close mid-answer"


def tone(seconds: float, hz: float = 300.0) -> bytes:
    t = np.arange(int(seconds * 24000)) / 24000
    return (0.3 * 32767 * np.sin(2 * math.pi * hz * t)).astype("<i2").tobytes()


async def stream(model: OpenAIRealtime, pcm: bytes) -> None:
    for offset in range(0, len(pcm), 2400):  # 50 ms chunks, at 10x real time
        chunk = pcm[offset : offset + 2400]
        await model.send(AudioDelta(format="pcm", source={"bytes": chunk}))
        await asyncio.sleep(0.005)


async def test_talking_over_a_reply_already_generated_gets_only_speech_started_and_truncate_trims_it(
    local_openai: LocalOpenAI,
) -> None:
    """The service's common case: the reply is done long before it has played; nothing is cancelled."""
    local_openai.pacing = Pacing(speedup=20.0)
    local_openai.brain = ScriptedBrain(texts=[Reply(text="A long story.", audio=Tone(4.0))])
    model = OpenAIRealtime(model_id="gpt-realtime", transcription_model_id="gpt-4o-transcribe")
    await model.start(system_prompt="test")
    try:
        await model.send(BidiMessage(content=[TextBlock(text="Greet")]))
        events = model.receive()
        content_id = None
        async for event in events:
            if isinstance(event, BidiAudioStartEvent):
                content_id = event.content_id
            if isinstance(event, BidiResponseStopEvent):
                break
        assert content_id is not None
        # the caller talks while 4 s of it would still be playing (0.4 s of quiet after: less than the 0.5 s that
        # ends a turn, strands' silence_duration_ms)
        await stream(model, tone(0.3) + bytes(19200))
        await asyncio.sleep(0.3)
        [session] = local_openai.sessions
        assert session.barge_ins == 1 and session.cancelled == 0
        assert "input_audio_buffer.speech_started" in session.sent
        assert session.sent.count("response.done") == 1  # the reply's own; no cancelled one
        await model.audio_heard(content_id, 900)
        await model.audio_heard(content_id, 60_000)  # more than it has: clamped to the 4 s generated
        await model.audio_heard("unknown-content", 100)  # an answer it does not know: nothing sent
        await asyncio.sleep(0.2)
        assert [(index, end) for _, index, end in session.truncations] == [(0, 900), (0, 900)]
        await events.aclose()
    finally:
        await model.stop()


async def append(websocket: ClientConnection, pcm: bytes) -> None:
    """Caller audio in 50 ms appends, at 5x real time."""
    for offset in range(0, len(pcm), 2400):
        audio = base64.b64encode(pcm[offset : offset + 2400]).decode()
        await websocket.send(json.dumps({"type": "input_audio_buffer.append", "audio": audio}))
        await asyncio.sleep(0.01)


def with_silence_ms(silence_ms: int) -> dict[str, Any]:
    vad = {"type": "server_vad", "silence_duration_ms": silence_ms}
    return {**SESSION, "audio": {**SESSION["audio"], "input": {**SESSION["audio"]["input"], "turn_detection": vad}}}


@pytest.mark.parametrize(("silence_ms", "ends"), [(300, True), (800, False)])
async def test_the_vad_ends_a_turn_after_the_sessions_silence_duration(
    local_openai: LocalOpenAI, silence_ms: int, ends: bool
) -> None:
    """0.5 s of quiet after speech ends a turn for a session asking for 300 ms, not for one asking for 800 ms."""
    local_openai.brain = ScriptedBrain()  # a turn gets no answer: only the VAD's events are looked at
    async with raw(local_openai) as websocket:
        await websocket.send(json.dumps({"type": "session.update", "session": with_silence_ms(silence_ms)}))
        await append(websocket, tone(0.4) + bytes(24000))
        await asyncio.sleep(0.2)
    assert ("input_audio_buffer.speech_stopped" in local_openai.sessions[0].sent) == ends
    assert "input_audio_buffer.speech_started" in local_openai.sessions[0].sent


async def test_a_late_transcript_comes_even_when_the_caller_cuts_the_response_off(local_openai: LocalOpenAI) -> None:
    """The service transcribes beside the response: cancelling the response does not lose the caller's words."""
    local_openai.late_transcripts = True
    local_openai.pacing = Pacing(speedup=1.0)  # slow enough to talk over while it is being made
    local_openai.brain = ScriptedBrain(turns=[Reply(text="A long story.", audio=Tone(3.0), heard="tell me a story")])
    async with raw(local_openai) as websocket:
        await websocket.send(json.dumps({"type": "session.update", "session": SESSION}))
        await append(websocket, tone(0.4) + bytes(36000))
        await next_of(websocket, "response.output_audio.delta")
        await append(websocket, tone(0.3))
        done = await next_of(websocket, "response.done")
        transcript = await next_of(websocket, "conversation.item.input_audio_transcription.completed")
    assert done["response"]["status"] == "cancelled"
    assert transcript["transcript"] == "tell me a story"


@pytest.mark.parametrize("how", ["fault", "now"])
async def test_a_session_can_expire_sooner_than_its_limit(local_openai: LocalOpenAI, how: str) -> None:
    """A queued ``Fault.expires`` or ``expire_session(index)``: ``session_expired`` as at the limit, then the close."""
    if how == "fault":
        local_openai.faults.push(Fault.expires(0.3))
    async with raw(local_openai) as websocket:
        opened = asyncio.get_running_loop().time()
        await websocket.send(json.dumps({"type": "session.update", "session": SESSION}))
        await next_of(websocket, "session.updated")
        if how == "now":
            assert local_openai.expire_session(0) and not local_openai.expire_session(1)
        error = await next_of(websocket, "error")
        expired_after = asyncio.get_running_loop().time() - opened
    assert error["error"]["code"] == "session_expired"
    assert (0.25 if how == "fault" else 0.0) < expired_after < 0.6  # not the hour of the limit
    assert local_openai.sessions[0].ended_by == ("expired early" if how == "now" else "session limit")


async def test_a_slow_set_up_holds_back_the_handshake(
    local_openai: LocalOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    local_openai.setup_delay = SetupDelay(fixed_s=0.4)
    started = asyncio.get_running_loop().time()
    async with raw(local_openai):
        assert 0.4 <= asyncio.get_running_loop().time() - started < 1.0
    assert local_openai.setup_delay.drawn == [0.4]
    # a client that gives up during the set-up (a call ending mid-swap) leaves nothing to answer, and no error
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1), raw(local_openai):
            pass
    await asyncio.sleep(0.5)
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert len(local_openai.sessions) == 1


def test_process_mode_serves_until_told_to_stop(tmp_path: Any) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "telephony.simulation.local_openai", "--tls", "--ca-out", str(tmp_path / "ca.pem")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("LOCAL_OPENAI_BASE_URL=https://127.0.0.1:") and line.endswith("/v1")
        assert process.stdout.readline().startswith("LOCAL_OPENAI_API_KEY=")
        assert (tmp_path / "ca.pem").read_text().startswith("-----BEGIN CERTIFICATE-----")
    finally:
        process.terminate()
        assert process.wait(10) == 0


async def test_voicebot_serve_model_openai_talks_to_the_local_server_and_logs_its_endpoint(
    local_openai: LocalOpenAI, tmp_path: Any
) -> None:
    """`voicebot serve --model openai`, run as a user would, with OPENAI_BASE_URL and the key: a call is greeted
    by the local server, and the start-up log names the endpoint calls will use."""
    from telephony.simulation.caller.simulated_caller import SimulatedCaller, answer

    from ..operations.server_process import wait_until_healthy
    from ..ports import free_port

    local_openai.brain = ScriptedBrain(texts=[Reply(text="Hello from the local OpenAI.", audio=Tone(0.8))])
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("VOICEBOT_", "AWS_", "TWILIO_"))}
    log_path = tmp_path / "serve.log"
    argv = [sys.executable, "-m", "telephony.cli", "serve", "--model", "openai", "--port", str(port)]
    with log_path.open("w") as log_file:
        server = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=log_file, stderr=subprocess.STDOUT)
    try:
        await wait_until_healthy(server, f"http://127.0.0.1:{port}/health", log=log_path)
        assert (
            f"calls will use: model=openai model_id=gpt-realtime voice=alloy endpoint={local_openai.realtime_url}"
            in (log_path.read_text())
        )
        target = await answer(f"http://127.0.0.1:{port}", {"CallSid": "CA" + "8" * 32, "From": "+15550100"})
        url = target.url.replace("wss://", "ws://", 1)
        async with SimulatedCaller(url, call_sid="CA" + "8" * 32, parameters=target.parameters) as caller:
            await caller.connect()
            for _ in range(20):
                await caller.silence(0.3)
                if len(caller.heard) >= 40 and not caller.playing:
                    break
            await caller.stop()
        assert len(caller.heard) >= 38, "the greeting was not heard"  # 0.8 s is 40 frames of 20 ms
        await asyncio.sleep(0.3)
        assert f"openai realtime endpoint: {local_openai.realtime_url}" in log_path.read_text()
        assert local_openai.sessions and local_openai.sessions[0].text_inputs
    finally:
        server.terminate()
        server.wait(timeout=15)

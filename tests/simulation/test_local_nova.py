"""The real strands ``BedrockNovaSonicModel`` (AWS SDK, CRT HTTP/2 client) inside a real ``BidiAgent``,
talking to the local Nova over TLS on 127.0.0.1: what the bridge can rely on, measured end to end."""

from __future__ import annotations

import asyncio
import base64
import math
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from aws_sdk_bedrock_runtime.models import AccessDeniedException, ThrottlingException, ValidationException
from strands import tool
from strands.bidi import BidiAgent
from strands.bidi.types import (
    AudioDelta,
    BidiAudioDeltaEvent,
    BidiAudioStopEvent,
    BidiBargeInEvent,
    BidiConnectionRestartEvent,
    BidiResponseStopEvent,
    BidiUsageEvent,
)

from agent.bedrock_endpoint import BedrockEndpoint
from agent.crt_loop import shared_event_loop
from agent.models import create_model
from agent.nova.crt_body import BodySink
from telephony.config import Settings
from telephony.simulation.local_nova import (
    INTERRUPTED_MARKER,
    Fault,
    LocalNova,
    Pacing,
    Reply,
    ScriptedBrain,
    TimeLimits,
    Tone,
    ToolRequest,
)
from telephony.simulation.local_nova.framing import EnvelopeReader, encode_client_envelope, encode_end_of_input
from telephony.simulation.local_nova.raw_client import RawNovaClient

from ..waiting import until
from .stream_events import audio_s, received_within

MODEL_ID = "amazon.nova-2-sonic-v1:0"
FRAME_S = 0.02


def nova_agent(output_rate: int = 16000, tools: list[Any] | None = None) -> BidiAgent:
    """The project's own Nova model (agent.models), configured only through the environment."""
    model = create_model(Settings(model="nova", model_id=MODEL_ID, aws_region="us-east-1"))
    model._resolve_audio_config({"input": {"sample_rate": 16000}, "output": {"sample_rate": output_rate}})
    return BidiAgent(model=model, tools=tools or [], system_prompt="You answer the phone.")


def tone(seconds: float, rate: int = 16000, hz: float = 300.0, amplitude: int = 6000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    return (amplitude * np.sin(2 * math.pi * hz * t)).astype("<i2").tobytes()


async def speak(agent: BidiAgent, pcm: bytes, rate: int = 16000) -> None:
    """Caller audio in 20 ms frames, as the bridge sends it (faster than real time: the VAD counts samples)."""
    frame = int(rate * FRAME_S) * 2
    for offset in range(0, len(pcm), frame):
        await agent.send(AudioDelta(format="pcm", source={"bytes": pcm[offset : offset + frame]}))


async def collect(agent: BidiAgent, until: Callable[[Any], bool], timeout: float = 5.0) -> list[Any]:
    events: list[Any] = []
    async with asyncio.timeout(timeout):
        async for event in agent.receive():
            events.append(event)
            if until(event):
                return events
    return events


def of_type(events: list[Any], kind: type) -> list[Any]:
    return [event for event in events if isinstance(event, kind)]


def transcripts(events: list[Any], role: str) -> list[str]:
    return [
        event["transcript"]
        for event in events
        if event.get("type") == "bidi_transcript_block" and event["role"] == role
    ]


async def test_greeting_from_text_input(local_nova: LocalNova) -> None:
    local_nova.brain = ScriptedBrain(texts=[Reply(text="Thanks for calling.", audio=Tone(0.4))])
    agent = nova_agent()
    await agent.start()
    try:
        await agent.send("Greet the caller.")
        events = await collect(agent, lambda e: isinstance(e, BidiUsageEvent))
    finally:
        await agent.stop()

    assert transcripts(events, "assistant") == ["Thanks for calling."]
    assert of_type(events, BidiUsageEvent)[0]["output_tokens"] > 0
    audio = b"".join(base64.b64decode(e["audio"]) for e in of_type(events, BidiAudioDeltaEvent))
    assert len(audio) == int(0.4 * 16000) * 2
    session = local_nova.sessions[0]
    assert session.model_id == MODEL_ID
    assert session.system_prompts == ["You answer the phone."]
    assert session.text_inputs == ["Greet the caller."]
    assert session.event_names()[-2:] == ["promptEnd", "connectionEnd"]


@pytest.mark.parametrize("output_rate", [16000, 24000])
async def test_caller_audio_gets_a_transcript_and_audio_at_the_output_rate(
    local_nova: LocalNova, output_rate: int
) -> None:
    local_nova.brain = ScriptedBrain(turns=[Reply(text="I heard you.", audio=Tone(0.5), heard="hello there")])
    agent = nova_agent(output_rate)
    await agent.start()
    try:
        await speak(agent, tone(0.6) + bytes(int(0.8 * 16000) * 2))
        events = await collect(agent, lambda e: isinstance(e, BidiResponseStopEvent))
    finally:
        await agent.stop()

    assert transcripts(events, "user") == ["hello there"]
    assert transcripts(events, "assistant") == ["I heard you."]
    deltas = of_type(events, BidiAudioDeltaEvent)
    assert {d["sample_rate"] for d in deltas} == {output_rate}
    assert sum(len(base64.b64decode(d["audio"])) for d in deltas) == int(0.5 * output_rate) * 2
    assert of_type(events, BidiAudioStopEvent)
    session = local_nova.sessions[0]
    assert session.caller_sample_rate == 16000
    assert len(session.caller_audio) == int(1.4 * 16000) * 2
    assert local_nova.brain.heard[0].seconds == pytest.approx(0.6 + 0.6, abs=0.1)  # onset to end of hangover


async def test_tool_round_trip(local_nova: LocalNova) -> None:
    @tool
    def order_status(order_id: str) -> str:
        """Look up an order."""
        return f"order {order_id} shipped"

    local_nova.brain = ScriptedBrain(
        texts=[Reply(tool_uses=(ToolRequest("order_status", {"order_id": "42"}, tool_use_id="tooluse_1"),))],
        tool_results=[Reply(text="Your order shipped.", audio=Tone(0.2))],
    )
    agent = nova_agent(tools=[order_status])
    await agent.start()
    try:
        await agent.send("Where is order 42?")
        events = await collect(
            agent, lambda e: isinstance(e, BidiResponseStopEvent) and bool(local_nova.sessions[0].tool_results)
        )
    finally:
        await agent.stop()

    uses = [e for e in events if e.get("type") == "bidi_tool_use_blocks"]
    assert uses and uses[0]["tool_uses"][0]["name"] == "order_status"
    assert local_nova.sessions[0].tool_results == [("tooluse_1", {"text": "order 42 shipped"})]
    assert local_nova.brain.tool_results == [("tooluse_1", "order_status", {"text": "order 42 shipped"})]
    assert transcripts(events, "assistant") == ["Your order shipped."]


async def test_caller_talking_over_the_reply_is_a_barge_in(local_nova: LocalNova) -> None:
    local_nova.pacing = Pacing(chunk_s=0.04, speedup=2.0)  # 3 s of audio takes 1.5 s to send
    local_nova.brain = ScriptedBrain(
        texts=[Reply(text="Here is a very long answer.", audio=Tone(3.0))],
        turns=[Reply(text="Go ahead.", audio=Tone(0.2))],
    )
    agent = nova_agent()
    await agent.start()
    try:
        await agent.send("Talk.")
        events = await collect(agent, lambda e: isinstance(e, BidiAudioDeltaEvent))
        talk = asyncio.create_task(speak(agent, tone(0.4) + bytes(int(0.8 * 16000) * 2)))
        events += await collect(agent, lambda e: isinstance(e, BidiBargeInEvent))
        events += await collect(agent, lambda e: isinstance(e, BidiResponseStopEvent))  # the interrupted response
        events += await collect(agent, lambda e: isinstance(e, BidiResponseStopEvent))  # the answer to the caller
        await talk
    finally:
        await agent.stop()

    assert local_nova.sessions[0].barge_ins == 1
    sent_audio = sum(len(base64.b64decode(e["audio"])) for e in of_type(events, BidiAudioDeltaEvent))
    assert sent_audio < 3.0 * 16000 * 2 + 0.2 * 16000 * 2  # the long reply was cut
    first, second = transcripts(events, "assistant")
    # Nova sent its marker as text (strands alone would append it to the transcript); the adapter drops it.
    assert first == "Here is a very long answer."
    assert INTERRUPTED_MARKER not in str(events)
    assert of_type(events, BidiBargeInEvent)  # the barge-in itself still comes through
    assert second == "Go ahead."
    assert "INTERRUPTED" not in str(local_nova.sessions[0].violations)


async def test_connection_limit_restarts_and_the_conversation_continues(local_nova: LocalNova) -> None:
    local_nova.limits = TimeLimits(connection_limit_s=480, silence_timeout_s=1e6, time_scale=1.0 / 480)
    local_nova.brain = ScriptedBrain(
        texts=[Reply(text="First.", audio=Tone(0.1)), Reply(text="Second.", audio=Tone(0.1))]
    )
    agent = nova_agent()
    await agent.start()
    try:
        await agent.send("One.")
        events = await collect(agent, lambda e: isinstance(e, BidiConnectionRestartEvent), timeout=5)
        await agent.send("Two.")
        events += await collect(agent, lambda e: isinstance(e, BidiResponseStopEvent))
    finally:
        await agent.stop()

    restart = of_type(events, BidiConnectionRestartEvent)[0]
    assert restart["reason"] == "timeout"
    assert "timed out" in str(restart["timeout_error"])
    assert transcripts(events, "assistant") == ["First.", "Second."]
    first, second = local_nova.sessions[:2]
    assert first.ended_by == "connection limit"
    assert second.history == [("USER", "One."), ("ASSISTANT", "First.")]  # replayed as non-interactive text
    assert second.text_inputs == ["Two."]


async def test_silence_timeout_restarts(local_nova: LocalNova) -> None:
    local_nova.limits = TimeLimits(silence_timeout_s=175, time_scale=0.5 / 175)
    agent = nova_agent()
    await agent.start()
    try:
        events = await collect(agent, lambda e: isinstance(e, BidiConnectionRestartEvent))
    finally:
        await agent.stop()
    assert "InternalErrorCode=531" in str(of_type(events, BidiConnectionRestartEvent)[0]["timeout_error"])
    assert local_nova.sessions[0].ended_by == "silence timeout"
    assert len(local_nova.sessions) >= 2


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (Fault.exception("throttlingException"), ThrottlingException),
        (Fault.exception("validationException"), ValidationException),
        (Fault.reject("AccessDeniedException"), AccessDeniedException),
        (Fault.reject("ThrottlingException"), ThrottlingException),
        (Fault.throttled_open(), ThrottlingException),
    ],
    ids=["throttling-in-stream", "validation-in-stream", "access-denied-http-403", "throttling-http-429", "throttled"],
)
async def test_service_errors_surface_from_receive_with_their_type(
    local_nova: LocalNova, fault: Fault, expected: type[Exception]
) -> None:
    local_nova.faults.push(fault)
    agent = nova_agent()
    await agent.start()  # the stream opens without waiting for the response: errors come from receive()
    try:
        with pytest.raises(expected) as raised:
            await collect(agent, lambda e: False)
        assert raised.value.message == fault.message
    finally:
        # strands' own stop() would close the failed stream and raise the error again (wrapped by stop_all);
        # the adapter drops a stream whose receive() failed, so stop() is clean and quick.
        await asyncio.wait_for(agent.stop(), 1.0)
    assert len(local_nova.rejected) == (fault.kind == "reject")
    assert len(local_nova.sessions) == (fault.kind != "reject")  # no retry of a rejected stream


async def test_reset_stream_goes_quiet_without_an_error_and_stop_does_not_hang(local_nova: LocalNova) -> None:
    """RST_STREAM reaches neither receive() nor send(): the bridge's watchdog must catch the silence.

    strands' own stop() then waits forever for input nobody reads (smithy's flushing close); the
    project's adapter (agent.bedrock_endpoint) sees that its receive() ended unasked and drops the stream.
    """
    local_nova.faults.push(Fault.reset(after_s=0.0))
    agent = nova_agent()
    await agent.start()
    try:
        await local_nova.wait_for_sessions(1)
        await asyncio.sleep(0.05)
        await agent.send("Anyone there?")
        with pytest.raises(TimeoutError):
            await collect(agent, lambda e: False, timeout=0.3)
    finally:
        await asyncio.wait_for(agent.stop(), 1.0)
    assert local_nova.sessions[0].ended_by == "fault: reset"


async def test_stalled_stream_goes_quiet(local_nova: LocalNova) -> None:
    local_nova.faults.push(Fault.stall(after_s=0.0))
    agent = nova_agent()
    await agent.start()
    try:
        await agent.send("Hello?")
        with pytest.raises(TimeoutError):
            await collect(agent, lambda e: False, timeout=0.5)
    finally:
        await asyncio.wait_for(agent.stop(), 2)
    assert local_nova.sessions[0].text_inputs == ["Hello?"]


async def test_never_answers_is_a_stall_from_the_start(local_nova: LocalNova) -> None:
    local_nova.faults.push(Fault.never_answers())
    agent = nova_agent()
    await agent.start()
    try:
        await agent.send("Hello?")
        await local_nova.wait_for_sessions(1)
        await agent.send("Anyone there?")
        events = await received_within(agent, 1.0)
    finally:
        await asyncio.wait_for(agent.stop(), 2)
    assert [event["type"] for event in events] == ["bidi_connection_start"]  # strands' own, then nothing
    [session] = local_nova.sessions
    read = [event.body["content"] for event in session.events if event.name == "textInput"]
    assert read[-2:] == ["Hello?", "Anyone there?"] and session.sent == []  # all read, nothing said


@pytest.mark.parametrize("answer", [1, 2])
async def test_a_stall_mid_answer_sends_some_audio_then_nothing_and_keeps_reading(
    local_nova: LocalNova, answer: int
) -> None:
    local_nova.faults.push(Fault.stall_mid_answer(answer=answer, audio_s=0.5))
    local_nova.brain = ScriptedBrain(default=Reply(text="A long answer.", audio=Tone(2.0)))
    agent = nova_agent()
    await agent.start()
    try:
        events: list[Any] = []
        for _ in range(answer - 1):
            await agent.send("Talk.")
            events += await collect(agent, lambda e: isinstance(e, BidiResponseStopEvent))
        await agent.send("Talk.")
        cut = await received_within(agent, 1.5)  # 2 s of audio at 4x would be done in 0.5 s
        [session] = local_nova.sessions
        before = len(session.events)
        await agent.send("Hello?")
        await until(lambda: len(session.events) > before, timeout=2, what="the stalled stream to read input")
    finally:
        await asyncio.wait_for(agent.stop(), 2)
    assert audio_s(events, 16000) == pytest.approx(2.0 * (answer - 1))
    assert 0.5 <= audio_s(cut, 16000) < 0.6  # the first 0.5 s (whole 40 ms chunks) of the answer, then silence
    assert not of_type(cut, BidiAudioStopEvent) and not of_type(cut, BidiResponseStopEvent)
    assert session.sent[-1] == "audioOutput" and session.ended_by == "fault: stall"


async def test_close_mid_answer_resets_the_stream_after_some_audio(local_nova: LocalNova) -> None:
    local_nova.faults.push(Fault.close_mid_answer(audio_s=0.3))
    local_nova.brain = ScriptedBrain(default=Reply(text="A long answer.", audio=Tone(2.0)))
    agent = nova_agent()
    await agent.start()
    try:
        await agent.send("Talk.")
        events = await received_within(agent, 1.5)
    finally:
        await asyncio.wait_for(agent.stop(), 1)  # the adapter drops a stream whose receive() ended unasked
    assert 0.3 <= audio_s(events, 16000) < 0.4 and not of_type(events, BidiAudioStopEvent)
    [session] = local_nova.sessions
    assert session.sent[-1] == "audioOutput" and session.ended_by == "fault: reset"


async def test_protocol_violations_are_caught_and_answered_with_validation_exception(local_nova: LocalNova) -> None:
    async with RawNovaClient(local_nova.endpoint, local_nova.ca_file) as client:
        await client.send("sessionStart", {})
        await client.send(
            "promptStart",
            {
                "promptName": "p",
                "textOutputConfiguration": {"mediaType": "text/plain"},
                "audioOutputConfiguration": {
                    "mediaType": "audio/lpcm",
                    "sampleRateHertz": 22050,
                    "sampleSizeBits": 16,
                    "channelCount": 1,
                    "voiceId": "matthew",
                    "encoding": "base64",
                    "audioType": "SPEECH",
                },
            },
        )
        items = await client.receive_until_end()
    assert items[0][0] == "exception"
    exception_type, body = items[0][1]
    assert exception_type == "validationException"
    assert "sampleRateHertz 22050" in body["message"]
    assert local_nova.take_violations() == [
        "stream 0: event #1 (promptStart): audioOutputConfiguration.sampleRateHertz 22050 is not one of "
        "(8000, 16000, 24000)"
    ]


async def test_audio_outside_an_audio_content_is_a_violation(local_nova: LocalNova) -> None:
    local_nova.reject_violations = False
    async with RawNovaClient(local_nova.endpoint, local_nova.ca_file) as client:
        await client.send("sessionStart", {})
        await client.send("audioInput", {"promptName": "p", "contentName": "c", "content": "AAAA"})
        await client.send("toolResult", {"promptName": "p", "contentName": "t", "content": "{}"})
        await client.send("sessionEnd", {})
        await client.end()
        await client.receive_until_end()
    violations = local_nova.take_violations()
    assert "stream 0: event #1 (audioInput): no promptStart yet" in violations
    assert "stream 0: event #2 (toolResult): no promptStart yet" in violations


def test_envelopes_round_trip_and_bad_crcs_are_caught() -> None:
    reader = EnvelopeReader()
    data = encode_client_envelope("textInput", {"content": "hi"}) + encode_end_of_input()
    items = [item for index in range(len(data)) for item in reader.feed(data[index : index + 1])]  # byte by byte
    assert items[0].name == "textInput" and items[0].body == {"content": "hi"}
    assert len(items) == 2
    corrupt = bytearray(encode_client_envelope("textInput", {"content": "hi"}))
    corrupt[-1] ^= 0xFF
    with pytest.raises(ValueError, match="undecodable"):
        EnvelopeReader().feed(bytes(corrupt))


def test_endpoint_comes_from_the_standard_aws_variables() -> None:
    env = {"AWS_ENDPOINT_URL": "https://a", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://b", "AWS_CA_BUNDLE": "/ca"}
    assert BedrockEndpoint.from_env(env) == BedrockEndpoint("https://b", "/ca")
    assert BedrockEndpoint.from_env({"AWS_ENDPOINT_URL": "https://a"}).url == "https://a"
    assert BedrockEndpoint.from_env({**env, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}).url is None
    assert not BedrockEndpoint.from_env({}).configured


async def test_many_concurrent_calls(local_nova: LocalNova) -> None:
    local_nova.brain = ScriptedBrain(default=Reply(text="Hello.", audio=Tone(0.3)))
    agents = [nova_agent() for _ in range(4)]

    async def call(agent: BidiAgent) -> list[str]:
        await agent.start()
        try:
            await agent.send("Hi.")
            return transcripts(await collect(agent, lambda e: isinstance(e, BidiResponseStopEvent)), "assistant")
        finally:
            await agent.stop()

    results = await asyncio.gather(*(call(agent) for agent in agents))
    assert results == [["Hello."]] * 4
    assert len(local_nova.sessions) == 4


async def test_offline_brain_hears_and_speaks_real_speech(local_nova: LocalNova) -> None:
    from agent.offline.synthesizer import CALLER_VOICE, Synthesizer
    from telephony.simulation.local_nova.offline_replies import OfflineBrain

    @tool
    def current_time() -> str:
        """The time now."""
        return "ten past nine"

    local_nova.brain = OfflineBrain()
    caller = Synthesizer(CALLER_VOICE, 16000).synthesize("what time is it")
    agent = nova_agent(tools=[current_time])
    await agent.start()
    try:
        await speak(agent, bytes(6400) + caller + bytes(int(0.8 * 16000) * 2))
        events = await collect(
            agent, lambda e: e.get("type") == "bidi_transcript_block" and e["role"] == "assistant", timeout=10
        )
    finally:
        await agent.stop()
    assert transcripts(events, "user") == ["what time is it"]
    assert transcripts(events, "assistant") == ["It is ten past nine."]


async def one_reply(settings: Settings) -> None:
    """A call of one exchange on the default agent: started, asked, answered, stopped."""
    agent = BidiAgent(model=create_model(settings), system_prompt="You answer the phone.")
    await agent.start()
    try:
        await agent.send("Hi.")
        await collect(agent, lambda e: isinstance(e, BidiResponseStopEvent))
    finally:
        await agent.stop()


def os_threads() -> int:
    """Threads of this process as the OS sees them (CRT's native I/O threads included)."""
    return len(os.listdir("/proc/self/task"))


@pytest.mark.parametrize("crt_threads", [1, 0])
async def test_a_shared_io_thread_keeps_its_python_thread_state_between_callbacks(
    local_nova: LocalNova, monkeypatch: pytest.MonkeyPatch, crt_threads: int
) -> None:
    """awscrt enters Python from its I/O thread for every body chunk. A thread-local value lives in the thread
    state: on a shared loop it outlives each entry (one state, kept); on a connection's own thread (0), each
    entry builds and destroys a state of its own, and none is kept (the thread ends with the connection)."""
    marker = threading.local()
    seen: list[bool] = []
    policies: set[int] = set()
    original = BodySink.set_result

    def recording(self: BodySink, chunk: bytes) -> None:
        original(self, chunk)  # the keeping, if any, happens first thing in here
        seen.append(getattr(marker, "set", False))
        marker.set = True
        policies.add(os.sched_getscheduler(0))

    monkeypatch.setattr(BodySink, "set_result", recording)
    local_nova.brain = ScriptedBrain(default=Reply(text="Hello.", audio=Tone(0.5)))
    await one_reply(Settings(model="nova", model_id=MODEL_ID, aws_region="us-east-1", crt_threads=crt_threads))
    assert len(seen) > 10
    if crt_threads:
        assert all(seen[1:])  # (the first chunk of the process may be the thread's first entry)
        assert policies == {os.SCHED_BATCH}  # and its wakeups do not preempt the serving thread
    else:
        assert not any(seen)
        assert policies == {os.SCHED_OTHER}


@pytest.mark.parametrize("crt_threads", [1, 0])
async def test_calls_share_one_crt_event_loop_unless_told_not_to(local_nova: LocalNova, crt_threads: int) -> None:
    local_nova.brain = ScriptedBrain(default=Reply(text="Hello.", audio=Tone(0.3)))
    settings = Settings(model="nova", model_id=MODEL_ID, aws_region="us-east-1", crt_threads=crt_threads)
    agents = [BidiAgent(model=create_model(settings), system_prompt="You answer the phone.") for _ in range(4)]
    shared_event_loop(1)  # the process's group (and its I/O thread) may or may not exist yet: it does now
    before = os_threads()
    for agent in agents:
        await agent.start()
    try:
        during = os_threads()
        bootstraps = {id(agent.model._client._config.transport._client_bootstrap) for agent in agents}
        for agent in agents:
            await agent.send("Hi.")
            replies = transcripts(await collect(agent, lambda e: isinstance(e, BidiResponseStopEvent)), "assistant")
            assert replies == ["Hello."]
    finally:
        await asyncio.gather(*(agent.stop() for agent in agents))
    if crt_threads:
        assert bootstraps == {id(shared_event_loop(1).bootstrap)}
        assert during - before <= 1  # no thread per call: at most the shared resolver's, started by a first lookup
    else:
        assert len(bootstraps) == 4 and id(shared_event_loop(1).bootstrap) not in bootstraps
        assert during - before >= 4  # strands' default: an I/O thread per call


async def test_a_stopped_call_ends_its_stream_with_every_closing_event(local_nova: LocalNova) -> None:
    """The request writer may still hold the last events when strands closes the client: the close waits for
    them, so Nova gets the closing events and the end of the stream, not a connection cut under them."""
    local_nova.brain = ScriptedBrain(default=Reply(text="Hello.", audio=Tone(0.3)))
    for _ in range(3):
        await one_reply(Settings(model="nova", model_id=MODEL_ID, aws_region="us-east-1"))
    assert [session.ended_by for session in local_nova.sessions] == ["client ended the stream"] * 3

"""The Nova adapter's own logic, without a server: the barge-in marker filter, the operator hints, and telling a
lost stream from one strands is stopping."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aws_sdk_bedrock_runtime.models import AccessDeniedException, ThrottlingException, ValidationException
from awscrt.exceptions import AwsCrtError
from smithy_core.exceptions import SmithyError
from strands.bidi.types import (
    BidiBargeInEvent,
    BidiResponseStartEvent,
    BidiResponseStopEvent,
    BidiTranscriptDeltaEvent,
    BidiTranscriptStartEvent,
    BidiTranscriptStopEvent,
)

from agent.nova.errors import NovaTarget, add_operator_hint, operator_hint
from agent.nova.marker import INTERRUPTED_MARKER, strip_marker, without_interrupted_marker
from agent.nova.model import NovaSonicModel
from agent.quiet_switch import QuietSwitchover
from telephony.bridge.failure import error_summary, operator_notes

TARGET = NovaTarget(model_id="amazon.nova-2-sonic-v1:0", region="eu-north-1", endpoint="https://vpce.example")


async def filtered(events: list[Any]) -> list[Any]:
    async def source() -> AsyncIterator[Any]:
        for event in events:
            yield event

    return [event async for event in without_interrupted_marker(source())]


def summary(events: list[Any]) -> list[tuple[str, str]]:
    return [(event["type"].removeprefix("bidi_"), event.get("delta", event.get("role", ""))) for event in events]


async def test_a_marker_appended_to_an_open_transcript_is_dropped() -> None:
    events = [
        BidiResponseStartEvent("r1"),
        BidiTranscriptStartEvent("assistant", "c1"),
        BidiTranscriptDeltaEvent("Here is the answer.", "assistant", "c1"),
        BidiTranscriptDeltaEvent(f" {INTERRUPTED_MARKER}", "assistant", "c1"),
        BidiBargeInEvent(),
        BidiTranscriptStopEvent("assistant", "c1"),
        BidiResponseStopEvent("r1"),
    ]
    assert summary(await filtered(events)) == [
        ("response_start", ""),
        ("transcript_start", "assistant"),
        ("transcript_delta", "Here is the answer."),
        ("barge_in", ""),
        ("transcript_stop", "assistant"),
        ("response_stop", ""),
    ]


async def test_a_transcript_of_nothing_but_the_marker_disappears_whole() -> None:
    """The reply had been streamed in full and was still playing: Nova's marker opens a transcript of its own."""
    events = [
        BidiResponseStartEvent("r2"),
        BidiTranscriptStartEvent("assistant", "c2"),
        BidiTranscriptDeltaEvent(INTERRUPTED_MARKER, "assistant", "c2"),
        BidiBargeInEvent(),
        BidiTranscriptStopEvent("assistant", "c2"),
        BidiResponseStopEvent("r2"),
    ]
    assert summary(await filtered(events)) == [("response_start", ""), ("barge_in", ""), ("response_stop", "")]


async def test_text_after_a_marker_keeps_its_transcript_without_a_leading_space() -> None:
    events = [
        BidiTranscriptStartEvent("assistant", "c3"),
        BidiTranscriptDeltaEvent('{"interrupted":true}', "assistant", "c3"),
        BidiTranscriptDeltaEvent(" Go ahead.", "assistant", "c3"),
        BidiTranscriptStopEvent("assistant", "c3"),
    ]
    assert summary(await filtered(events)) == [
        ("transcript_start", "assistant"),
        ("transcript_delta", "Go ahead."),
        ("transcript_stop", "assistant"),
    ]


async def test_user_transcripts_and_ordinary_text_pass_unchanged() -> None:
    events = [
        BidiTranscriptStartEvent("user", "u1"),
        BidiTranscriptDeltaEvent("was I interrupted", "user", "u1"),
        BidiTranscriptStopEvent("user", "u1"),
    ]
    out = await filtered(events)
    assert out == events and all(a is b for a, b in zip(out, events, strict=True))
    assert strip_marker('He said {"interrupted": false}.') == 'He said {"interrupted": false}.'


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ValueError("no AWS credentials found. configure credentials via ..."), "set AWS_ACCESS_KEY_ID"),
        (AccessDeniedException(message="denied"), "Model access, region eu-north-1"),
        (ValidationException(message="The provided model identifier is invalid."), "check VOICEBOT_MODEL_ID"),
        (ThrottlingException(message="Too many requests"), "Lower VOICEBOT_MAX_CALLS"),
        (SmithyError("AWS_IO_DNS_INVALID_NAME: Host name was invalid for dns resolution."), "cannot reach Bedrock"),
        (AwsCrtError(1029, "AWS_IO_TLS_ERROR_NEGOTIATION_FAILURE", "TLS failed"), "point AWS_CA_BUNDLE"),
    ],
)
def test_bedrock_errors_get_a_sentence_for_the_operator(error: Exception, expected: str) -> None:
    hint = operator_hint(error, TARGET)
    assert hint is not None and expected in hint


def test_errors_that_say_nothing_about_configuration_get_no_hint() -> None:
    assert operator_hint(ValidationException(message="Invalid input: audio too long"), TARGET) is None
    assert operator_hint(RuntimeError("boom"), TARGET) is None


def test_the_hint_is_a_note_added_once_and_the_bridge_finds_it_through_causes() -> None:
    error = AccessDeniedException(message="denied")
    add_operator_hint(error, TARGET)
    add_operator_hint(error, TARGET)
    assert len(error.__notes__) == 1
    try:
        try:
            raise error
        except AccessDeniedException as inner:
            raise RuntimeError("agent start failed") from inner
    except RuntimeError as outer:
        assert operator_notes(outer) == error.__notes__
    assert error_summary(error) == "AccessDeniedException: denied"
    assert operator_notes(None) == []


# --- a stream lost, or a reader stopped ------------------------------------------------------------------


def nova_reading(monkeypatch: pytest.MonkeyPatch, read: Callable[[], Awaitable[None]]) -> NovaSonicModel:
    """A Nova model on connection ``c1`` whose stream, under the adapter, does what ``read`` does."""

    async def receive(self: Any) -> AsyncIterator[Any]:
        await read()
        return
        yield

    monkeypatch.setattr(QuietSwitchover, "receive", receive)
    model = NovaSonicModel(model_id="amazon.nova-2-sonic-v1:0", region="us-east-1", crt_threads=0)
    model._connection_id = "c1"
    return model


async def test_a_stream_that_ends_unasked_is_lost_so_stop_will_not_wait_to_flush_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def service_closes() -> None:
        return

    model = nova_reading(monkeypatch, service_closes)
    assert [event async for event in model.receive()] == []
    assert model._lost_connection == "c1"


async def test_a_read_error_while_strands_cancels_the_reader_is_our_stop_not_a_lost_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Taken for lost, a live stream would be abandoned with its audio content open, not closed the regular way."""
    reading = asyncio.Event()

    async def cancelled_into_a_read_error() -> None:
        reading.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise OSError("Failed to read from stream.") from None  # what smithy makes of awscrt's cancelled read

    model = nova_reading(monkeypatch, cancelled_into_a_read_error)

    async def reader() -> None:
        async for _ in model.receive():
            pass

    task = asyncio.create_task(reader())
    await reading.wait()
    task.cancel()
    with pytest.raises(OSError):
        await task
    assert model._lost_connection is None

"""Nova's direct event path gives what the SDK's generic one gives: the same messages and bytes out, the same
objects and errors in (``agent.nova.event_stream``)."""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import types
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aws_sdk_bedrock_runtime.models import (
    BidirectionalInputPayloadPart,
    InvokeModelWithBidirectionalStreamInput,
    InvokeModelWithBidirectionalStreamInputChunk,
    InvokeModelWithBidirectionalStreamInputUnknown,
    InvokeModelWithBidirectionalStreamOutput,
    ValidationException,
    _InvokeModelWithBidirectionalStreamOutputDeserializer,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from smithy_aws_core.identity import AWSCredentialsIdentity
from smithy_aws_event_stream._private.serializers import EventSerializer
from smithy_aws_event_stream.aio import AWSEventPublisher, AWSEventReceiver, SigningConfig
from smithy_aws_event_stream.events import Event, EventMessage
from smithy_aws_event_stream.exceptions import UnmodeledEventError
from smithy_core.aio.types import AsyncBytesReader

from agent.nova import event_stream
from agent.nova.event_signer import CachingEventSigner
from agent.nova.event_stream import (
    AudioEventProtocol,
    ChunkPublisher,
    ChunkReader,
    ChunkReceiver,
    bedrock_protocol,
    chunk_message,
    output_chunk,
)

PROTOCOL = bedrock_protocol()
CODEC = PROTOCOL.payload_codec
CHUNK_HEADERS = {":message-type": "event", ":event-type": "chunk", ":content-type": "application/json"}
ALICE = AWSCredentialsIdentity(access_key_id="AKIDEXAMPLE", secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLE")
PROPERTIES: Any = {"region": "us-east-1", "service": "bedrock"}


def nova_events() -> list[bytes]:
    """Input documents as strands sends them: audio, text with quotes, non-ASCII and control characters, empty."""
    audio = base64.b64encode(bytes(range(256)) * 13).decode()
    return [
        json.dumps({"event": {"audioInput": {"promptName": "p", "contentName": "c", "content": audio}}}).encode(),
        json.dumps(
            {"event": {"textInput": {"content": 'Say "hi"\n\tto Zoë — 日本 \u0001'}}}, ensure_ascii=False
        ).encode(),
        b"",
        b"\xff\xfe not utf-8 at all",
    ]


def sdk_message(event: Any) -> EventMessage:
    serializer = EventSerializer(payload_codec=CODEC, is_client_mode=True)
    event.serialize(serializer)
    result = serializer.get_result()
    assert result is not None
    return result


def test_an_input_chunk_is_the_message_the_sdks_serializer_makes() -> None:
    for data in nova_events():
        event = InvokeModelWithBidirectionalStreamInputChunk(value=BidirectionalInputPayloadPart(bytes_=data))
        ours, sdk = chunk_message(event), sdk_message(event)
        assert ours is not None
        assert ours.headers == sdk.headers and list(ours.headers) == list(sdk.headers)
        assert ours.payload == sdk.payload
        assert ours.encode() == sdk.encode()


def test_anything_but_a_plain_chunk_is_left_to_the_sdk() -> None:
    assert chunk_message(InvokeModelWithBidirectionalStreamInputUnknown(tag="x")) is None  # type: ignore[arg-type]
    assert chunk_message(InvokeModelWithBidirectionalStreamInputChunk(value=BidirectionalInputPayloadPart())) is None


def output_message(payload: bytes, **headers: Any) -> EventMessage:
    return EventMessage(headers={**CHUNK_HEADERS, **headers}, payload=payload)


OUTPUTS = [output_message(b'{"bytes":"' + base64.b64encode(data) + b'"}') for data in nova_events() if data] + [
    EventMessage(
        headers={
            ":message-type": "exception",
            ":exception-type": "validationException",
            ":content-type": "application/json",
        },
        payload=b'{"message":"The model stream timed out"}',
    ),
    output_message(b'{"bytes":"eyJ9", "extra": 1}'),  # not the plain shape: the SDK's reading
    output_message(b'{"bytes":"eyJldmVudCI6e319"}', **{":event-type": "somethingNew"}),
    EventMessage(headers={":message-type": "error", ":error-code": "Internal", ":error-message": "boom"}),
]


async def chunks_of(data: bytes, sizes: list[int]) -> AsyncIterator[bytes]:
    """``data`` cut at the given sizes (the rest in one piece), as a response body delivers it."""
    start = 0
    for size in sizes:
        if start >= len(data):
            break
        yield data[start : start + size]
        start += size
    if start < len(data):
        yield data[start:]


async def received(receiver: Any) -> list[Any]:
    """Every result until the end, an error as its type and text."""
    results: list[Any] = []
    while True:
        try:
            result = await receiver.receive()
        except Exception as error:  # noqa: BLE001 - the error is the result being compared
            results.append((type(error), str(error)))
            return results
        if result is None:
            return results
        results.append(result)


def both_receivers(messages: list[EventMessage], sizes: list[int]) -> tuple[list[Any], list[Any]]:
    return both_reading(b"".join(message.encode() for message in messages), sizes)


def both_reading(data: bytes, sizes: list[int]) -> tuple[list[Any], list[Any]]:
    """What our receiver and the SDK's make of the same body, delivered cut at ``sizes``."""

    def read(receiver_class: type, reader_class: type) -> list[Any]:
        deserializer = _InvokeModelWithBidirectionalStreamOutputDeserializer().deserialize
        receiver = receiver_class(
            payload_codec=CODEC, source=reader_class(chunks_of(data, sizes)), deserializer=deserializer
        )
        return asyncio.run(received(receiver))

    return read(ChunkReceiver, ChunkReader), read(AWSEventReceiver, AsyncBytesReader)


def test_received_events_and_errors_are_the_sdks() -> None:
    for stop in range(len(OUTPUTS)):  # each message as the last: every kind, also after the others
        ours, sdk = both_receivers(OUTPUTS[: stop + 1], [7, 1000, 3, 5000])
        assert ours == sdk, f"up to message {stop}"
    ours, _ = both_receivers(OUTPUTS, [])
    assert [type(each).__name__ for each in ours[:3]] == ["InvokeModelWithBidirectionalStreamOutputChunk"] * 3
    assert ours[3] == (ValidationException, "The model stream timed out")
    assert [output_chunk(message) is not None for message in OUTPUTS] == [True] * 3 + [False] * 4  # both paths ran


@pytest.mark.parametrize(
    "payload",
    [
        b'{"bytes":"eyJ9Pz4\\/"}',  # JSON may escape the slash of base64
        b'{ "bytes" : "eyJ9" }',
        b'{"bytes":"eyJ9==="}',
        b'{"bytes":"ey J9"}',
        b'{"bytes":""}',
    ],
)
def test_a_payload_written_otherwise_is_read_as_the_sdk_reads_it(payload: bytes) -> None:
    ours, sdk = both_receivers([output_message(payload)], [])
    assert ours == sdk


def test_novas_own_payload_is_decoded_without_parsing_its_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_stream.json, "loads", None)  # any JSON parse would fail
    chunk = output_chunk(output_message(b'{"bytes":"' + base64.b64encode(b'{"event":{}}') + b'"}'))
    assert chunk is not None and chunk.value.bytes_ == b'{"event":{}}'


def test_the_comparison_can_fail() -> None:
    """The SDK reads a chunk with another payload as other bytes: the equality above says something."""
    ours, _ = both_receivers(OUTPUTS[:1], [])
    _, sdk = both_receivers([output_message(b'{"bytes":"eyJ9"}')], [])
    assert ours != sdk


def test_an_unmodeled_error_is_raised_as_the_sdk_raises_it() -> None:
    ours, sdk = both_receivers(OUTPUTS[-1:], [])
    assert ours == sdk == [(UnmodeledEventError, ours[0][1])]


def test_a_body_cut_short_is_the_sdks_failure() -> None:
    data = OUTPUTS[0].encode()
    for cut in (5, 12, len(data) - 2):
        ours = asyncio.run(received(ChunkReceiver(CODEC, ChunkReader(chunks_of(data[:cut], [3])), lambda d: d)))
        sdk = asyncio.run(received(AWSEventReceiver(CODEC, AsyncBytesReader(chunks_of(data[:cut], [3])), lambda d: d)))
        assert ours == sdk and len(ours) == 1 and issubclass(ours[0][0], Exception), cut


AUDIO = OUTPUTS[:3] * 2  # the same header block again: read directly from the second chunk event on
"""Chunk events, each header block seen twice."""


def test_a_chunk_event_with_a_header_block_seen_before_skips_the_sdks_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[bytes] = []
    sdk_decode = Event.decode.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Event], source: Any) -> Any:
        decoded.append(source.getvalue())
        return sdk_decode(cls, source)

    monkeypatch.setattr(Event, "decode", classmethod(counting))
    ours, sdk = both_receivers(AUDIO, [7, 1000, 3, 5000])
    assert ours == sdk and len(ours) == len(AUDIO)
    assert decoded == [AUDIO[0].encode()]  # the first event only: every later one has the same header block


@settings(max_examples=200, deadline=None)
@given(
    at=st.integers(min_value=0),
    flip=st.integers(min_value=1, max_value=255),
    cut=st.integers(min_value=0),
    sizes=st.lists(st.integers(min_value=1, max_value=700), max_size=8),
)
def test_damaged_bodies_are_read_as_the_sdk_reads_them(at: int, flip: int, cut: int, sizes: list[int]) -> None:
    """One byte changed anywhere (a length, a CRC, a header, the payload), then the body cut short."""
    data = bytearray(b"".join(message.encode() for message in AUDIO + OUTPUTS[3:]))
    data[at % len(data)] ^= flip
    ours, sdk = both_reading(bytes(data[: len(data) - cut % len(data)]), sizes)
    assert ours == sdk


@settings(max_examples=150, deadline=None)
@given(
    data=st.binary(max_size=600),
    cuts=st.lists(st.integers(min_value=1, max_value=90), max_size=12),
    reads=st.lists(st.integers(min_value=-1, max_value=120), min_size=1, max_size=12),
)
def test_the_reader_reads_what_the_sdks_reader_reads(data: bytes, cuts: list[int], reads: list[int]) -> None:
    async def read_all(reader: Any) -> list[bytes]:
        return [await reader.read(size) for size in reads]

    ours = asyncio.run(read_all(ChunkReader(chunks_of(data, cuts))))
    assert ours == asyncio.run(read_all(AsyncBytesReader(chunks_of(data, cuts))))


class _Writer:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    async def write(self, data: bytes) -> None:
        self.written.append(data)


class _Identities:
    async def get_identity(self, *, properties: Any) -> AWSCredentialsIdentity:
        return ALICE


def _clock() -> Any:
    start = datetime.datetime(2026, 12, 2, 9, 30, 0, 123456, tzinfo=datetime.UTC)
    times = iter(start + datetime.timedelta(milliseconds=20 * n) for n in range(100))
    return lambda: next(times)


def published(publisher_class: type, events: list[Any]) -> list[bytes]:
    writer = _Writer()
    signing = SigningConfig(
        signer=CachingEventSigner(initial_signature=b"0" * 64, now=_clock()),  # type: ignore[arg-type]
        signing_properties=PROPERTIES,
        identity_resolver=_Identities(),  # type: ignore[arg-type]
        identity_properties={},  # type: ignore[typeddict-item]
    )
    publisher = publisher_class(payload_codec=CODEC, async_writer=writer, signing_config=signing)

    async def send_all() -> None:
        for event in events:
            await publisher.send(event)
        await publisher.close()

    asyncio.run(send_all())
    return writer.written


def test_published_bytes_are_the_sdks_signed_and_in_order() -> None:
    events = [
        InvokeModelWithBidirectionalStreamInputChunk(value=BidirectionalInputPayloadPart(bytes_=data))
        for data in nova_events()
    ]
    ours = published(ChunkPublisher, events)
    assert ours == published(AWSEventPublisher, events)
    assert len(ours) == len(events) + 1  # and the signed empty message that ends the stream


def test_a_closed_publisher_refuses_as_the_sdks_does() -> None:
    event = InvokeModelWithBidirectionalStreamInputChunk(value=BidirectionalInputPayloadPart(bytes_=b"{}"))
    publisher = ChunkPublisher(payload_codec=CODEC, async_writer=_Writer())
    asyncio.run(publisher.close())
    with pytest.raises(OSError, match="closed stream"):
        asyncio.run(publisher.send(event))


def test_the_protocol_takes_the_bidirectional_streams_only() -> None:
    assert isinstance(PROTOCOL, AudioEventProtocol)
    response = types.SimpleNamespace(body=chunks_of(b"", []))
    receiver = PROTOCOL.create_event_receiver(
        operation=None,  # type: ignore[arg-type]
        request=None,  # type: ignore[arg-type]
        response=response,  # type: ignore[arg-type]
        event_type=InvokeModelWithBidirectionalStreamOutput,
        event_deserializer=lambda d: d,
        context={},  # type: ignore[arg-type]
    )
    assert type(receiver) is ChunkReceiver
    other = PROTOCOL.create_event_receiver(
        operation=None,  # type: ignore[arg-type]
        request=None,  # type: ignore[arg-type]
        response=response,  # type: ignore[arg-type]
        event_type=dict,  # type: ignore[arg-type]
        event_deserializer=lambda d: d,
        context={},  # type: ignore[arg-type]
    )
    assert type(other) is AWSEventReceiver
    assert InvokeModelWithBidirectionalStreamInput is not None  # the publisher's key (exercised by the local Nova)

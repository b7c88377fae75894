"""Nova's two event streams without the SDK's generic per-event work: :class:`AudioEventProtocol`.

Every event Nova sends or receives is a ``chunk``: a JSON document ``{"bytes": "<base64>"}`` in an event-stream
message. The SDK treats each one generically, and at tens of events a second per call that is a large share of
a call's processor time:

- sending, the schema-driven serializer walks two nested structures and runs a regular expression over the
  base64 text (about 23 µs for a 100 ms audio event); the message is three fixed headers and that JSON;
- receiving, ``AsyncBytesReader.read`` runs two ``runtime_checkable`` protocol checks (``getattr_static`` on
  every protocol attribute) for each of the four reads of every event, and copies the unread rest of the chunk
  at each; the schema-driven deserializer then resolves the union member through three more layers.

:class:`AudioEventProtocol` is the SDK's ``RestJsonClientProtocol`` (``agent.nova.sdk_seam`` puts it into the
config strands resolves) whose publisher and receiver take a direct path for chunk events and hand anything
else (exceptions, errors, other shapes) to the SDK's own code. Tests check that both paths give the same
messages, bytes and objects as the SDK's serializer, reader and deserializer.

Upstream: ``AsyncBytesReader`` could check its source's type once, at construction, and buffer with a
``bytearray``; the event serializer could write a blob member's base64 without escaping it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from aws_sdk_bedrock_runtime._private.schemas import AMAZON_BEDROCK_FRONTEND_SERVICE
from aws_sdk_bedrock_runtime.models import (
    BidirectionalInputPayloadPart,
    BidirectionalOutputPayloadPart,
    InvokeModelWithBidirectionalStreamInput,
    InvokeModelWithBidirectionalStreamInputChunk,
    InvokeModelWithBidirectionalStreamOutput,
    InvokeModelWithBidirectionalStreamOutputChunk,
)
from smithy_aws_core.aio.protocols import RestJsonClientProtocol
from smithy_aws_event_stream._private.deserializers import EventDeserializer
from smithy_aws_event_stream.aio import AWSEventPublisher, AWSEventReceiver, SigningConfig
from smithy_aws_event_stream.events import Event, EventMessage
from smithy_aws_event_stream.exceptions import EventError
from smithy_core.aio.utils import close

__all__ = ["AudioEventProtocol", "ChunkPublisher", "ChunkReader", "ChunkReceiver", "bedrock_protocol"]

_CHUNK_HEADERS = {":message-type": "event", ":event-type": "chunk", ":content-type": "application/json"}
"""The headers the SDK's serializer gives every input chunk, in its order."""
_OPEN, _CLOSE = b'{"bytes":"', b'"}'


def chunk_message(event: InvokeModelWithBidirectionalStreamInputChunk) -> EventMessage | None:
    """The message the SDK's serializer makes of ``event``, or None where it is not a plain chunk."""
    if type(event) is not InvokeModelWithBidirectionalStreamInputChunk:
        return None
    part = event.value
    if type(part) is not BidirectionalInputPayloadPart or part.bytes_ is None:
        return None
    return EventMessage(headers=dict(_CHUNK_HEADERS), payload=_OPEN + base64.b64encode(part.bytes_) + _CLOSE)


def output_chunk(message: EventMessage) -> InvokeModelWithBidirectionalStreamOutputChunk | None:
    """The SDK's deserialization of an output chunk, or None where ``message`` is anything else."""
    headers = message.headers
    if headers.get(":message-type") != "event" or headers.get(":event-type") != "chunk":
        return None
    try:
        document = json.loads(message.payload)
    except ValueError:
        return None
    if type(document) is not dict or document.keys() != {"bytes"} or type(document["bytes"]) is not str:
        return None
    try:
        data = base64.b64decode(document["bytes"], validate=True)
    except binascii.Error:
        return None
    return InvokeModelWithBidirectionalStreamOutputChunk(value=BidirectionalOutputPayloadPart(bytes_=data))


class ChunkReader:
    """An async byte stream over a response's body chunks: what ``AsyncBytesReader`` does, checked once."""

    def __init__(self, chunks: AsyncIterable[bytes]) -> None:
        self._source = chunks
        self._chunks: AsyncIterator[bytes] = chunks.__aiter__()
        self._buffer = bytearray()
        self._ended = False

    async def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (all that is left for a negative size); fewer only at the end of the body."""
        buffer = self._buffer
        while (size < 0 or len(buffer) < size) and not self._ended:
            chunk = await anext(self._chunks, None)
            if chunk is None:
                self._ended = True
            else:
                buffer += chunk
        if size < 0 or size >= len(buffer):
            data = bytes(buffer)
            buffer.clear()
            return data
        data = bytes(buffer[:size])
        del buffer[:size]  # a bytearray drops its head in place, without moving the rest
        return data

    async def close(self) -> None:
        self._ended = True
        await close(self._source)


class ChunkPublisher(AWSEventPublisher[Any]):
    """The SDK's publisher; a plain input chunk is made into its message directly, then signed and written as
    the SDK does."""

    async def send(self, event: Any) -> None:
        message = chunk_message(event)
        if message is None:
            await super().send(event)
            return
        if self._closed:
            raise OSError("Attempted to write to closed stream.")
        signing = self._signing_config
        if signing is not None:
            identity = await signing.identity_resolver.get_identity(properties=signing.identity_properties)
            message = await signing.signer.sign(event=message, identity=identity, properties=signing.signing_properties)
        try:
            await self._writer.write(message.encode())
        except Exception as e:
            await self.close()
            raise OSError("Failed to write to stream.") from e


class ChunkReceiver(AWSEventReceiver[Any]):
    """The SDK's receiver, reading a :class:`ChunkReader`; an output chunk is built directly."""

    async def receive(self) -> Any:
        if self._closed:
            return None
        try:
            event = await Event.decode_async(self._source)
        except Exception as e:
            await self.close()
            if not isinstance(e, EventError):
                raise OSError("Failed to read from stream.") from e
            raise
        if event is None:
            return None
        chunk = output_chunk(event.message)
        if chunk is not None:
            return chunk
        result = self._deserializer(  # anything else: the SDK's own deserialization, raised as it raises
            EventDeserializer(event=event, payload_codec=self._payload_codec, is_client_mode=self._is_client_mode)
        )
        value = getattr(result, "value", None)
        if isinstance(value, Exception):
            raise value
        return result


class AudioEventProtocol(RestJsonClientProtocol):
    """Bedrock Runtime's protocol, whose bidirectional stream takes :class:`ChunkPublisher` and
    :class:`ChunkReceiver` (every other operation and stream: the SDK's)."""

    def create_event_publisher(self, **kwargs: Any) -> Any:  # type: ignore[override]
        sdk = super().create_event_publisher(**kwargs)  # the SDK's checks and signing set-up
        if kwargs.get("event_type") is not InvokeModelWithBidirectionalStreamInput:
            return sdk
        auth_scheme, context = kwargs.get("auth_scheme"), kwargs["context"]
        signer = auth_scheme.event_signer(request=kwargs["request"]) if auth_scheme is not None else None
        signing = None
        if signer is not None:
            assert auth_scheme is not None
            signing = SigningConfig(
                signer=signer,
                signing_properties=auth_scheme.signer_properties(context=context),
                identity_resolver=auth_scheme.identity_resolver(context=context),
                identity_properties=auth_scheme.identity_properties(context=context),
            )
        return ChunkPublisher(
            payload_codec=self.payload_codec, async_writer=kwargs["request"].body, signing_config=signing
        )

    def create_event_receiver(self, **kwargs: Any) -> Any:  # type: ignore[override]
        if kwargs.get("event_type") is not InvokeModelWithBidirectionalStreamOutput:
            return super().create_event_receiver(**kwargs)
        return ChunkReceiver(
            payload_codec=self.payload_codec,
            source=ChunkReader(kwargs["response"].body),
            deserializer=kwargs["event_deserializer"],
        )


def bedrock_protocol() -> AudioEventProtocol:
    """The protocol for a Bedrock Runtime client (the service schema the SDK's config uses by default)."""
    return AudioEventProtocol(AMAZON_BEDROCK_FRONTEND_SERVICE)

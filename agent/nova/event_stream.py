"""Nova's two event streams without the SDK's generic per-event work: :class:`AudioEventProtocol`.

Every event Nova sends or receives is a ``chunk``: a JSON document ``{"bytes": "<base64>"}`` in an event-stream
message. The SDK treats each one generically, and at tens of events a second per call that is a large share of
a call's processor time:

- sending, the schema-driven serializer walks two nested structures and runs a regular expression over the
  base64 text (about 23 µs for a 100 ms audio event); the message is three fixed headers and that JSON;
- receiving, ``AsyncBytesReader.read`` runs two ``runtime_checkable`` protocol checks (``getattr_static`` on
  every protocol attribute) for each of the four reads of every event, and copies the unread rest of the chunk
  at each; ``Event.decode_async`` then parses the same three headers again for every event (a dataclass per
  prelude and message, a decoder object, a call per header field) and the schema-driven deserializer resolves
  the union member through three more layers.

:class:`AudioEventProtocol` is the SDK's ``RestJsonClientProtocol`` (``agent.nova.sdk_seam`` puts it into the
config strands resolves) whose publisher and receiver take a direct path for chunk events and hand anything
else (exceptions, errors, other shapes) to the SDK's own code. Tests check that both paths give the same
messages, bytes, objects and errors as the SDK's serializer, reader, decoder and deserializer.

Upstream: ``AsyncBytesReader`` could check its source's type once, at construction, and buffer with a
``bytearray``; the event serializer could write a blob member's base64 without escaping it; the event decoder
could read a message in one read (its prelude gives the length) and keep the decoded headers of a header block
it has seen.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import json
import struct
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from typing import Any, cast

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
from smithy_aws_event_stream.aio import AWSEventPublisher, AWSEventReceiver
from smithy_aws_event_stream.events import MAX_HEADERS_LENGTH, MAX_PAYLOAD_LENGTH, Event, EventMessage
from smithy_aws_event_stream.exceptions import EventError
from smithy_core.aio.utils import close

__all__ = ["AudioEventProtocol", "ChunkPublisher", "ChunkReader", "ChunkReceiver", "bedrock_protocol"]

_CHUNK_HEADERS = {":message-type": "event", ":event-type": "chunk", ":content-type": "application/json"}
"""The headers the SDK's serializer gives every input chunk, in its order."""
_OPEN, _CLOSE = b'{"bytes":"', b'"}'
_PRELUDE_BYTES = 12
"""Total length, headers length, prelude CRC: each a big-endian uint32."""
_MESSAGE_OVERHEAD = 16
"""The prelude and the message CRC after the payload."""
_LONGEST_MESSAGE = _MESSAGE_OVERHEAD + MAX_HEADERS_LENGTH + MAX_PAYLOAD_LENGTH
_KNOWN_HEADER_BLOCKS = 8
"""Header blocks a receiver remembers decoded (a stream's chunk events all carry the same one)."""


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
    if not is_chunk_event(message.headers):
        return None
    return _chunk_of(message.payload)


def is_chunk_event(headers: Mapping[str, Any]) -> bool:
    """Whether a message with these headers is a ``chunk`` event (its payload decides the rest)."""
    return headers.get(":message-type") == "event" and headers.get(":event-type") == "chunk"


def _chunk_of(payload: bytes) -> InvokeModelWithBidirectionalStreamOutputChunk | None:
    """The output chunk a chunk event's payload holds, or None where it is not the plain ``{"bytes": ...}``.

    Nova writes it as ``{"bytes":"<base64>"}``: if what lies between those quotes is valid base64 (nothing but
    its alphabet, so the JSON string holds exactly those characters), it is decoded without parsing the JSON
    (a few µs for the kilobytes of an audio event); anything else is parsed.
    """
    if payload.startswith(_OPEN) and payload.endswith(_CLOSE):
        with contextlib.suppress(binascii.Error):
            return _output_chunk(base64.b64decode(payload[len(_OPEN) : -len(_CLOSE)], validate=True))
    try:
        document = json.loads(payload)
    except ValueError:
        return None
    if type(document) is not dict or document.keys() != {"bytes"} or type(document["bytes"]) is not str:
        return None
    try:
        data = base64.b64decode(document["bytes"], validate=True)
    except binascii.Error:
        return None
    return _output_chunk(data)


def _output_chunk(data: bytes) -> InvokeModelWithBidirectionalStreamOutputChunk:
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
        await self._fill(size)
        if size < 0 or size >= len(buffer):
            data = bytes(buffer)
            buffer.clear()
            return data
        data = bytes(buffer[:size])
        del buffer[:size]  # a bytearray drops its head in place, without moving the rest
        return data

    async def read_message(self) -> bytes:
        """The next event-stream message's bytes, in one read: as long as its prelude says once its prelude CRC
        holds (and the length is one the SDK would read), else just the prelude; fewer at the end of the body."""
        await self._fill(_PRELUDE_BYTES)
        size = _PRELUDE_BYTES
        if len(self._buffer) >= _PRELUDE_BYTES:
            total, _, prelude_crc = struct.unpack_from("!III", self._buffer)
            if zlib.crc32(memoryview(self._buffer)[:8]) == prelude_crc and total <= _LONGEST_MESSAGE:
                size = max(total, _PRELUDE_BYTES)
        return await self.read(size)

    async def _fill(self, size: int) -> None:
        """Read body chunks until ``size`` bytes are buffered (all of them for a negative size) or the body ends."""
        buffer = self._buffer
        while (size < 0 or len(buffer) < size) and not self._ended:
            chunk = await anext(self._chunks, None)
            if chunk is None:
                self._ended = True
            else:
                buffer += chunk

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
    """The SDK's receiver, reading a :class:`ChunkReader` a message at a time. A chunk event whose header block
    the SDK has decoded before (and whose CRCs hold) is built directly; every other message is the SDK's to
    decode, from the same bytes, so it decodes or fails as it would have."""

    def __init__(
        self, payload_codec: Any, source: ChunkReader, deserializer: Callable[[Any], Any], is_client_mode: bool = True
    ) -> None:
        super().__init__(payload_codec, source, deserializer, is_client_mode)
        self._chunk_headers: set[bytes] = set()
        """Header blocks the SDK decoded as a chunk event's: the same bytes decode the same way."""

    async def receive(self) -> Any:
        if self._closed:
            return None
        try:
            message = await cast(ChunkReader, self._source).read_message()  # the one __init__ takes
            if not message:
                return None  # the end of the body, between messages
            chunk = self._known_chunk(message)
            if chunk is not None:
                return chunk
            event = Event.decode(io.BytesIO(message))
        except Exception as e:
            await self.close()
            if not isinstance(e, EventError):
                raise OSError("Failed to read from stream.") from e
            raise
        if event is None:
            return None
        if is_chunk_event(event.message.headers) and len(self._chunk_headers) < _KNOWN_HEADER_BLOCKS:
            self._chunk_headers.add(message[_PRELUDE_BYTES : _PRELUDE_BYTES + event.prelude.headers_length])
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

    def _known_chunk(self, message: bytes) -> InvokeModelWithBidirectionalStreamOutputChunk | None:
        """``message`` read directly, where it is a whole, intact chunk event with a header block seen before.

        Whole means as long as its prelude says, which ``read_message`` reads only once the prelude's CRC holds."""
        if len(message) < _MESSAGE_OVERHEAD:
            return None
        total, headers_length = struct.unpack_from("!II", message)
        payload_at = _PRELUDE_BYTES + headers_length
        payload_length = total - _MESSAGE_OVERHEAD - headers_length
        if total != len(message) or not 0 <= payload_length <= MAX_PAYLOAD_LENGTH:
            return None
        view = memoryview(message)
        if zlib.crc32(view[:-4]) != int.from_bytes(view[-4:]):
            return None
        if message[_PRELUDE_BYTES:payload_at] not in self._chunk_headers:
            return None
        return _chunk_of(message[payload_at:-4])


class AudioEventProtocol(RestJsonClientProtocol):
    """Bedrock Runtime's protocol, whose bidirectional stream takes :class:`ChunkPublisher` and
    :class:`ChunkReceiver` (every other operation and stream: the SDK's)."""

    def create_event_publisher(self, **kwargs: Any) -> Any:  # type: ignore[override]
        sdk = super().create_event_publisher(**kwargs)  # the SDK's checks, writer and signing set-up
        if (
            kwargs.get("event_type") is not InvokeModelWithBidirectionalStreamInput
            or type(sdk) is not AWSEventPublisher
        ):
            return sdk
        # The same writer and signing the SDK's publisher holds (the attributes ChunkPublisher inherits).
        return ChunkPublisher(
            payload_codec=self.payload_codec, async_writer=sdk._writer, signing_config=sdk._signing_config
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

"""Nova Sonic's two layers of AWS event-stream framing, both directions.

Client → server: a SigV4 signing envelope (``:date``, ``:chunk-signature``) whose payload is an event
message (``:event-type=chunk``, ``:message-type=event``) whose payload is ``{"bytes": base64(JSON)}``;
an empty envelope ends the input. Server → client: the inner message alone, or an exception message
(``:message-type=exception``, ``:exception-type``) with ``{"message": ...}``. Encoding and CRC checks
are ``smithy_aws_event_stream``'s, so what passes here is what the SDK itself would produce or accept.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import io
import json
import struct
from dataclasses import dataclass
from typing import Any

from smithy_aws_event_stream.events import Event, EventMessage

__all__ = [
    "EndOfInput",
    "EnvelopeReader",
    "FramingError",
    "NovaEvent",
    "ServerMessageReader",
    "encode_client_envelope",
    "encode_end_of_input",
    "encode_event",
    "encode_exception",
]

_PRELUDE = struct.Struct("!II")
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The event-stream format's own ceiling on one message (prelude + headers + payload + CRCs)."""


class FramingError(ValueError):
    """Bytes that are not a well-formed Nova message: the stream cannot continue after one."""


@dataclass(frozen=True)
class NovaEvent:
    """One decoded client event: ``name`` is the single key under ``"event"``, ``body`` its value."""

    name: str
    body: dict[str, Any]


@dataclass(frozen=True)
class EndOfInput:
    """The client's empty signed envelope: it will send nothing more on this stream."""


class _MessageSplitter:
    """Cuts a byte stream into whole event-stream messages (HTTP/2 DATA frames split them anywhere)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Event]:
        self._buffer += data
        messages: list[Event] = []
        while len(self._buffer) >= _PRELUDE.size:
            total, _ = _PRELUDE.unpack_from(self._buffer)
            if total < 16 or total > MAX_MESSAGE_BYTES:
                raise FramingError(f"message length {total} out of range")
            if len(self._buffer) < total:
                break
            raw = bytes(self._buffer[:total])
            del self._buffer[:total]
            try:
                event = Event.decode(io.BytesIO(raw))
            except Exception as error:  # the decoder raises several types for bad CRCs and headers
                raise FramingError(f"undecodable event-stream message: {error}") from error
            if event is None:
                raise FramingError("empty event-stream message")
            messages.append(event)
        return messages

    @property
    def pending(self) -> int:
        return len(self._buffer)


class EnvelopeReader:
    """Server side: signed envelopes in, ``NovaEvent`` / ``EndOfInput`` out. Signatures are not checked."""

    def __init__(self) -> None:
        self._splitter = _MessageSplitter()

    def feed(self, data: bytes) -> list[NovaEvent | EndOfInput]:
        return [_open_envelope(event.message) for event in self._splitter.feed(data)]

    @property
    def pending(self) -> int:
        """Bytes of an incomplete message still buffered (non-zero at end of stream means truncation)."""
        return self._splitter.pending


def _open_envelope(envelope: EventMessage) -> NovaEvent | EndOfInput:
    headers = envelope.headers
    if ":date" not in headers or ":chunk-signature" not in headers:
        raise FramingError(f"envelope without signing headers: {sorted(headers)}")
    if not envelope.payload:
        return EndOfInput()
    try:
        inner = Event.decode(io.BytesIO(envelope.payload))
    except Exception as error:
        raise FramingError(f"envelope payload is not an event-stream message: {error}") from error
    if inner is None:
        raise FramingError("envelope payload is empty")
    inner_headers = inner.message.headers
    if inner_headers.get(":message-type") != "event" or inner_headers.get(":event-type") != "chunk":
        raise FramingError(f"inner message is not a chunk event: {inner_headers}")
    try:
        part = json.loads(inner.message.payload)
        document = json.loads(base64.b64decode(part["bytes"], validate=True))
        (name, body), *rest = document["event"].items()
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as error:
        raise FramingError(f"chunk payload is not {{'bytes': base64(JSON event)}}: {error}") from error
    if rest or not isinstance(body, dict):
        raise FramingError(f"an event must hold exactly one named object, got {list(document['event'])}")
    return NovaEvent(name, body)


def _chunk_message(document: dict[str, Any]) -> EventMessage:
    raw = json.dumps(document, separators=(",", ":")).encode()
    payload = b'{"bytes":"' + base64.b64encode(raw) + b'"}'  # compact, as Bedrock writes its chunks
    headers: dict[str, Any] = {
        ":event-type": "chunk",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return EventMessage(headers=headers, payload=payload)


def encode_event(name: str, body: dict[str, Any]) -> bytes:
    """A server → client Nova event (``{"event": {name: body}}``) as the SDK expects it."""
    return _chunk_message({"event": {name: body}}).encode()


def encode_exception(exception_type: str, message: str) -> bytes:
    """A modelled stream exception such as ``modelTimeoutException`` (raised by the SDK's receiver)."""
    headers: dict[str, Any] = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return EventMessage(headers=headers, payload=json.dumps({"message": message}).encode()).encode()


def _envelope(payload: bytes) -> bytes:
    headers: dict[str, Any] = {
        ":date": datetime.datetime.now(datetime.UTC),
        ":chunk-signature": b"\x00" * 32,  # unsigned: the local server does not check signatures
    }
    return EventMessage(headers=headers, payload=payload).encode()


def encode_client_envelope(name: str, body: dict[str, Any]) -> bytes:
    """Client side, for raw test clients: one event wrapped the way the SDK's signer wraps it."""
    return _envelope(_chunk_message({"event": {name: body}}).encode())


def encode_end_of_input() -> bytes:
    """Client side: the empty envelope that ends the input stream."""
    return _envelope(b"")


class ServerMessageReader:
    """Client side, for raw test clients: server bytes in, ``("event", NovaEvent)`` or ``("exception", ...)``."""

    def __init__(self) -> None:
        self._splitter = _MessageSplitter()

    def feed(self, data: bytes) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        for event in self._splitter.feed(data):
            headers = event.message.headers
            if headers.get(":message-type") == "exception":
                out.append(("exception", (headers[":exception-type"], json.loads(event.message.payload))))
                continue
            document = json.loads(base64.b64decode(json.loads(event.message.payload)["bytes"]))
            (name, body), *_ = document["event"].items()
            out.append(("event", NovaEvent(name, body)))
        return out

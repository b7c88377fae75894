"""SigV4 event-stream signing without the per-event waste: :class:`CachingEventSigner`, :class:`CachingSigV4Scheme`.

Every event the AWS SDK sends on Nova's input stream is signed by ``aws_sdk_signers.AsyncEventSigner``,
which derives the SigV4 signing key again for each one (four HMACs that change once a day), hashes the
``:date`` header it encoded through a generic header encoder, and leaves the signed message for the
publisher to frame a second time (headers encoded again, prelude, two CRCs). At 20 events a second per
call that is most of the send path's cost.

:class:`CachingEventSigner` produces the same signatures and the same bytes (tests compare it with the
SDK's signer on the same inputs) with the key derived once per (secret, day, region, service), the
``:date`` header packed directly, and the frame built once: the event it returns carries its encoded form,
so the publisher's ``encode()`` hands it back. It signs with no ``await`` inside, so signatures chain in
order without a lock.

:class:`CachingSigV4Scheme` is the SDK's ``SigV4AuthScheme`` whose ``event_signer()`` returns it;
``agent.nova.sdk_seam`` puts it into the config strands resolves. Upstream: ``AsyncEventSigner`` should
cache the derived key per scope (as botocore's signers do not need to, since they sign once per request)
and ``AWSEventPublisher`` should not re-encode a message the signer just encoded.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import re
from binascii import hexlify
from collections.abc import Callable
from struct import pack
from typing import Any
from zlib import crc32

from aws_sdk_signers import SigV4SigningProperties
from smithy_aws_core.auth.sigv4 import SigV4AuthScheme
from smithy_aws_event_stream.events import EventHeaderEncoder, EventMessage

__all__ = ["CachingEventSigner", "CachingSigV4Scheme", "EncodedEvent"]

_TIMESTAMP_FORMAT = "%Y%m%dT%H%M%SZ"  # aws_sdk_signers.signers.SIGV4_TIMESTAMP_FORMAT
_DATE_KEY = b"\x05:date\x08"  # key length, key, type 8 (timestamp)
_SIGNATURE_KEY = b"\x10:chunk-signature\x06"  # key length, key, type 6 (bytes)
_SIGNATURE_LENGTH = pack("!H", 32)
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _frame(headers: bytes, payload: bytes) -> bytes:
    """An event-stream message: prelude, prelude CRC, headers, payload, message CRC (as ``_EventEncoder``)."""
    prelude = pack("!II", len(headers) + len(payload) + 16, len(headers))
    prelude_check = crc32(prelude)
    prelude_crc = pack("!I", prelude_check)
    message_crc = crc32(payload, crc32(headers, crc32(prelude_crc, prelude_check)))
    return b"".join((prelude, prelude_crc, headers, payload, pack("!I", message_crc)))


class EncodedEvent(EventMessage):
    """A signed event message that already holds its encoded bytes (``encode()`` returns them)."""

    def __init__(self, *, headers: dict[str, Any], payload: bytes, encoded: bytes) -> None:
        super().__init__(headers=headers, payload=payload)
        self._encoded = encoded

    def encode(self) -> bytes:
        return self._encoded


class CachingEventSigner:
    """``AsyncEventSigner``'s signatures and bytes, with the signing key cached and each frame built once."""

    def __init__(self, *, initial_signature: bytes, now: Callable[[], datetime.datetime] = _utc_now) -> None:
        self._prior_signature = initial_signature
        self._now = now
        self._keys: dict[tuple[str, str, str, str], bytes] = {}
        self._inner_headers: dict[tuple[tuple[str, type, Any], ...], bytes] = {}
        self._is_finalized = False
        self._second: int | None = None
        self._second_text = ""

    async def sign(self, *, event: EventMessage, identity: Any, properties: SigV4SigningProperties) -> EventMessage:
        return self._sign(event, self._encode_inner(event), identity, properties, is_final=False)

    async def sign_empty(
        self, *, event: EventMessage, identity: Any, properties: SigV4SigningProperties
    ) -> EventMessage:
        """The final empty message that ends the stream (after it, nothing more can be signed)."""
        if event.headers or event.payload:
            raise ValueError("sign_empty requires an event with no headers and an empty payload.")
        return self._sign(event, b"", identity, properties, is_final=True)

    def _sign(
        self,
        event: EventMessage,
        payload: bytes,
        identity: Any,
        properties: SigV4SigningProperties,
        *,
        is_final: bool,
    ) -> EventMessage:
        if self._is_finalized:
            raise RuntimeError("Cannot sign event stream messages after the final empty event has been signed.")
        date_obj = self._now()
        millis = int(date_obj.timestamp() * 1000)
        timestamp = properties.get("date") or self._timestamp(date_obj, millis // 1000)
        day, region, service = timestamp[:8], properties["region"], properties["service"]
        date_header = _DATE_KEY + pack("!q", millis)
        string_to_sign = (
            "AWS4-HMAC-SHA256-PAYLOAD\n"
            f"{timestamp}\n"
            f"{day}/{region}/{service}/aws4_request\n"
            f"{self._prior_signature.decode('utf-8')}\n"
            f"{hashlib.sha256(date_header).hexdigest()}\n"
            f"{hashlib.sha256(payload).hexdigest() if payload else _EMPTY_SHA256}"
        )
        key = self._signing_key(identity.secret_access_key, day, region, service)
        signature = hmac.digest(key, string_to_sign.encode("utf-8"), "sha256")
        self._prior_signature = hexlify(signature)
        if is_final:
            self._is_finalized = True
        headers: dict[str, Any] = {":date": date_obj, ":chunk-signature": signature}
        encoded = _frame(date_header + _SIGNATURE_KEY + _SIGNATURE_LENGTH + signature, payload)
        event.headers, event.payload = headers, payload
        return EncodedEvent(headers=headers, payload=payload, encoded=encoded)

    def _timestamp(self, date_obj: datetime.datetime, second: int) -> str:
        """SigV4's timestamp of ``date_obj``: formatted once per second (tens of events share it)."""
        if second != self._second:
            self._second, self._second_text = second, date_obj.strftime(_TIMESTAMP_FORMAT)
        return self._second_text

    def _signing_key(self, secret: str, day: str, region: str, service: str) -> bytes:
        """SigV4's derived key for one scope: the same all day, so derived once (per credentials, too)."""
        scope = (secret, day, region, service)
        key = self._keys.get(scope)
        if key is None:
            key = ("AWS4" + secret).encode("utf-8")
            for part in (day, region, service, "aws4_request"):
                key = hmac.digest(key, part.encode("utf-8"), "sha256")
            self._keys.clear()  # one scope at a time: a new day or new credentials replace the old key
            self._keys[scope] = key
        return key

    def _encode_inner(self, event: EventMessage) -> bytes:
        """``event.encode()``, with its headers (the same few per event type) encoded once per kind."""
        try:
            shape = tuple((name, type(value), value) for name, value in event.headers.items())
            headers = self._inner_headers.get(shape)
        except TypeError:  # an unhashable header value: encode the usual way
            return event.encode()
        if headers is None:
            encoder = EventHeaderEncoder()
            encoder.encode_headers(event.headers)
            headers = encoder.get_result()
            if len(self._inner_headers) < 64:
                self._inner_headers[shape] = headers
        return _frame(headers, event.payload)


class CachingSigV4Scheme(SigV4AuthScheme):
    """The SDK's SigV4 scheme; its event streams are signed by :class:`CachingEventSigner`."""

    def event_signer(self, *, request: Any) -> CachingEventSigner:  # type: ignore[override]
        auth_value = request.fields["Authorization"].as_string()
        signature = re.split("Signature=", auth_value)[-1]
        return CachingEventSigner(initial_signature=signature.encode("utf-8"))

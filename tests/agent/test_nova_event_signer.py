"""The caching event signer signs exactly as the SDK's own ``AsyncEventSigner``: same signatures, same bytes."""

from __future__ import annotations

import asyncio
import datetime
import types
from typing import Any

import aws_sdk_signers.signers as sdk_signers
import pytest
from aws_sdk_signers import AsyncEventSigner
from smithy_aws_core.identity import AWSCredentialsIdentity
from smithy_aws_event_stream.events import EventHeaderEncoder, EventMessage

from agent.nova.event_signer import CachingEventSigner, CachingSigV4Scheme

UTC = datetime.UTC
INITIAL = b"4a6f1b2c9d8e7f60514233241506f7e8d9cabbccddeeff00112233445566778"
PROPERTIES: Any = {"region": "us-east-1", "service": "bedrock"}
ALICE = AWSCredentialsIdentity(
    access_key_id="AKIDEXAMPLE", secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
)
BOB = AWSCredentialsIdentity(access_key_id="AKIDOTHER", secret_access_key="another/secret+key", session_token="tok")

TIMES = [
    datetime.datetime(2026, 12, 2, 9, 30, 0, 123456, tzinfo=UTC),
    datetime.datetime(2026, 12, 2, 9, 30, 0, 183000, tzinfo=UTC),
    datetime.datetime(2026, 12, 2, 23, 59, 59, 999000, tzinfo=UTC),
    datetime.datetime(2026, 12, 3, 0, 0, 0, 41000, tzinfo=UTC),  # the next day: a new signing key
    datetime.datetime(2026, 12, 3, 0, 0, 0, 99000, tzinfo=UTC),  # new credentials, same day
    datetime.datetime(2026, 12, 3, 0, 0, 1, 0, tzinfo=UTC),
]
IDENTITIES = [ALICE, ALICE, ALICE, ALICE, BOB, BOB]


def _event(index: int) -> EventMessage:
    """An event as the SDK's serializer makes one for Bedrock's input stream (a chunk of JSON bytes)."""
    payload = b'{"bytes":"' + (b"eyJldmVudCI6eyJhdWRpb0lucHV0Ijp7fX19" * (index + 1)) + b'"}'
    headers: dict[str, Any] = {":message-type": "event", ":event-type": "chunk", ":content-type": "application/json"}
    if index == 2:
        headers = {":message-type": "event", ":event-type": "chunk"}
    return EventMessage(headers=headers, payload=payload)


class _Clock:
    def __init__(self, times: list[datetime.datetime]) -> None:
        self._times = iter(times)

    def __call__(self) -> datetime.datetime:
        return next(self._times)


def _sdk_datetime(clock: _Clock) -> types.SimpleNamespace:
    """A stand-in for the ``datetime`` module the SDK's signer reads the time from."""

    class _Datetime(datetime.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:  # type: ignore[override]
            return clock()

    return types.SimpleNamespace(datetime=_Datetime, UTC=UTC)


async def _sign_all(signer: Any, identities: list[AWSCredentialsIdentity]) -> list[tuple[Any, bytes]]:
    signed = []
    for index, identity in enumerate(identities):
        result = await signer.sign(event=_event(index), identity=identity, properties=PROPERTIES)
        signed.append((result.headers[":chunk-signature"], result.encode()))
    end = await signer.sign_empty(event=EventMessage(), identity=identities[-1], properties=PROPERTIES)
    signed.append((end.headers[":chunk-signature"], end.encode()))
    return signed


def _sdk_signed(monkeypatch: pytest.MonkeyPatch, identities: list[AWSCredentialsIdentity]) -> list[tuple[Any, bytes]]:
    monkeypatch.setattr(sdk_signers, "datetime", _sdk_datetime(_Clock([*TIMES, TIMES[-1]])))
    sdk = AsyncEventSigner(initial_signature=INITIAL, event_encoder_cls=EventHeaderEncoder)
    return asyncio.run(_sign_all(sdk, identities))


def _ours() -> CachingEventSigner:
    return CachingEventSigner(initial_signature=INITIAL, now=_Clock([*TIMES, TIMES[-1]]))


def test_signatures_and_bytes_are_the_sdks(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _sdk_signed(monkeypatch, IDENTITIES)
    ours = asyncio.run(
        _sign_all(CachingEventSigner(initial_signature=INITIAL, now=_Clock([*TIMES, TIMES[-1]])), IDENTITIES)
    )
    assert len(ours) == len(expected) == len(TIMES) + 1
    for index, ((signature, encoded), (sdk_signature, sdk_encoded)) in enumerate(zip(ours, expected, strict=True)):
        assert signature == sdk_signature, f"event {index}"
        assert encoded == sdk_encoded, f"event {index}"


def test_the_comparison_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another secret, or another time, gives other bytes: the equality above says something."""
    expected = _sdk_signed(monkeypatch, IDENTITIES)
    other_secret = [ALICE, ALICE, BOB, BOB, BOB, BOB]
    ours = asyncio.run(
        _sign_all(CachingEventSigner(initial_signature=INITIAL, now=_Clock([*TIMES, TIMES[-1]])), other_secret)
    )
    assert ours[:2] == expected[:2]
    assert all(a != b for a, b in zip(ours[2:], expected[2:], strict=True))
    shifted = [TIMES[0] + datetime.timedelta(milliseconds=1), *TIMES[1:], TIMES[-1]]
    ours = asyncio.run(_sign_all(CachingEventSigner(initial_signature=INITIAL, now=_Clock(shifted)), IDENTITIES))
    assert ours[0] != expected[0]


def test_a_fixed_date_property_is_used_for_the_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    dated: Any = {**PROPERTIES, "date": "20261202T093000Z"}
    monkeypatch.setattr(sdk_signers, "datetime", _sdk_datetime(_Clock([TIMES[0]])))
    sdk = AsyncEventSigner(initial_signature=INITIAL, event_encoder_cls=EventHeaderEncoder)
    expected = asyncio.run(sdk.sign(event=_event(0), identity=ALICE, properties=dated)).encode()
    ours = CachingEventSigner(initial_signature=INITIAL, now=_Clock([TIMES[0]]))
    assert asyncio.run(ours.sign(event=_event(0), identity=ALICE, properties=dated)).encode() == expected


def test_nothing_is_signed_after_the_end() -> None:
    signer = CachingEventSigner(initial_signature=INITIAL, now=_Clock(TIMES))
    asyncio.run(signer.sign_empty(event=EventMessage(), identity=ALICE, properties=PROPERTIES))
    with pytest.raises(RuntimeError):
        asyncio.run(signer.sign(event=_event(0), identity=ALICE, properties=PROPERTIES))
    with pytest.raises(ValueError):
        asyncio.run(
            CachingEventSigner(initial_signature=INITIAL).sign_empty(
                event=_event(0), identity=ALICE, properties=PROPERTIES
            )
        )


def test_the_scheme_starts_the_chain_from_the_requests_signature() -> None:
    request = types.SimpleNamespace(
        fields={
            "Authorization": types.SimpleNamespace(
                as_string=lambda: f"AWS4-HMAC-SHA256 Credential=x, Signature={INITIAL.decode()}"
            )
        }
    )
    signer = CachingSigV4Scheme(service="bedrock").event_signer(request=request)
    assert isinstance(signer, CachingEventSigner)
    assert signer._prior_signature == INITIAL

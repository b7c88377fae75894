"""Signatures (against Twilio's published vectors) and call tokens."""

from __future__ import annotations

import base64

import pytest
from twilio.request_validator import RequestValidator

from telephony.twilio.security import (
    PARAMETER_NAME,
    CallTokens,
    TokenError,
    public_url_for,
    token_secret,
    verify_http_signature,
    verify_websocket_signature,
)

DOC_URL = "https://mycompany.com/myapp.php?foo=1&bar=2"


def _doc_params(number: str) -> dict[str, str]:
    return {"CallSid": "CA1234567890ABCDE", "Caller": number, "Digits": "1234", "From": number, "To": "+18005551212"}


# Twilio has published the same example with two phone numbers; each has its own signature.
DOC_VECTORS = [
    ("+14158675310", "GvWf1cFY/Q7PnoempGyD5oXAezc="),  # twilio.com/docs/usage/security today
    ("+12349013030", "0/KCTR6DLpKmkAf8muzZqo1nDgQ="),  # older docs and the SDKs' own tests
]


# ---------------------------------------------------------------------------------- public URLs


@pytest.mark.parametrize(
    ("base", "path", "query", "expected"),
    [
        ("https://abc.ngrok.app", "/twiml", "x=1", "https://abc.ngrok.app/twiml?x=1"),
        ("https://abc.ngrok.app/", "/twiml", "", "https://abc.ngrok.app/twiml"),
        ("https://abc.ngrok.app", "twiml", "?x=1", "https://abc.ngrok.app/twiml?x=1"),
        ("https://abc-12.ngrok-free.app", "/twiml", "", "https://abc-12.ngrok-free.app/twiml"),
        ("https://example.com/bot", "/twiml", "", "https://example.com/bot/twiml"),
        ("https://example.com/bot/", "/twiml", "a=1&b=2", "https://example.com/bot/twiml?a=1&b=2"),
        ("https://example.com:8443/v1/bot", "/media-stream", "", "https://example.com:8443/v1/bot/media-stream"),
        ("http://localhost:8080", "/twiml", "", "http://localhost:8080/twiml"),
    ],
)
def test_public_url_for(base: str, path: str, query: str, expected: str) -> None:
    assert public_url_for(base, path, query) == expected


def test_public_url_for_rejects_a_relative_base() -> None:
    with pytest.raises(ValueError):
        public_url_for("abc.ngrok.app", "/twiml")


# ------------------------------------------------------------------------------ HTTP signatures


@pytest.mark.parametrize(("number", "signature"), DOC_VECTORS)
def test_twilio_published_http_vector(number: str, signature: str) -> None:
    params = _doc_params(number)
    assert RequestValidator("12345").compute_signature(DOC_URL, params) == signature
    assert verify_http_signature("12345", DOC_URL, params, signature)
    assert verify_http_signature("12345", DOC_URL, sorted(params.items(), reverse=True), signature)


def test_http_signature_rejects_changes() -> None:
    number, signature = DOC_VECTORS[0]
    params = _doc_params(number)
    assert not verify_http_signature("12345", DOC_URL, {**params, "Digits": "9999"}, signature)
    assert not verify_http_signature("12345", DOC_URL, {**params, "Extra": "1"}, signature)
    assert not verify_http_signature("12346", DOC_URL, params, signature)
    assert not verify_http_signature("12345", DOC_URL.replace("https", "http"), params, signature)
    assert not verify_http_signature("12345", "https://evil.example/myapp.php?foo=1&bar=2", params, signature)
    assert not verify_http_signature("12345", DOC_URL, params, signature[:-2])
    assert not verify_http_signature("12345", DOC_URL, params, None)
    assert not verify_http_signature("12345", DOC_URL, params, "")
    assert not verify_http_signature("", DOC_URL, params, signature)
    assert not verify_http_signature("12345", DOC_URL, params, "é" * 28)


def test_http_signature_accepts_the_default_port_either_way() -> None:
    number, signature = DOC_VECTORS[0]
    params = _doc_params(number)
    assert verify_http_signature("12345", "https://mycompany.com:443/myapp.php?foo=1&bar=2", params, signature)
    with_port = RequestValidator("12345").compute_signature("https://mycompany.com:443/myapp.php", params)
    assert verify_http_signature("12345", "https://mycompany.com/myapp.php", params, with_port)
    other_port = RequestValidator("12345").compute_signature("https://mycompany.com:8443/myapp.php", params)
    assert not verify_http_signature("12345", "https://mycompany.com/myapp.php", params, other_port)


def test_http_signature_with_repeated_names() -> None:
    url = "https://example.com/twiml"
    pairs = [("To", "+18005551212"), ("Tag", "b"), ("Tag", "a"), ("CallSid", "CA1")]
    signed = url + "CallSidCA1" + "Taga" + "Tagb" + "To+18005551212"
    expected = RequestValidator("tok").compute_signature(signed, {})
    assert verify_http_signature("tok", url, pairs, expected)
    assert not verify_http_signature("tok", url, [p for p in pairs if p != ("Tag", "a")], expected)


def test_http_signature_accepts_starlette_form_data() -> None:
    from starlette.datastructures import FormData

    url = "https://example.com/twiml"
    form = FormData([("Tag", "b"), ("Tag", "a"), ("CallSid", "CA1")])
    expected = RequestValidator("tok").compute_signature(url + "CallSidCA1TagaTagb", {})
    assert verify_http_signature("tok", url, form, expected)


# ------------------------------------------------------------------------- WebSocket signatures

WS_SIGNATURE = "7PR3qMkpDyEJtMrVOY/LDyNq8J8="  # token 12345 over wss://example.com/media


def test_websocket_vector() -> None:
    assert RequestValidator("12345").compute_signature("wss://example.com/media", {}) == WS_SIGNATURE
    assert verify_websocket_signature("12345", "https://example.com", "/media", WS_SIGNATURE)
    assert verify_websocket_signature("12345", "https://example.com/", "media", WS_SIGNATURE)


def test_websocket_trailing_slash_either_way() -> None:
    assert verify_websocket_signature("12345", "https://example.com", "/media/", WS_SIGNATURE)
    slashed = RequestValidator("12345").compute_signature("wss://example.com/media/", {})
    assert verify_websocket_signature("12345", "https://example.com", "/media", slashed)


def test_websocket_signature_rejections() -> None:
    assert not verify_websocket_signature("54321", "https://example.com", "/media", WS_SIGNATURE)
    assert not verify_websocket_signature("12345", "https://example.org", "/media", WS_SIGNATURE)
    assert not verify_websocket_signature("12345", "https://example.com", "/other", WS_SIGNATURE)
    assert not verify_websocket_signature("12345", "https://example.com/prefix", "/media", WS_SIGNATURE)
    assert not verify_websocket_signature("12345", "https://example.com", "/media", None)
    assert not verify_websocket_signature("12345", "https://example.com", "/media", "")


def test_websocket_scheme_comes_from_the_base() -> None:
    validator = RequestValidator("12345")
    plain = validator.compute_signature("ws://localhost:8080/media", {})
    assert verify_websocket_signature("12345", "http://localhost:8080", "/media", plain)
    assert not verify_websocket_signature("12345", "https://localhost:8080", "/media", plain)
    https_signed = validator.compute_signature("https://example.com/media", {})
    assert not verify_websocket_signature("12345", "https://example.com", "/media", https_signed)


def test_websocket_path_prefix() -> None:
    signature = RequestValidator("12345").compute_signature("wss://example.com/bot/media-stream", {})
    assert verify_websocket_signature("12345", "https://example.com/bot/", "/media-stream", signature)


# ---------------------------------------------------------------------------------- call tokens


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


SID = "CA" + "0" * 32


def _reason(tokens: CallTokens, token: str | None, call_sid: str = SID) -> str:
    with pytest.raises(TokenError) as caught:
        tokens.verify(token, call_sid)
    return caught.value.reason


def _flip(token: str, index: int) -> str:
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[index] ^= 0x01
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


def test_parameter_name() -> None:
    assert PARAMETER_NAME == "voicebotToken"


def test_round_trip_and_shape() -> None:
    tokens = CallTokens(b"k" * 32)
    token = tokens.mint(SID)
    assert len(token) < 200
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert SID not in token
    tokens.verify(token, SID)
    assert tokens.mint(SID) != token


def test_token_error_is_a_value_error() -> None:
    assert issubclass(TokenError, ValueError)
    assert str(TokenError("expired")) == "expired"


def test_missing_and_malformed() -> None:
    tokens = CallTokens("secret")
    token = tokens.mint(SID)
    assert _reason(tokens, None) == "missing"
    assert _reason(tokens, "") == "missing"
    dotted = token.replace(token[5], ".")
    for bad in ("abc", token[:-1], token + "A", token[:-1] + "!", "=" * len(token), dotted, "x" * 5000):
        assert _reason(tokens, bad) == "malformed", bad


def test_tampered_payload_and_signature() -> None:
    tokens = CallTokens("secret")
    token = tokens.mint(SID)
    for index in (0, 3, 12, 30, 50, 72):  # version, time, nonce, call SID digest, MAC (first and last byte)
        assert _reason(tokens, _flip(token, index)) == "bad signature"
    tokens.verify(token, SID)  # refusals did not use it up


def test_wrong_call_sid() -> None:
    tokens = CallTokens("secret")
    token = tokens.mint(SID)
    assert _reason(tokens, token, "CA" + "1" * 32) == "wrong call SID"
    assert _reason(tokens, token, "") == "wrong call SID"
    tokens.verify(token, SID)


def test_expired() -> None:
    clock = Clock()
    tokens = CallTokens("secret", ttl_s=120, clock=clock)
    token = tokens.mint(SID)
    clock.now += 120.5
    assert _reason(tokens, token) == "expired"
    fresh = tokens.mint(SID)
    clock.now += 119.5
    tokens.verify(fresh, SID)


def test_future_dated() -> None:
    clock = Clock()
    minting = CallTokens("secret", clock=clock)
    later = minting.mint(SID)
    clock.now -= 10
    assert _reason(CallTokens("secret", clock=clock), later) == "issued in the future"
    clock.now += 6  # within the 5 s skew
    CallTokens("secret", clock=clock).verify(later, SID)


def test_replay_is_refused() -> None:
    tokens = CallTokens("secret")
    token = tokens.mint(SID)
    tokens.verify(token, SID)
    assert _reason(tokens, token) == "replayed"


def test_other_secret_refuses() -> None:
    token = CallTokens("secret").mint(SID)
    assert _reason(CallTokens("another secret"), token) == "bad signature"
    CallTokens(b"secret").verify(token, SID)  # str and bytes secrets agree


def test_replay_cache_is_bounded_and_pruned() -> None:
    clock = Clock()
    tokens = CallTokens("secret", ttl_s=60, clock=clock, max_seen=2)
    first, second, third = (tokens.mint(SID) for _ in range(3))
    tokens.verify(first, SID)
    tokens.verify(second, SID)
    assert _reason(tokens, third) == "replay cache full"
    clock.now += 61  # the seen nonces have expired and are forgotten
    fourth = tokens.mint(SID)
    tokens.verify(fourth, SID)
    assert _reason(tokens, fourth) == "replayed"
    assert _reason(tokens, first) == "expired"


def test_constructor_validation() -> None:
    for kwargs in ({"secret": b""}, {"secret": "s", "ttl_s": 0}, {"secret": "s", "max_seen": 0}):
        with pytest.raises(ValueError):
            CallTokens(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        CallTokens("s").mint("")


def test_token_secret() -> None:
    derived = token_secret("auth-token", None)
    assert derived == token_secret("auth-token", None)
    assert derived != b"auth-token" and b"auth-token" not in derived
    assert len(derived) == 32
    assert token_secret("other-token", None) != derived
    explicit = token_secret("auth-token", "explicit")
    assert explicit == token_secret(None, "explicit") == token_secret("other", "explicit")
    assert explicit != derived
    random_one, random_two = token_secret(None, None), token_secret(None, None)
    assert random_one != random_two and len(random_one) == 32
    assert token_secret("", "") != token_secret("", "")  # empty means unset
    # Replicas sharing the account accept each other's tokens.
    CallTokens(token_secret("auth-token", None)).verify(CallTokens(token_secret("auth-token", None)).mint(SID), SID)


def test_nothing_secret_in_repr_or_errors() -> None:
    tokens = CallTokens("super-secret")
    token = tokens.mint(SID)
    assert "super-secret" not in repr(tokens)
    with pytest.raises(TokenError) as caught:
        tokens.verify(token, "CA-other")
    assert token not in str(caught.value)

"""Who may talk to us: Twilio's request signatures, and single-use call tokens.

- Webhooks (``POST /twiml``) carry ``X-Twilio-Signature``: base64(HMAC-SHA1(auth token, URL + form
  fields sorted by name, each name+value appended)). The WebSocket upgrade is signed the same way over
  the public ``wss://`` URL with no fields. Behind ngrok the app sees ``http://``/``ws://`` and a local
  host, so the signed URL is always rebuilt from PUBLIC_URL, never from the request.
- Call tokens are defence in depth: ``/twiml`` mints one per call and passes it in a ``<Parameter>``;
  the session checks it on the stream's ``start``. They are stateless (HMAC-signed), so any replica
  can verify them.

Nothing here logs the auth token, the token secret or a token: only reasons.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import hmac
import logging
import re
import secrets
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from telephony.twilio.parameters import CONSOLE, TOKEN

log = logging.getLogger(__name__)

PARAMETER_NAME = TOKEN
"""Name of the TwiML ``<Parameter>`` that carries the call token to the media stream."""
CONSOLE_PARAMETER = CONSOLE

_DEFAULT_PORTS = {"https": 443, "wss": 443, "http": 80, "ws": 80}
_WS_SCHEMES = {"https": "wss", "http": "ws", "wss": "wss", "ws": "ws"}


# ----------------------------------------------------------------------------------------- URLs


def public_url_for(public_base: str, path: str, query: str = "") -> str:
    """The URL Twilio signed: ``path`` (and ``query``) under the configured public base.

    The base may end in ``/`` and may carry a path prefix (a reverse proxy mounting us under
    ``/bot``); its own query or fragment, if any, is ignored.
    """
    base = urlsplit(public_base.strip())
    if not base.scheme or not base.netloc:
        raise ValueError("public base must be an absolute URL such as https://abc.ngrok.app")
    full_path = base.path.rstrip("/") + "/" + path.lstrip("/")
    return urlunsplit((base.scheme, base.netloc, full_path, query.lstrip("?"), ""))


def _port_variants(url: str) -> list[str]:
    """``url`` as given, without its port and with the scheme's default port.

    Twilio is not consistent about signing an explicit default port, so both forms are accepted
    (as the SDK's own validator does, but also for ``wss``/``ws``).
    """
    parts = urlsplit(url)
    variants = [url]
    host = parts.hostname
    default = _DEFAULT_PORTS.get(parts.scheme)
    if host is None or default is None or "@" in parts.netloc:
        return variants
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        return variants
    bare = urlunsplit(parts._replace(netloc=host))
    with_port = urlunsplit(parts._replace(netloc=f"{host}:{port or default}"))
    if port in (None, default):
        variants += [v for v in (bare, with_port) if v not in variants]
    return variants


# ----------------------------------------------------------------------------------- signatures


def _pairs(params: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Every (name, value) pair, keeping repeated names (Starlette's FormData included)."""
    multi_items = getattr(params, "multi_items", None)
    if callable(multi_items):
        return [(str(k), str(v)) for k, v in multi_items()]
    if isinstance(params, Mapping):
        return [(str(k), str(v)) for k, v in params.items()]
    return [(str(k), str(v)) for k, v in params]


def _signature(auth_token: str, url: str, pairs: Iterable[tuple[str, str]]) -> bytes:
    data = url + "".join(name + value for name, value in sorted(pairs))
    digest = hmac.new(auth_token.encode("utf-8"), data.encode("utf-8"), hashlib.sha1).digest()
    return base64.b64encode(digest)


def _matches(auth_token: str, urls: Iterable[str], pairs: list[tuple[str, str]], signature: str | None) -> bool:
    if not auth_token or not signature:
        return False
    given = signature.strip().encode("utf-8")
    # Twilio's libraries disagree on a name repeated with the same value (Node keeps both copies,
    # Python keeps one); a forger needs the auth token for either form, so accept both.
    forms = [pairs]
    unique = sorted(set(pairs))
    if len(unique) != len(pairs):
        forms.append(unique)
    ok = False
    for url in urls:
        for form in forms:
            ok |= hmac.compare_digest(_signature(auth_token, url, form), given)
    return ok


def verify_http_signature(
    auth_token: str,
    url: str,
    params: Mapping[str, str] | list[tuple[str, str]],
    signature: str | None,
) -> bool:
    """Check a webhook's ``X-Twilio-Signature`` over ``url`` (from :func:`public_url_for`) and its form.

    A name may repeat: values are sorted and all appended, as Twilio does. Missing signature → False.
    """
    return _matches(auth_token, _port_variants(url), _pairs(params), signature)


def websocket_url(public_base: str, path: str) -> str:
    """The ``wss://`` (or, for an ``http://`` base, ``ws://``) URL Twilio connects to and signs."""
    url = public_url_for(public_base, path)
    scheme, rest = url.split("://", 1)
    return f"{_WS_SCHEMES.get(scheme.lower(), scheme)}://{rest}"


def verify_websocket_signature(auth_token: str, public_base: str, path: str, signature: str | None) -> bool:
    """Check the ``X-Twilio-Signature`` of a media-stream upgrade, before ``accept()``.

    Twilio signs the public ``wss://host/path`` with no parameters; the same URL with its trailing
    ``/`` toggled is accepted too, since the TwiML we (or a user) wrote may differ from the route.
    """
    return verify_websocket_signature_over(auth_token, [websocket_url(public_base, path)], signature)


def verify_websocket_signature_over(auth_token: str, urls: Iterable[str], signature: str | None) -> bool:
    """Like :func:`verify_websocket_signature`, over any of several full ``wss://`` URLs (workers, replicas)."""
    toggled = [url[:-1] if url.endswith("/") else url + "/" for url in urls]
    variants = [variant for candidate in (*urls, *toggled) for variant in _port_variants(candidate)]
    return _matches(auth_token, variants, [], signature)


# -------------------------------------------------------------------------------------- tokens


class TokenError(ValueError):
    """A call token was refused; ``reason`` says why (safe to log: it never contains the token)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_TOKEN_DOMAIN = b"voicebot call token v1"


def token_secret(auth_token: str | None, explicit: str | None) -> bytes:
    """The key call tokens are signed with.

    - ``explicit`` (VOICEBOT_TOKEN_SECRET) when set;
    - else derived from the Twilio auth token (domain-separated HMAC), so every replica on the
      account agrees with no extra setting, and the key is never the auth token itself;
    - else a random per-process key: tokens then verify only in the process that minted them, so
      only a single replica works.
    """
    if explicit:
        return hmac.new(explicit.encode("utf-8"), _TOKEN_DOMAIN + b" explicit", hashlib.sha256).digest()
    if auth_token:
        return hmac.new(auth_token.encode("utf-8"), _TOKEN_DOMAIN, hashlib.sha256).digest()
    log.warning("no TWILIO_AUTH_TOKEN or VOICEBOT_TOKEN_SECRET: call tokens use a random key (single replica only)")
    return secrets.token_bytes(32)


# version (1) | issued at, ms since the epoch (8) | nonce (16) | SHA-256 of the call SID, truncated (16)
_VERSION = 1
_HEADER = struct.Struct(">BQ16s16s")
_MAC_SIZE = 32
_TOKEN_BYTES = _HEADER.size + _MAC_SIZE
_TOKEN_CHARS = (_TOKEN_BYTES * 4 + 2) // 3
_TOKEN_ALPHABET = re.compile(r"[A-Za-z0-9_-]+")
_SKEW_S = 5.0


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _sid_digest(call_sid: str) -> bytes:
    return hashlib.sha256(call_sid.encode("utf-8")).digest()[:16]


class CallTokens:
    """Mint and check short-lived, single-use tokens that bind a media stream to one call.

    A token is ``base64url(version | issued-at | nonce | H(call SID) | HMAC-SHA256(secret, …))``,
    98 characters. ``verify`` refuses a token that is missing, malformed, wrongly signed, for another
    call, older than ``ttl_s``, more than 5 s in the future, or already used.

    Single use is enforced per process only: each keeps the nonces it has accepted until they expire
    (at most ``max_seen``; when full, new tokens are refused with "replay cache full" rather than
    letting memory grow). Across replicas, a replay within the TTL is stopped only by the call-SID
    binding plus Twilio's signature on the WebSocket upgrade (a token is good for one live call);
    that is why the TTL is short.
    """

    def __init__(
        self,
        secret: bytes | str,
        ttl_s: float = 120.0,
        clock: Callable[[], float] = time.time,
        max_seen: int = 100_000,
    ) -> None:
        key = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
        if not key:
            raise ValueError("call token secret must not be empty")
        if ttl_s <= 0:
            raise ValueError("ttl_s must be greater than 0")
        if max_seen < 1:
            raise ValueError("max_seen must be at least 1")
        self._key = key
        self._ttl_s = float(ttl_s)
        self._clock = clock
        self._max_seen = max_seen
        self._seen: set[bytes] = set()
        self._expiries: list[tuple[float, bytes]] = []  # heap: when each seen nonce may be forgotten
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CallTokens(ttl_s={self._ttl_s}, seen={len(self._seen)})"

    @property
    def ttl_s(self) -> float:
        return self._ttl_s

    def mint(self, call_sid: str) -> str:
        """A fresh token for ``call_sid``, to put in the TwiML ``<Parameter>``."""
        if not call_sid:
            raise ValueError("call_sid must not be empty")
        issued_ms = max(0, round(self._clock() * 1000))
        header = _HEADER.pack(_VERSION, issued_ms, secrets.token_bytes(16), _sid_digest(call_sid))
        return _b64(header + self._mac(header))

    def verify(self, token: str | None, call_sid: str) -> None:
        """Accept ``token`` for ``call_sid`` once, or raise :class:`TokenError` with the reason."""
        if not token:
            raise TokenError("missing")
        if len(token) != _TOKEN_CHARS or not _TOKEN_ALPHABET.fullmatch(token):
            raise TokenError("malformed")
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        if len(raw) != _TOKEN_BYTES or _b64(raw) != token:  # one token, one spelling
            raise TokenError("malformed")
        header, mac = raw[: _HEADER.size], raw[_HEADER.size :]
        version, issued_ms, nonce, sid_digest = _HEADER.unpack(header)
        if not hmac.compare_digest(self._mac(header), mac):
            raise TokenError("bad signature")
        if version != _VERSION:
            raise TokenError("malformed")
        if not call_sid or not hmac.compare_digest(_sid_digest(call_sid), sid_digest):
            raise TokenError("wrong call SID")
        issued = issued_ms / 1000
        now = self._clock()
        if issued > now + _SKEW_S:
            raise TokenError("issued in the future")
        if now - issued > self._ttl_s:
            raise TokenError("expired")
        with self._lock:
            self._forget_expired(now)
            if nonce in self._seen:
                raise TokenError("replayed")
            if len(self._seen) >= self._max_seen:
                raise TokenError("replay cache full")
            self._seen.add(nonce)
            heapq.heappush(self._expiries, (issued + self._ttl_s, nonce))

    def _mac(self, header: bytes) -> bytes:
        return hmac.new(self._key, header, hashlib.sha256).digest()

    def _forget_expired(self, now: float) -> None:
        """Drop nonces whose tokens would now be refused as expired anyway."""
        while self._expiries and self._expiries[0][0] < now:
            _, nonce = heapq.heappop(self._expiries)
            self._seen.discard(nonce)


def console_subject(call_sid: str) -> str:
    """What a console call's ``start`` token is bound to (never a Twilio call SID, so never confused with one)."""
    return f"console:{call_sid}"

"""Who may use the call console, and how its browser calls prove they were started by an operator.

- The operator proves themselves with ``VOICEBOT_CONSOLE_TOKEN``: ``Authorization: Bearer <token>``
  (scripts) or HTTP Basic auth with the token as password, any user name (browsers prompt for it).
- Each browser call gets a :class:`ConsoleTicket` from ``POST /console/session``: a call SID, and two
  single-use tokens bound to it (:class:`~telephony.twilio.security.CallTokens`, subject ``console…:<CallSid>``).
  Browsers cannot set headers on a WebSocket, so the first rides in the stream URL's query and lets the
  upgrade skip the Twilio signature check; the second rides in ``start.customParameters``, where the
  session checks it like the call token ``/twiml`` mints. Neither is accepted anywhere Twilio's are.
- The live event feed (Server-Sent Events, which cannot send headers either) takes a key derived from
  the call SID: reusable for the call's life, so the browser may reconnect.

The secret and the tokens are never logged.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from telephony.twilio.security import CONSOLE_PARAMETER, PARAMETER_NAME, CallTokens, TokenError, console_subject

STREAM_TOKEN_QUERY = "console"
"""Query parameter of the stream URL carrying the upgrade token (Twilio drops queries; browsers keep them)."""
CALL_QUERY = "call"
TICKET_TTL_S = 60.0
"""Seconds between ``POST /console/session`` and the stream's ``start``: the page connects at once."""
_DOMAIN = b"voicebot console v1"


@dataclass(frozen=True)
class ConsoleTicket:
    """Everything the page needs to place one call."""

    call_sid: str
    stream_sid: str
    stream_token: str
    start_token: str
    events_key: str

    def parameters(self, from_number: str = "console", to_number: str = "voicebot") -> dict[str, str]:
        """``start.customParameters`` for the page to send (the call token and the console marker)."""
        return {"From": from_number, "To": to_number, CONSOLE_PARAMETER: "1", PARAMETER_NAME: self.start_token}


class ConsoleAccess:
    """Checks the operator's secret and mints and checks the tokens of console calls."""

    def __init__(self, secret: str, ttl_s: float = TICKET_TTL_S) -> None:
        if not secret:
            raise ValueError("the console secret must not be empty")
        self._secret = secret.encode("utf-8")
        key = hmac.new(self._secret, _DOMAIN, hashlib.sha256).digest()
        self.tokens = CallTokens(key, ttl_s)
        """Verifies the ``start`` token; the session is given it as its console token checker."""
        self._upgrades = CallTokens(hmac.new(key, b"upgrade", hashlib.sha256).digest(), ttl_s)
        self._events_key = hmac.new(key, b"events", hashlib.sha256).digest()

    def __repr__(self) -> str:
        return "ConsoleAccess(<secret hidden>)"

    # --- the operator -----------------------------------------------------------------------------

    def authorised(self, authorization: str | None) -> bool:
        """True when the ``Authorization`` header carries the console secret (Bearer, or Basic password)."""
        if not authorization:
            return False
        scheme, _, value = authorization.strip().partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer":
            return hmac.compare_digest(value.encode("utf-8"), self._secret)
        if scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                return False
            _, _, password = decoded.partition(b":")
            return hmac.compare_digest(password, self._secret)
        return False

    # --- one browser call -------------------------------------------------------------------------

    def issue(self) -> ConsoleTicket:
        """A fresh call SID (Twilio-shaped, so logs and recordings treat it like any call) and its tokens."""
        call_sid = "CA" + secrets.token_hex(16)
        return ConsoleTicket(
            call_sid=call_sid,
            stream_sid="MZ" + secrets.token_hex(16),
            stream_token=self._upgrades.mint(call_sid),
            start_token=self.tokens.mint(console_subject(call_sid)),
            events_key=self.events_key(call_sid),
        )

    def admits_stream(self, query: Mapping[str, str]) -> str | None:
        """Check (and use up) the upgrade token of a console stream; returns why not, or None if admitted."""
        try:
            self._upgrades.verify(query.get(STREAM_TOKEN_QUERY), query.get(CALL_QUERY, ""))
        except TokenError as error:
            return error.reason
        return None

    def events_key(self, call_sid: str) -> str:
        digest = hmac.new(self._events_key, call_sid.encode("utf-8"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

    def events_allowed(self, call_sid: str, key: str | None) -> bool:
        return bool(key) and hmac.compare_digest(self.events_key(call_sid).encode(), (key or "").encode())

"""OpenAI Realtime failures: which ``error`` events end a session, and what an operator should do about them.

strands only logs the service's ``error`` events, so a session the service has given up on (a refused key, a
model the key cannot use, a rate limit that drops the answer) would leave the caller in silence until the
bridge's agent-silence limit. The adapter raises :class:`OpenAIRealtimeError` for those instead, with the
operator's next step as a PEP 678 note, so the caller hears the apology at once and the log says why.
``session_expired`` is the connection limit: it becomes strands' ``ConnectionTimeoutError``, which restarts
the connection and replays the conversation.

How the service reports each (as the local server reproduces it): a bad key is refused at the WebSocket
handshake with HTTP 401 and an ``invalid_api_key`` body (websockets raises ``InvalidStatus``); a model the key
cannot use is an ``error`` event ``model_not_found`` right after connecting; a rate limit an ``error`` event
``rate_limit_exceeded`` when a response is asked for.
"""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass
from typing import Any

__all__ = ["FATAL_CODES", "OpenAIRealtimeError", "RealtimeTarget", "add_operator_hint", "operator_hint"]

HINT_PREFIX = "what to do: "
FATAL_CODES = frozenset({"invalid_api_key", "model_not_found", "rate_limit_exceeded", "insufficient_quota"})
"""``error`` codes after which the session cannot answer the caller."""
SESSION_EXPIRED = "session_expired"


class OpenAIRealtimeError(RuntimeError):
    """The service sent an ``error`` event that ends the session; ``code`` is its ``error.code``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code


@dataclass(frozen=True)
class RealtimeTarget:
    """What the failing model was trying to reach (for the sentence)."""

    model_id: str
    endpoint: str


def error_code(error: BaseException) -> str | None:
    """The service's error code: from an ``error`` event, or from the body of a refused handshake."""
    if isinstance(error, OpenAIRealtimeError):
        return error.code
    response = getattr(error, "response", None)
    body = getattr(response, "body", None)
    if not body:
        return None
    try:
        payload: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    code = payload.get("error", {}).get("code") if isinstance(payload, dict) else None
    return code if isinstance(code, str) else None


def operator_hint(error: BaseException, target: RealtimeTarget) -> str | None:
    """The operator's next step for ``error``, or None when it says nothing about configuration."""
    code = error_code(error)
    status = getattr(getattr(error, "response", None), "status_code", None)
    if code == "invalid_api_key" or status == 401:
        return "OpenAI rejected the API key: check OPENAI_API_KEY (and OPENAI_ORGANIZATION / OPENAI_PROJECT if set)."
    if code == "model_not_found" or status == 404:
        return f"OpenAI does not offer {target.model_id} to this key: check VOICEBOT_MODEL_ID and the key's project."
    if code in ("rate_limit_exceeded", "insufficient_quota") or status == 429:
        return (
            f"OpenAI is limiting this key ({code or 'HTTP 429'}): lower the concurrent calls (VOICEBOT_MAX_CALLS), "
            "or raise the organization's limits or credit."
        )
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"the certificate of {target.endpoint} is not trusted: set SSL_CERT_FILE to a PEM of its CA."
    if isinstance(error, OSError):
        return f"cannot reach OpenAI Realtime at {target.endpoint}: check OPENAI_BASE_URL and the network."
    return None


def add_operator_hint(error: BaseException, target: RealtimeTarget) -> None:
    """Attach the hint to ``error`` as a note, once."""
    hint = operator_hint(error, target)
    if hint is not None and not any(note.startswith(HINT_PREFIX) for note in getattr(error, "__notes__", ())):
        error.add_note(HINT_PREFIX + hint)

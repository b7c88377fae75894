"""What an operator should do about a Gemini Live failure, in one sentence.

The bridge logs a failed agent's error with its PEP 678 notes; the adapter (:mod:`agent.gemini.model`) adds the
sentence from :func:`operator_hint` to the exception google-genai raised, leaving its type and message alone.

How the Live API refuses, as google-genai reports it: the WebSocket is accepted, the ``setup`` read, then closed
with a code and a reason, which the SDK raises as ``google.genai.errors.APIError`` (``code`` = the close code):

- a bad key: 1007 "API key not valid. Please pass a valid API key.";
- a model that does not exist or does not do the Live API: 1008 "models/... is not found for API version ...";
- quota or rate exceeded: 1011 "You exceeded your current quota ..." (also 429 from HTTP front ends);
- no key at all: ``genai.Client()`` raises ``ValueError("No API key was provided ...")``;
- the endpoint unreachable: ``ConnectionRefusedError`` / ``OSError``; its certificate untrusted: ``ssl.SSLError``.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

__all__ = ["GeminiTarget", "add_operator_hint", "operator_hint"]

HINT_PREFIX = "what to do: "


@dataclass(frozen=True)
class GeminiTarget:
    """What the failing model was trying to reach (for the sentence)."""

    model_id: str
    endpoint: str


def operator_hint(error: BaseException, target: GeminiTarget) -> str | None:
    """The operator's next step for ``error``, or None when it says nothing about configuration."""
    text = str(error)
    code = getattr(error, "code", None)
    if isinstance(error, ValueError) and "No API key" in text:
        return "Gemini found no API key: set GOOGLE_API_KEY (or GEMINI_API_KEY) in the server's environment or .env."
    if code == 1007 and "API key" in text:
        return "the Gemini API rejected the API key: check GOOGLE_API_KEY (or GEMINI_API_KEY)."
    if code == 1008 and "not found" in text:
        return (
            f"the Gemini API does not offer {target.model_id} for the Live API: check VOICEBOT_MODEL_ID "
            "(a Live model, such as gemini-live-2.5-flash-preview)."
        )
    if code in (1011, 429) and ("quota" in text.lower() or "rate" in text.lower() or code == 429):
        return (
            f"the Gemini API is limiting {target.model_id} for this key (quota or rate): lower concurrent calls "
            "or raise the project's quota."
        )
    if isinstance(error, ssl.SSLError):
        return (
            f"the TLS certificate of {target.endpoint} is not trusted: set SSL_CERT_FILE to a CA bundle that signs it."
        )
    if isinstance(error, OSError) and not isinstance(error, ssl.SSLError):
        return f"cannot reach the Gemini Live API at {target.endpoint}: check GOOGLE_GEMINI_BASE_URL and the network."
    return None


def add_operator_hint(error: BaseException, target: GeminiTarget) -> None:
    """Attach the operator's next step to ``error`` as a note, once."""
    hint = operator_hint(error, target)
    if hint is None:
        return
    note = HINT_PREFIX + hint
    if note not in getattr(error, "__notes__", ()):
        error.add_note(note)

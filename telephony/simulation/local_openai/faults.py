"""OpenAI Realtime's limits and failures, reproducible in seconds.

The session limit is the service's (60 minutes; strands counts 3000 s and restarts at 2700 s) in seconds the
test chooses: at the limit the server sends ``error`` ``session_expired`` and closes, as the service does.
Faults are queued on the server and taken by new sessions in order: ``error`` events at connect
(``model_not_found``) or when a response is asked for (``rate_limit_exceeded``), or a session that expires sooner
than its limit (``session_expired`` at a chosen moment: where a long call meets the limit is anyone's guess). A key
the server does not know is refused at the handshake with HTTP 401 and an ``invalid_api_key`` body, like the service;
a queued ``throttled_open`` refuses the next handshake with HTTP 429. A session can also go quiet: never answer at
all, or stop (or close with 1011) part-way through an answer's audio (local Nova's ``MidAnswer``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

from telephony.simulation.local_nova.faults import MidAnswer

__all__ = ["ERROR_MESSAGES", "Fault", "FaultQueue", "SessionLimits", "error_event"]

ERROR_MESSAGES = {
    "invalid_api_key": "Incorrect API key provided. You can find your API key at your account's API keys page.",
    "model_not_found": "The model does not exist or you do not have access to it.",
    "rate_limit_exceeded": "Rate limit reached for requests. Please try again later.",
    "session_expired": "Your session hit the maximum duration of 60 minutes.",
}
ERROR_TYPES = {"rate_limit_exceeded": "rate_limit_error"}
HANDSHAKE_ERROR_TYPES = {"rate_limit_exceeded": "requests"}
"""``error.type`` in the body of a refused handshake, as the REST API's (``requests``: a request-rate limit)."""


@dataclass(frozen=True)
class SessionLimits:
    """How long a session lasts before the server expires it (the service: 3600 s; strands restarts first)."""

    session_limit_s: float = 3600.0


@dataclass(frozen=True)
class Fault:
    """An ``error`` event with ``code``, sent at connect (then the socket closes), at the next response, or
    ``after_s`` into the session (``expires``: the session limit, sooner). ``at="handshake"``: the handshake is
    refused with HTTP 429 and ``code``. Code ``stall`` or ``close`` is silence (or a 1011 close, no ``error``)
    once the session is set up (``at="set_up"``) or mid-answer (``at="answer"``: ``answer`` and ``audio_s``)."""

    code: str
    at: Literal["handshake", "connect", "set_up", "response", "answer", "time"] = "response"
    message: str = ""
    after_s: float = 0.0
    answer: int = 0
    audio_s: float = 0.0

    @classmethod
    def model_not_found(cls) -> Fault:
        return cls("model_not_found", at="connect")

    @classmethod
    def rate_limited(cls) -> Fault:
        return cls("rate_limit_exceeded", at="response")

    @classmethod
    def expires(cls, after_s: float) -> Fault:
        """The session expires ``after_s`` after it opens (if its limit does not come first), as at its limit."""
        return cls("session_expired", at="time", after_s=after_s)

    @classmethod
    def throttled_open(cls) -> Fault:
        """The handshake is refused with HTTP 429 and a ``rate_limit_exceeded`` body, as the service refuses a key
        over its request rate."""
        return cls("rate_limit_exceeded", at="handshake")

    @classmethod
    def never_answers(cls) -> Fault:
        """The session is set up as usual (``session.created``, ``session.updated``) and then never sends another
        event: no response to text or audio, no VAD events (input is still read), as a session whose model hangs."""
        return cls("stall", at="set_up")

    @classmethod
    def stall_mid_answer(cls, answer: int = 1, audio_s: float = 0.5) -> Fault:
        """The ``answer``-th spoken answer of the session (1-based) sends its first ``audio_s`` seconds of audio,
        then no server event ever again (no ``response.done``; input still read, the socket stays open), as a
        session whose model hangs mid-answer."""
        return cls("stall", at="answer", answer=MidAnswer.counted(answer), audio_s=audio_s)

    @classmethod
    def close_mid_answer(cls, answer: int = 1, audio_s: float = 0.5) -> Fault:
        """Like :meth:`stall_mid_answer`, then the WebSocket is closed with 1011 and no ``error`` event, as the
        service drops a session on an internal error."""
        return cls("close", at="answer", answer=MidAnswer.counted(answer), audio_s=audio_s)

    def event(self, event_id: str) -> dict[str, object]:
        return error_event(event_id, self.code, self.message or ERROR_MESSAGES.get(self.code, self.code))


def error_event(
    event_id: str, code: str, message: str, param: str | None = None, client_event_id: str | None = None
) -> dict[str, object]:
    """The service's ``error`` event."""
    return {
        "type": "error",
        "event_id": event_id,
        "error": {
            "type": ERROR_TYPES.get(code, "invalid_request_error"),
            "code": code,
            "message": message,
            "param": param,
            "event_id": client_event_id,
        },
    }


class FaultQueue:
    """Faults waiting for the next sessions, first in first out."""

    def __init__(self) -> None:
        self._faults: deque[Fault] = deque()

    def push(self, *faults: Fault) -> None:
        self._faults.extend(faults)

    def take(self, handshake: bool = False) -> Fault | None:
        """The next fault if it strikes here: a handshake refusal waits for a handshake, others for a session."""
        if self._faults and (self._faults[0].at == "handshake") == handshake:
            return self._faults.popleft()
        return None

    def __len__(self) -> int:
        return len(self._faults)

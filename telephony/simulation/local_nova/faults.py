"""Nova's limits and failures, reproducible in seconds.

Limits are Nova's (an ~8-minute connection cap, a ~175 s silence timeout) multiplied by
``time_scale``, so a test can live through both in a second or two. Faults are queued on the
server and taken by new streams in order: an HTTP error before the stream starts (how Bedrock
answers access denied, throttling and validation at request time), a modelled exception mid-stream,
an HTTP/2 ``RST_STREAM``, or a stream that simply stops answering. A ``stall`` or ``reset`` can also strike in
the middle of an answer (:class:`MidAnswer`), where a model that goes quiet hurts a call most.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Fault", "FaultQueue", "MidAnswer", "SetupDelay", "TimeLimits"]

ERROR_TYPE_SUFFIX = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
"""Bedrock appends this to ``x-amzn-errortype``; the SDK keeps only the part before the colon."""

HTTP_STATUS = {
    "AccessDeniedException": 403,
    "ValidationException": 400,
    "ThrottlingException": 429,
    "ServiceUnavailableException": 503,
    "InternalServerException": 500,
    "ResourceNotFoundException": 404,
}


@dataclass(frozen=True)
class TimeLimits:
    """Nova's stream limits in Nova seconds; real seconds are these times ``time_scale``."""

    connection_limit_s: float = 480.0
    silence_timeout_s: float = 175.0
    time_scale: float = 1.0
    silence_exception: Literal["modelTimeoutException", "validationException"] = "validationException"
    """strands (bedrock.py) expects silence as a validationException with ``InternalErrorCode=531``."""

    @property
    def connection_limit(self) -> float:
        return self.connection_limit_s * self.time_scale

    @property
    def silence_timeout(self) -> float:
        return self.silence_timeout_s * self.time_scale


@dataclass(frozen=True)
class Fault:
    """What goes wrong with one stream. ``after_s`` is real seconds after the stream opens; with ``answer`` (1 or
    more) a ``stall`` or ``reset`` strikes instead once that spoken answer has sent ``audio_s`` of its audio."""

    kind: Literal["reject", "exception", "reset", "stall"]
    after_s: float = 0.0
    error_type: str = ""
    message: str = ""
    answer: int = 0
    audio_s: float = 0.0

    @classmethod
    def reject(cls, error_type: str = "AccessDeniedException", message: str = "") -> Fault:
        """An HTTP error status instead of the stream (``x-amzn-errortype`` + JSON body), as Bedrock does."""
        if error_type not in HTTP_STATUS:
            raise ValueError(f"no HTTP status known for {error_type!r}")
        return cls("reject", 0.0, error_type, message or f"local nova: {error_type}")

    @classmethod
    def exception(cls, exception_type: str, after_s: float = 0.0, message: str = "") -> Fault:
        """A modelled stream exception such as ``throttlingException``, then the stream ends."""
        return cls("exception", after_s, exception_type, message or f"local nova: {exception_type}")

    @classmethod
    def reset(cls, after_s: float = 0.0) -> Fault:
        """``RST_STREAM`` (INTERNAL_ERROR) on the stream."""
        return cls("reset", after_s)

    @classmethod
    def stall(cls, after_s: float = 0.0) -> Fault:
        """Stop sending anything (input is still read and acknowledged), and never end the stream."""
        return cls("stall", after_s)

    @classmethod
    def never_answers(cls) -> Fault:
        """The stream opens (``200``) and its input is read, but Nova never sends a single event, as a model stream
        that hangs from the start does: ``stall(after_s=0)``."""
        return cls.stall(after_s=0.0)

    @classmethod
    def stall_mid_answer(cls, answer: int = 1, audio_s: float = 0.5) -> Fault:
        """The ``answer``-th spoken answer of the stream (1-based) sends its first ``audio_s`` seconds of audio, then
        nothing more ever (no ``contentEnd``, no ``completionEnd``; input still read, the stream never ends), as a
        model stream that hangs mid-reply does."""
        return cls("stall", answer=MidAnswer.counted(answer), audio_s=audio_s)

    @classmethod
    def close_mid_answer(cls, answer: int = 1, audio_s: float = 0.5) -> Fault:
        """Like :meth:`stall_mid_answer`, then ``RST_STREAM`` (INTERNAL_ERROR): a stream Bedrock drops mid-reply."""
        return cls("reset", answer=MidAnswer.counted(answer), audio_s=audio_s)

    @classmethod
    def throttled_open(cls) -> Fault:
        """HTTP 429 ``ThrottlingException`` instead of the stream: Bedrock's answer to too many requests."""
        return cls.reject("ThrottlingException", "Too many requests, please wait before trying again.")

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.error_type]


@dataclass
class MidAnswer:
    """Where a mid-answer fault strikes on one connection: once its ``answer``-th spoken answer (1-based) has sent
    ``audio_s`` seconds of audio, or where that answer's audio ends if it is shorter. Every local server feeds it
    the audio it sends and the ends of answers, so a fault strikes at the same point whichever wire it speaks."""

    answer: int
    audio_s: float
    answers: int = 0
    sent_s: float = 0.0
    speaking: bool = False

    @staticmethod
    def counted(answer: int) -> int:
        """``answer`` if it can name an answer (they are counted from 1)."""
        if answer < 1:
            raise ValueError(f"answers are counted from 1, not {answer}")
        return answer

    def audio(self, seconds: float) -> bool:
        """Audio of an answer was sent (the first of an answer starts it): True when the fault strikes now."""
        if not self.speaking:
            self.speaking, self.answers, self.sent_s = True, self.answers + 1, 0.0
        if self.answers != self.answer:
            return False
        self.sent_s += seconds
        return self.sent_s >= self.audio_s

    def ends(self) -> bool:
        """An answer's audio is about to end (done or interrupted): True when the fault strikes instead."""
        speaking, self.speaking = self.speaking, False
        return speaking and self.answers == self.answer


class FaultQueue:
    """Faults waiting for the next streams, first come first served."""

    def __init__(self) -> None:
        self._faults: deque[Fault] = deque()

    def push(self, *faults: Fault) -> None:
        self._faults.extend(faults)

    def take(self) -> Fault | None:
        return self._faults.popleft() if self._faults else None

    def __len__(self) -> int:
        return len(self._faults)


@dataclass
class SetupDelay:
    """How long the service takes to set up each new connection before it answers (real seconds, drawn per
    connection). Every local server takes one: local OpenAI holds the WebSocket handshake this long, local Gemini
    its ``setupComplete``, local Nova as follows.

    The HTTP/2 stream is accepted at once and what the client sends is read (and its flow-control
    window kept open), but the ``200`` and the session come only after the delay, which then sees
    everything in order: that is how a slow set-up looks from the client. ``BedrockNovaSonicModel.start()``
    returns at once (the CRT client opens the stream in the background), so the caller's audio is not
    held by the bridge but heard late by Nova. ``between`` draws uniformly, seeded, so runs repeat.

    (Holding the bytes back in the transport instead stalls the CRT client for good once it has used
    the default 64 KiB window before the server's SETTINGS arrive, so the delay is applied here.)
    """

    fixed_s: float = 0.0
    between: tuple[float, float] | None = None
    seed: int = 0
    drawn: list[float] = field(default_factory=list)
    _random: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def next(self) -> float:
        delay = self._random.uniform(*self.between) if self.between is not None else self.fixed_s
        self.drawn.append(delay)
        return delay

"""When the caller spoke, as the bridge hears it: spans of caller speech, and how fast the bot answered.

A model reports the caller's words only once it has recognised them, often a second or more after they
were said, and without saying when they began. The bridge hears the audio itself, frame by frame, so it
times the caller's turns here: a 20 ms frame above ``SPEECH_LEVEL_DBFS`` is speech, and speech with gaps
shorter than ``TURN_GAP_S`` is one span (the same rule the replay report and the demo use).

Spans are timed on the stream's own clock (Twilio's media ``timestamp``, immune to network jitter), so
a recording puts them exactly where the words are in ``caller.wav``; the arrival time of the last voiced
frame is kept too, for the response latency (end of the caller's speech to the bot's first audio).
"""

from __future__ import annotations

from dataclasses import dataclass

from telephony.codec import FRAME_SECONDS as FRAME_S
from telephony.codec import SPEECH_LEVEL_DBFS, ulaw_level_dbfs

TURN_GAP_S = 0.5
"""Quiet shorter than this is a pause inside a turn, not its end."""
TALKING_OVER_S = 0.1
"""A bot answer that starts while the caller's last voiced frame is this recent talks over them: no latency."""


@dataclass(frozen=True, slots=True)
class SpeechSpan:
    """One stretch of caller speech."""

    start_s: float
    """Stream time of its first voiced frame (seconds of Twilio's media ``timestamp``)."""
    end_s: float
    """Stream time at which its last voiced frame ends."""
    ended_at: float
    """Monotonic time the last voiced frame arrived."""


class CallerSpeech:
    """Finds caller speech in a call's inbound frames. Feed every frame in order; cheap (one level per frame)."""

    def __init__(self, threshold_dbfs: float = SPEECH_LEVEL_DBFS, gap_s: float = TURN_GAP_S) -> None:
        self._threshold = threshold_dbfs
        self._gap_s = gap_s
        self._start_s: float | None = None
        self._end_s = 0.0
        self._last_voiced_at: float | None = None
        self._spoke_since_answer = False
        self._frames = 0
        self.level_dbfs = float("-inf")
        """The latest frame's level (dBFS): computed once here, read by whoever else needs it (the watchdog)."""
        self.onset_at: float | None = None
        """Monotonic arrival of the first voiced frame of the caller's latest span (None before any speech):
        when the caller began talking, which a model's own speech signals come too late to say."""

    def frame(self, ulaw: bytes, timestamp_ms: int | None, now: float) -> SpeechSpan | None:
        """Take one caller frame; returns the span that ended, once the caller has been quiet ``gap_s``."""
        stream_s = timestamp_ms / 1000 if timestamp_ms is not None and timestamp_ms >= 0 else self._frames * FRAME_S
        self._frames += 1
        self.level_dbfs = ulaw_level_dbfs(ulaw)
        if self.level_dbfs > self._threshold:
            if self._start_s is None:
                self._start_s = stream_s
                self.onset_at = now
            self._end_s = stream_s + FRAME_S
            self._last_voiced_at = now
            self._spoke_since_answer = True
            return None
        if self._start_s is not None and stream_s - self._end_s >= self._gap_s:
            return self._close()
        return None

    @property
    def last_voiced_at(self) -> float | None:
        """Monotonic arrival of the latest voiced frame (None before any speech)."""
        return self._last_voiced_at

    def answered(self, now: float) -> float | None:
        """The bot starts an answer now: when the caller's speech it answers ended (monotonic), if any.

        None when the caller has not spoken since the bot's last answer (a greeting, a second utterance)
        or is still speaking (the bot talks over them: that is no response time).
        """
        if not self._spoke_since_answer or self._last_voiced_at is None:
            return None
        self._spoke_since_answer = False
        if now - self._last_voiced_at < TALKING_OVER_S:
            return None
        return self._last_voiced_at

    def finish(self) -> SpeechSpan | None:
        """The call is over: the span still open, if the caller was speaking."""
        return self._close() if self._start_s is not None else None

    def _close(self) -> SpeechSpan:
        assert self._start_s is not None and self._last_voiced_at is not None
        span = SpeechSpan(round(self._start_s, 3), round(self._end_s, 3), self._last_voiced_at)
        self._start_s = None
        return span

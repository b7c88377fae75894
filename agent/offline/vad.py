"""Voice activity: when the caller starts talking (for barge-in) and each whole utterance (for recognition).

pocketsphinx's WebRTC-style VAD classifies 30 ms frames, but on its own it calls any steady noise above
about -45 dBFS speech. So a frame counts as voiced only if the VAD says so *and* it is clearly louder than
the line's noise floor (the quietest frame of the last few seconds). Speech starts after 4 voiced frames
out of 5 (120-150 ms: quick enough for barge-in, slow enough to ignore clicks) and ends after half a
second with at most one voiced frame.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import pocketsphinx

__all__ = ["SpeechDetector", "SpeechStarted", "Utterance"]

FRAME_S = 0.03
ONSET_WINDOW, ONSET_VOICED = 5, 4
END_WINDOW, END_MAX_VOICED = 17, 1  # ~0.5 s
PRE_ROLL_FRAMES = 10  # 0.3 s kept before the onset, so the first consonant is not cut
MAX_UTTERANCE_S = 10.0
FLOOR_WINDOW_FRAMES = 100  # the noise floor is the quietest frame of the last 3 s
ABOVE_FLOOR_DB = 10.0
MIN_SPEECH_DBFS = -50.0


@dataclass(frozen=True)
class SpeechStarted:
    """Speech began ``at_s`` seconds into the stream (the first frame of the onset window)."""

    at_s: float


@dataclass(frozen=True)
class Utterance:
    """One end-pointed stretch of speech, with a little of the silence around it."""

    pcm16: bytes
    start_s: float
    end_s: float


class SpeechDetector:
    """Feed caller audio (PCM16 mono at ``sample_rate``) in pieces of any size; get events back.

    Cheap enough for the event loop: a few microseconds of C and numpy per 30 ms frame.
    """

    def __init__(self, sample_rate: int = 16000) -> None:
        self._vad = pocketsphinx.Vad(pocketsphinx.Vad.STRICT, sample_rate, FRAME_S)
        self._frame_bytes = self._vad.frame_bytes
        self._frame_s = self._vad.frame_length
        self._pending = b""
        self._frames_seen = 0
        self._recent: deque[tuple[bytes, bool]] = deque(maxlen=PRE_ROLL_FRAMES + ONSET_WINDOW)
        self._levels: deque[float] = deque(maxlen=FLOOR_WINDOW_FRAMES)
        self._speech: list[bytes] | None = None
        self._tail: deque[bool] = deque(maxlen=END_WINDOW)
        self._start_s = 0.0

    @property
    def in_speech(self) -> bool:
        return self._speech is not None

    def feed(self, pcm16: bytes) -> list[SpeechStarted | Utterance]:
        """Process whole frames of ``pcm16`` (the remainder waits for the next call)."""
        data = self._pending + pcm16
        whole = len(data) - len(data) % self._frame_bytes
        self._pending = data[whole:]
        events: list[SpeechStarted | Utterance] = []
        for offset in range(0, whole, self._frame_bytes):
            event = self._frame(data[offset : offset + self._frame_bytes])
            if event is not None:
                events.append(event)
        return events

    def _frame(self, frame: bytes) -> SpeechStarted | Utterance | None:
        voiced = self._is_voiced(frame)
        self._frames_seen += 1
        if self._speech is None:
            self._recent.append((frame, voiced))
            onset = list(self._recent)[-ONSET_WINDOW:]
            if sum(flag for _, flag in onset) < ONSET_VOICED:
                return None
            self._speech = [audio for audio, _ in self._recent]
            self._recent.clear()
            self._tail.clear()
            self._start_s = (self._frames_seen - ONSET_WINDOW) * self._frame_s
            return SpeechStarted(self._start_s)
        self._speech.append(frame)
        self._tail.append(voiced)
        ended = len(self._tail) == END_WINDOW and sum(self._tail) <= END_MAX_VOICED
        if ended or len(self._speech) * self._frame_s >= MAX_UTTERANCE_S:
            utterance = Utterance(b"".join(self._speech), self._start_s, self._frames_seen * self._frame_s)
            self._speech = None
            return utterance
        return None

    def _is_voiced(self, frame: bytes) -> bool:
        samples = np.frombuffer(frame, dtype="<i2").astype(np.float32)
        level = 10 * np.log10(float(np.mean(samples * samples)) / 32768.0**2 + 1e-12)
        self._levels.append(level)
        loud_enough = level >= max(MIN_SPEECH_DBFS, min(self._levels) + ABOVE_FLOOR_DB)
        return loud_enough and bool(self._vad.is_speech(frame))

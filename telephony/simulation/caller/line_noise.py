"""Background noise for a simulated phone line: white hiss, mains hum, or the babble of a room of talkers.

Each kind is made once per call as a few seconds of 8 kHz samples from a seed, then read round and round, so a
line's noise is the same on every run with the same seed and costs nothing per frame but an addition. Levels
are RMS dBFS, as :func:`telephony.codec.ulaw_level_dbfs` measures them (the bridge calls a frame above
-45 dBFS speech), so ``-50`` sits under that line and ``-30`` well over it.
"""

from __future__ import annotations

import numpy as np

from telephony.codec import TWILIO_RATE

__all__ = ["NOISE_KINDS", "NoiseLoop"]

NOISE_KINDS = ("white", "babble", "hum")
LOOP_S = 8.0
"""Seconds of noise made per call and repeated: long enough that no model hears the loop as a pattern."""
HUM_HZ = 60.0
"""Mains hum (North America); its harmonics up to 540 Hz carry most of what passes a phone line."""
BABBLE_TALKERS = 5
"""Talkers in the babble: few enough that their syllables still come and go, as in a waiting room."""
ROOM_ECHO = 0.1
"""A talker's level between syllables, relative to a syllable's peak."""
_FULL_SCALE = 32768.0


class NoiseLoop:
    """``kind`` noise at ``level_dbfs``, handed out a frame at a time (int16 samples, 8 kHz)."""

    def __init__(self, kind: str, level_dbfs: float, seed: int) -> None:
        if kind not in NOISE_KINDS:
            raise ValueError(f"noise kind is one of {', '.join(NOISE_KINDS)}, not {kind!r}")
        rng = np.random.default_rng([seed, NOISE_KINDS.index(kind)])
        samples = int(LOOP_S * TWILIO_RATE)
        shape = {"white": _white, "babble": _babble, "hum": _hum}[kind](samples, rng)
        rms = float(np.sqrt(np.mean(shape**2)))
        self._samples = shape * (_FULL_SCALE * 10 ** (level_dbfs / 20) / rms)
        self._at = 0

    def next(self, count: int) -> np.ndarray:
        """The next ``count`` samples (float, to be added before rounding), wrapping round the loop."""
        indices = (self._at + np.arange(count)) % len(self._samples)
        self._at = (self._at + count) % len(self._samples)
        return self._samples[indices]


def _white(samples: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(samples)


def _hum(samples: int, rng: np.random.Generator) -> np.ndarray:
    """60 Hz and its odd harmonics falling off (a transformer's buzz), a random phase each."""
    t = np.arange(samples) / TWILIO_RATE
    wave = np.zeros(samples)
    for harmonic in range(1, 10, 2):
        wave += np.sin(2 * np.pi * HUM_HZ * harmonic * t + rng.uniform(0, 2 * np.pi)) / harmonic
    return wave


def _babble(samples: int, rng: np.random.Generator) -> np.ndarray:
    """Several talkers in the distance: speech-shaped noise, each talker gated by syllables and pauses.

    Not words (no recogniser should transcribe it), but what a voice detector meets in a busy room: energy in
    the speech band that rises and falls at the syllable rate.
    """
    room = np.zeros(samples)
    for _ in range(BABBLE_TALKERS):
        room += _speech_shaped(samples, rng) * _syllables(samples, rng)
    return room


def _speech_shaped(samples: int, rng: np.random.Generator) -> np.ndarray:
    """White noise through the long-term spectrum of speech: a broad peak near 500 Hz, -6 dB an octave above."""
    spectrum = np.fft.rfft(rng.standard_normal(samples))
    hz = np.fft.rfftfreq(samples, 1 / TWILIO_RATE)
    gain = (hz / 500.0) / (1 + (hz / 500.0) ** 2)
    return np.fft.irfft(spectrum * gain, samples)


def _syllables(samples: int, rng: np.random.Generator) -> np.ndarray:
    """A 0..1 envelope: syllables of 100-300 ms with short gaps, and now and then a pause for breath; never quite
    0, as a room's echo carries a talker over their gaps."""
    envelope = np.full(samples, ROOM_ECHO)
    at = int(rng.uniform(0, 0.5) * TWILIO_RATE)
    while at < samples:
        length = int(rng.uniform(0.1, 0.3) * TWILIO_RATE)
        syllable = ROOM_ECHO + (1 - ROOM_ECHO) * np.hanning(length)[: samples - at]
        envelope[at : at + length] = syllable
        gap = rng.uniform(0.6, 1.2) if rng.random() < 0.15 else rng.uniform(0.03, 0.12)
        at += length + int(gap * TWILIO_RATE)
    return envelope

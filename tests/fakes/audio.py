"""Small signal measurements for assertions on what the caller heard or the model received."""

from __future__ import annotations

import numpy as np

from telephony.codec import ulaw_to_pcm16


def pcm(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<i2").astype(np.float64)


def dominant_hz(samples: np.ndarray, rate: int) -> float:
    """Frequency of the strongest spectral peak (Hann-windowed)."""
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    spectrum[0] = 0
    return float(np.argmax(spectrum) * rate / len(samples))


def rms_dbfs(samples: np.ndarray) -> float:
    rms = float(np.sqrt(np.mean(samples**2))) if len(samples) else 0.0
    return 20 * np.log10(max(rms, 1e-9) / 32768)


def frame_hz(ulaw_frame: bytes) -> float:
    """Dominant frequency of one 20 ms μ-law frame (50 Hz resolution; enough to tell tones apart)."""
    samples = pcm(ulaw_to_pcm16(ulaw_frame))
    if rms_dbfs(samples) < -50:
        return 0.0
    return dominant_hz(samples, 8000)

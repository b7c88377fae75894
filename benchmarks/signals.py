"""Deterministic test signals and measurements shared by tests/test_codec.py and benchmarks/codec.py.

There is no speech corpus offline, so `speech_like` synthesises something with the properties that matter
for a telephone codec: a pitch-varying harmonic source (90-250 Hz) shaped by moving formants, a syllabic
envelope with pauses, and fricative noise bursts reaching up to the model's Nyquist frequency (which the
down-sampler must remove). Every measurement is a plain signal computation, never a timing.
"""

from __future__ import annotations

import math

import numpy as np

FULL_SCALE = 32767.0

# (F1, F2, F3) in Hz for a few vowels (Peterson & Barney averages, rounded).
_VOWELS = np.array([[730, 1090, 2440], [270, 2290, 3010], [300, 870, 2240], [530, 1840, 2480], [570, 840, 2410]])
_FORMANT_BANDWIDTHS = np.array([80.0, 100.0, 140.0])


def _syllables(rng: np.random.Generator, seconds: float) -> list[tuple[float, float, str]]:
    """(start, length, kind) segments: mostly vowels, some fricatives and pauses."""
    segments, start = [], 0.0
    while start < seconds:
        length = float(rng.uniform(0.12, 0.32))
        kind = str(rng.choice(["vowel", "vowel", "vowel", "fricative", "pause"]))
        segments.append((start, length, kind))
        start += length
    return segments


def _envelope(t: np.ndarray, segments: list[tuple[float, float, str]], kind: str) -> np.ndarray:
    """Raised-sine amplitude envelope over the segments of one kind (syllabic rhythm)."""
    env = np.zeros_like(t)
    for start, length, seg_kind in segments:
        if seg_kind == kind:
            inside = (t >= start) & (t < start + length)
            env[inside] = np.sin(np.pi * (t[inside] - start) / length) ** 0.7
    return env


def _tracks(
    t: np.ndarray, segments: list[tuple[float, float, str]], rng: np.random.Generator
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Smooth pitch (90-250 Hz) and formant tracks interpolated between syllable centres."""
    centres = np.array([start + length / 2 for start, length, _ in segments])
    pitch = np.interp(t, centres, rng.uniform(90.0, 250.0, centres.size))
    vowels = _VOWELS[rng.integers(0, len(_VOWELS), centres.size)]
    formants = [np.interp(t, centres, vowels[:, i]) for i in range(3)]
    return pitch, formants


def _formant_gain(freq: np.ndarray, formants: list[np.ndarray]) -> np.ndarray:
    """Magnitude of a cascade of two-pole resonators (unity gain at DC) at `freq`."""
    gain = np.ones_like(freq)
    for centre, bandwidth in zip(formants, _FORMANT_BANDWIDTHS, strict=True):
        gain *= centre**2 / np.sqrt((centre**2 - freq**2) ** 2 + (freq * bandwidth) ** 2)
    return gain


def _voiced(rate: int, t: np.ndarray, pitch: np.ndarray, formants: list[np.ndarray]) -> np.ndarray:
    """Harmonic synthesis: glottal source (-6 dB/octave after lip radiation) through the formants."""
    phase = 2 * np.pi * np.cumsum(pitch) / rate
    out = np.zeros_like(t)
    for k in range(1, int(0.48 * rate / 90.0) + 1):
        freq = k * pitch
        gain = np.where(freq < 0.48 * rate, _formant_gain(freq, formants) / k, 0.0)
        out += gain * np.sin(k * phase)
    return out


def _noise(rate: int, n: int, rng: np.random.Generator, low_hz: float) -> np.ndarray:
    """White noise with everything below `low_hz` removed (fricative-like, up to Nyquist)."""
    return bandlimit(rng.standard_normal(n), rate, rate / 2, low_hz)


def speech_like(rate: int, seconds: float = 3.0, seed: int = 1234, peak: float = 0.7) -> np.ndarray:
    """A deterministic speech-like int16 signal at `rate` (see module docstring)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(rate * seconds)) / rate
    segments = _syllables(rng, seconds)
    pitch, formants = _tracks(t, segments, rng)
    voiced = _voiced(rate, t, pitch, formants) * _envelope(t, segments, "vowel")
    hiss = _noise(rate, t.size, rng, 2500.0) * _envelope(t, segments, "fricative")
    breath = _noise(rate, t.size, rng, 1000.0) * _envelope(t, segments, "vowel")
    mix = voiced / np.max(np.abs(voiced)) + 0.25 * hiss / np.max(np.abs(hiss)) + 0.01 * breath
    return np.round(mix * (peak * FULL_SCALE / np.max(np.abs(mix)))).astype(np.int16)


def tone(rate: int, freq: float, seconds: float = 0.5, amplitude: float = 0.5) -> np.ndarray:
    """A sine tone as int16 (amplitude relative to full scale)."""
    t = np.arange(int(rate * seconds)) / rate
    return np.round(amplitude * FULL_SCALE * np.sin(2 * np.pi * freq * t)).astype(np.int16)


def gaussian_pulse(rate: int, seconds: float = 0.2, at: float = 0.1, sigma: float = 0.25e-3) -> np.ndarray:
    """A smooth pulse well inside the telephone band (float, peak 0.5 FS), to measure delay."""
    t = np.arange(int(rate * seconds)) / rate
    return 0.5 * FULL_SCALE * np.exp(-0.5 * ((t - at) / sigma) ** 2)


def bandlimit(x: np.ndarray, rate: int, high_hz: float, low_hz: float = 0.0) -> np.ndarray:
    """Zero-phase brick-wall band-pass (FFT mask): a reference with no delay of its own."""
    spectrum = np.fft.rfft(np.asarray(x, dtype=np.float64))
    freqs = np.fft.rfftfreq(len(x), 1.0 / rate)
    spectrum[(freqs > high_hz) | (freqs < low_hz)] = 0.0
    return np.fft.irfft(spectrum, len(x))


def _aligned(output: np.ndarray, size: int, rate: int, high_hz: float, delay: float) -> np.ndarray:
    """`output` advanced by `delay` samples (fractional part in the frequency domain), band-limited."""
    whole = math.floor(delay)
    segment = np.zeros(size)
    available = output[whole : whole + size].astype(np.float64)
    segment[: available.size] = available
    spectrum = np.fft.rfft(segment)
    freqs = np.fft.rfftfreq(size, 1.0 / rate)
    spectrum *= np.exp(2j * np.pi * freqs * (delay - whole) / rate)
    spectrum[freqs > high_hz] = 0.0
    return np.fft.irfft(spectrum, size)


def align(
    reference: np.ndarray,
    output: np.ndarray,
    rate: int,
    high_hz: float = 3400.0,
    max_delay_s: float = 0.25,
    trim_s: float = 0.05,
) -> tuple[float, float]:
    """Measure the delay of `output` against `reference` and the SNR in 0-high_hz once compensated.

    Returns (delay in samples, SNR in dB). The integer lag comes from the cross-correlation peak; the
    fractional part is the one that minimises the band-limited error (golden-section search), so a
    resampler is not charged for a delay it does not have.
    """
    keep = slice(int(trim_s * rate), reference.size - int(trim_s * rate))
    ref_b = bandlimit(reference, rate, high_hz)
    out_b = bandlimit(output[: reference.size + int(max_delay_s * rate)], rate, high_hz)
    size = 1 << (ref_b.size + out_b.size).bit_length()
    corr = np.fft.irfft(np.fft.rfft(out_b, size) * np.conj(np.fft.rfft(ref_b, size)), size)
    lag = int(np.argmax(corr[: int(max_delay_s * rate) + 1]))

    def error(delay: float) -> float:
        diff = _aligned(output, reference.size, rate, high_hz, delay)[keep] - ref_b[keep]
        return float(np.sum(diff**2))

    lo, hi = max(0.0, lag - 1.0), lag + 1.0
    golden = (math.sqrt(5) - 1) / 2
    a, b = hi - golden * (hi - lo), lo + golden * (hi - lo)
    err_a, err_b = error(a), error(b)
    for _ in range(28):  # shrinks the bracket to ~1e-6 samples
        if err_a < err_b:
            hi, b, err_b = b, a, err_a
            a = hi - golden * (hi - lo)
            err_a = error(a)
        else:
            lo, a, err_a = a, b, err_b
            b = lo + golden * (hi - lo)
            err_b = error(b)
    delay = (lo + hi) / 2
    signal = float(np.sum(ref_b[keep] ** 2))
    return delay, 10 * math.log10(signal / max(error(delay), 1e-12))


def tone_gain_db(output: np.ndarray, rate: int, freq: float, amplitude: float = 0.5, trim_s: float = 0.05) -> float:
    """Gain of a tone through a system, from a least-squares sine fit (robust to noise and delay)."""
    trim = int(trim_s * rate)
    y = output[trim:-trim].astype(np.float64)
    t = (np.arange(y.size) + trim) / rate
    basis = np.stack([np.sin(2 * np.pi * freq * t), np.cos(2 * np.pi * freq * t)], axis=1)
    coeffs, *_ = np.linalg.lstsq(basis, y, rcond=None)
    return 20 * math.log10(math.hypot(*coeffs) / (amplitude * FULL_SCALE))


def leakage_db(output: np.ndarray, rate: int, amplitude: float = 0.5, trim_s: float = 0.05) -> float:
    """Power of whatever came out (all of it aliased: the input tone was above the output band), in dB
    relative to the input tone."""
    trim = int(trim_s * rate)
    y = output[trim:-trim].astype(np.float64)
    power = float(np.mean(y**2)) + 1e-3  # floor: a perfectly silent output reads as about -140 dB
    return 10 * math.log10(power / ((amplitude * FULL_SCALE) ** 2 / 2))


def chunked(data: bytes, sizes: list[int]) -> list[bytes]:
    """Split `data` into consecutive pieces whose sizes cycle through `sizes`."""
    pieces, start, i = [], 0, 0
    while start < len(data):
        pieces.append(data[start : start + sizes[i % len(sizes)]])
        start += sizes[i % len(sizes)]
        i += 1
    return pieces


def outbound_chunk_sizes(rate: int, seed: int = 7, count: int = 64) -> list[int]:
    """Byte sizes of PCM16 chunks of 40-100 ms, as a model streams its speech."""
    rng = np.random.default_rng(seed)
    return [int(ms) * rate // 1000 * 2 for ms in rng.integers(40, 101, count)]

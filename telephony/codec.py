"""Audio between Twilio (G.711 μ-law, 8 kHz, 20 ms frames) and the model (PCM16 LE at its own rate).

Two facts shape this module (see the design note, "Audio: what good looks like"):

* Resampling must keep filter state across chunks. Stateless per-chunk resampling clicks at every chunk
  boundary; linear interpolation (``audioop.ratecv``) aliases everything above 4 kHz into the call; large
  block resamplers (soxr) hold back tens of milliseconds. A short linear-phase polyphase FIR keeps the full
  G.711 quality with ~2.7 ms of delay per direction.
* Output must not depend on how the network happens to chunk the audio, so the filter runs on exact
  integer arithmetic: bit-identical results for any chunking, which makes recordings and tests reproducible.
"""

from __future__ import annotations

import math
import wave
from pathlib import Path

import numpy as np

__all__ = [
    "FRAME_BYTES",
    "FRAME_MS",
    "FRAME_SECONDS",
    "SPEECH_LEVEL_DBFS",
    "TWILIO_RATE",
    "ULAW_SILENCE",
    "InboundAudio",
    "OutboundAudio",
    "Resampler",
    "SoundFileError",
    "load_sound_file",
    "pcm16_to_ulaw",
    "ulaw_to_pcm16",
]

TWILIO_RATE = 8000
"""Sample rate of Twilio Media Streams audio (μ-law, mono)."""

FRAME_MS = 20
"""Twilio sends and expects audio in 20 ms frames: the unit caller speech and model chunks are measured in."""

FRAME_SECONDS = FRAME_MS / 1000

FRAME_BYTES = TWILIO_RATE * FRAME_MS // 1000
"""One frame of μ-law at 8 kHz, one byte a sample: 160 bytes."""

SPEECH_LEVEL_DBFS = -45.0
"""Caller audio louder than this (a 20 ms frame's RMS) is speech: a phone line's noise floor sits well below it, and
espeak's voice on a line 20 dB down sits at its edge. The one level for caller speech: the bridge's turns and dead
air (``caller_speech``), continuity (``utterance_keeper``), the quiet switch-over, the replay report and the
scenarios' caller truth all use it. (A model's own detector, such as the offline model's, is the model's business.)"""

ULAW_SILENCE = 0xFF
"""μ-law code for digital zero, used to pad the last frame of a turn."""


# ---------------------------------------------------------------------------------------------------------
# G.711 μ-law
# ---------------------------------------------------------------------------------------------------------

_ULAW_BIAS = 0x84  # 132: added before the segment search so segment 0 has the same step as segment 1
_ULAW_CLIP = 8159  # largest 14-bit magnitude the code can represent (before adding BIAS >> 2)
_ULAW_SEGMENT_ENDS = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF])


def _build_ulaw_decode_table() -> np.ndarray:
    """All 256 μ-law codes expanded to PCM16 (G.711), so decoding is one table lookup."""
    code = np.arange(256, dtype=np.int32) ^ 0xFF  # codes are transmitted bit-inverted
    exponent = (code >> 4) & 0x07
    magnitude = ((((code & 0x0F) << 3) + _ULAW_BIAS) << exponent) - _ULAW_BIAS
    return np.where(code & 0x80, -magnitude, magnitude).astype("<i2")


def _build_ulaw_encode_table() -> np.ndarray:
    """μ-law code for every PCM16 value, indexed by the sample's uint16 bit pattern.

    Follows G.711 on the 14-bit linear input as ``audioop.lin2ulaw`` does (16-bit samples are reduced to
    14 bits by an arithmetic shift first), so the output is bit-exact with it.
    """
    pcm14 = np.arange(65536, dtype=np.int32).astype(np.uint16).view(np.int16).astype(np.int32) >> 2
    negative = pcm14 < 0
    magnitude = np.minimum(np.abs(pcm14), _ULAW_CLIP) + (_ULAW_BIAS >> 2)
    segment = np.searchsorted(_ULAW_SEGMENT_ENDS, magnitude)  # first segment whose end >= magnitude
    in_range = segment < 8
    safe_segment = np.minimum(segment, 7)
    code = np.where(in_range, (safe_segment << 4) | ((magnitude >> (safe_segment + 1)) & 0x0F), 0x7F)
    return (code ^ np.where(negative, 0x7F, 0xFF)).astype(np.uint8)


_ULAW_DECODE = _build_ulaw_decode_table()
_ULAW_ENCODE = _build_ulaw_encode_table()


def ulaw_to_pcm16(data: bytes) -> bytes:
    """Decode G.711 μ-law bytes to PCM16 little-endian (same as ``audioop.ulaw2lin(data, 2)``)."""
    return _ULAW_DECODE.take(np.frombuffer(data, dtype=np.uint8)).tobytes()


_ULAW_POWER = _ULAW_DECODE.astype(np.float64) ** 2


def ulaw_level_dbfs(data: bytes) -> float:
    """RMS level of μ-law audio in dBFS (-inf for silence): a cheap voice-activity cue."""
    if not data:
        return float("-inf")
    # np.add.reduce rather than .mean(): the same sum without mean's Python-level wrapper (half the cost per frame)
    mean_power = float(np.add.reduce(_ULAW_POWER.take(np.frombuffer(data, dtype=np.uint8)))) / len(data)
    return 10 * math.log10(mean_power / 32768**2) if mean_power > 0 else float("-inf")


def pcm16_to_ulaw(data: bytes) -> bytes:
    """Encode PCM16 little-endian to G.711 μ-law (same as ``audioop.lin2ulaw(data, 2)``).

    A trailing odd byte is ignored: it is not a sample.
    """
    usable = len(data) & ~1
    return _ULAW_ENCODE.take(np.frombuffer(data, dtype="<u2", count=usable // 2)).tobytes()


# ---------------------------------------------------------------------------------------------------------
# Resampling
# ---------------------------------------------------------------------------------------------------------

_PASS_FRACTION = 0.425  # passband edge / lower rate: 3.4 kHz when 8 kHz is one side (telephone band)
_STOP_FRACTION = 0.55  # stopband edge / lower rate: 4.4 kHz; what aliases lands above 3.6 kHz
_STOPBAND_DB = 84.0  # Kaiser design target, a little above the ~80 dB wanted: the realised filter gives ~82 dB
_TAP_BITS = 24  # taps are multiples of 2**-24; see _quantize_phases for why the arithmetic is exact
_BLOCKS_PER_ROW = 16  # filter blocks computed per row of one matrix product (Resampler._product)
_MOST_ROW_TAPS = 1 << 16  # a row matrix larger than this (odd ratios) is not worth its memory: a block a row


def _kaiser_beta(attenuation_db: float) -> float:
    """Kaiser window shape for a given stopband attenuation (Kaiser's empirical formula)."""
    if attenuation_db > 50:
        return 0.1102 * (attenuation_db - 8.7)
    if attenuation_db >= 21:
        return 0.5842 * (attenuation_db - 21) ** 0.4 + 0.07886 * (attenuation_db - 21)
    return 0.0


def _lowpass(rate: float, pass_hz: float, stop_hz: float, attenuation_db: float) -> np.ndarray:
    """Odd-length linear-phase Kaiser-windowed sinc low-pass with unity DC gain.

    Odd length puts the group delay on a whole sample, so round trips shift by an integer.
    """
    transition = 2 * math.pi * (stop_hz - pass_hz) / rate
    length = math.ceil((attenuation_db - 7.95) / (2.285 * transition)) + 1
    length |= 1
    cutoff = (pass_hz + stop_hz) / 2 / rate  # cycles per sample
    n = np.arange(length) - (length - 1) / 2
    taps = 2 * cutoff * np.sinc(2 * cutoff * n) * np.kaiser(length, _kaiser_beta(attenuation_db))
    return taps / taps.sum()


def _quantize_phases(taps: np.ndarray, up: int) -> np.ndarray:
    """Split the prototype into ``up`` phases of fixed-point taps (integers / 2**_TAP_BITS).

    Each phase sums to exactly 1, so constant input gives constant output (no image of DC). Why float64
    still computes exactly: every tap is a multiple of 2**-24 below 2 and every sample an integer below
    2**15, so every product and partial sum is a multiple of 2**-24 below 2**17, which needs at most 41 of
    float64's 53 significand bits. The dot products are thus exact whatever order numpy/BLAS sums in, and
    the output is bit-identical for any chunking; float64 merely lets BLAS do the integer work.
    """
    scale = 2.0**_TAP_BITS
    per_phase = -(-taps.size // up)
    padded = np.zeros(per_phase * up)
    padded[: taps.size] = taps * up  # zero-stuffing divides the gain by `up`; restore it
    phases = np.round(padded.reshape(per_phase, up).T * scale)
    centre = np.argmax(np.abs(phases), axis=1)
    phases[np.arange(up), centre] += scale - phases.sum(axis=1)
    assert np.abs(phases).sum(axis=1).max() < 4 * scale, "partial sums could leave float64's exact range"
    return phases / scale


class _WholeSamples:
    """Turns byte pieces of any length into int16 samples, carrying an odd trailing byte to the next."""

    def __init__(self) -> None:
        self._odd = b""

    def take(self, data: bytes) -> np.ndarray:
        """Samples in `data` (after the byte carried from last time); keeps a new odd byte, if any."""
        if self._odd:
            data = self._odd + data
        usable = len(data) & ~1
        self._odd = bytes(data[usable:])
        return np.frombuffer(data, dtype="<i2", count=usable // 2)

    def clear(self) -> None:
        """Forget the carried byte."""
        self._odd = b""


_NO_SAMPLES = np.zeros(0, dtype="<i2")


class Resampler:
    """Stateful polyphase FIR resampler for mono PCM16 LE at any rational ratio.

    Feed audio with :meth:`process` as it arrives; the filter history carries over between calls, so the
    output is the same (bit for bit) however the input is split. :meth:`flush` emits the tail still inside
    the filter at the end of a stream; :meth:`reset` forgets everything (barge-in).

    8 kHz <-> 16 kHz: an 87-tap prototype at 16 kHz, 44 taps per phase, 43 samples (2.7 ms) of delay.
    """

    def __init__(self, from_rate: int, to_rate: int) -> None:
        if from_rate <= 0 or to_rate <= 0 or int(from_rate) != from_rate or int(to_rate) != to_rate:
            raise ValueError(f"sample rates must be positive integers, got {from_rate} -> {to_rate}")
        self.from_rate = int(from_rate)
        self.to_rate = int(to_rate)
        common = math.gcd(self.from_rate, self.to_rate)
        self._up = self.to_rate // common
        self._down = self.from_rate // common
        self._passthrough = self._up == self._down
        self._whole = _WholeSamples()
        self._build_filter()
        self.reset()

    def _build_filter(self) -> None:
        """Design the prototype at the upsampled rate and lay it out as a (window, outputs-per-block) matrix.

        A block is ``up`` consecutive outputs, which consume exactly ``down`` inputs; every block sees the
        same phase pattern, so one matrix product computes all whole blocks of a chunk at once.
        """
        if self._passthrough:
            self._delay_up, self._span, self._lookahead = 0, 1, 0
            self._block_taps = self._row_taps = np.ones((1, 1))
            return
        low = min(self.from_rate, self.to_rate)
        prototype = _lowpass(self.from_rate * self._up, _PASS_FRACTION * low, _STOP_FRACTION * low, _STOPBAND_DB)
        self._delay_up = (prototype.size - 1) // 2
        phases = _quantize_phases(prototype, self._up)
        per_phase = phases.shape[1]
        offsets = [(r * self._down) // self._up for r in range(self._up)]
        self._lookahead = max(offsets)
        self._span = per_phase + self._lookahead
        self._block_taps = np.zeros((self._span, self._up))
        for r, offset in enumerate(offsets):
            phase = phases[(r * self._down) % self._up]
            self._block_taps[per_phase - 1 + offset - np.arange(per_phase), r] = phase
        self._row_taps = self._block_taps  # one block a row, unless a row of several stays small (below)
        shape = (self._span + (_BLOCKS_PER_ROW - 1) * self._down, _BLOCKS_PER_ROW * self._up)
        if shape[0] * shape[1] <= _MOST_ROW_TAPS:  # the telephone ratios (1:2, 2:1, 1:3, 3:1, ...), not 441:160
            self._row_taps = np.zeros(shape)
            for block in range(_BLOCKS_PER_ROW):
                rows, columns = block * self._down, block * self._up
                self._row_taps[rows : rows + self._span, columns : columns + self._up] = self._block_taps

    @property
    def delay(self) -> float:
        """Group delay the filter adds, in seconds (linear phase: the same at every frequency)."""
        return self._delay_up / (self.from_rate * self._up)

    def reset(self) -> None:
        """Drop all state, as if freshly built: used on barge-in so no stale audio leaks out."""
        self._history = np.zeros(self._span - 1 - self._lookahead)
        self._whole.clear()
        self._consumed = 0
        self._emitted = 0

    def process(self, pcm16: bytes) -> bytes:
        """Resample the next piece of the stream; an odd trailing byte is kept for the next call."""
        return self.process_array(self._whole.take(pcm16)).tobytes()

    def process_array(self, samples: np.ndarray) -> np.ndarray:
        """Resample int16 samples, skipping the bytes round trip (with equal rates: `samples` itself)."""
        if self._passthrough:
            return samples
        self._consumed += samples.size
        return self._filter(samples)

    def flush(self) -> bytes:
        """Emit what is still inside the filter (the last ``delay`` of audio), then start over."""
        if self._passthrough or self._consumed == 0:
            self.reset()
            return b""
        target = -(-(self._consumed * self._up + self._delay_up) // self._down)
        blocks = -(-target // self._up)
        needed = (blocks - 1) * self._down + self._lookahead + 1
        already = self._emitted
        tail = self._filter(np.zeros(max(0, needed - self._consumed), dtype=np.int16))
        self.reset()
        return tail[: max(0, target - already)].tobytes()

    def _filter(self, samples: np.ndarray) -> np.ndarray:
        """Run all whole blocks available in history + samples; keep the rest as history."""
        buffer = np.concatenate((self._history, samples))
        blocks = (buffer.size - self._span) // self._down + 1
        if blocks <= 0:
            self._history = buffer
            return _NO_SAMPLES
        self._history = buffer[blocks * self._down :]
        per_row = self._row_taps.shape[1] // self._up
        rows, rest = divmod(blocks, per_row)
        parts = []
        if rows:
            parts.append(self._product(buffer, 0, rows, self._row_taps))
        if rest:  # the blocks short of a whole row, one per row
            parts.append(self._product(buffer, rows * per_row * self._down, rest, self._block_taps))
        out = parts[0] if len(parts) == 1 else np.concatenate(parts)
        np.rint(out, out=out)
        np.maximum(out, -32768.0, out=out)  # ufuncs rather than np.clip, whose wrapper costs more here
        np.minimum(out, 32767.0, out=out)
        self._emitted += out.size
        return out.astype("<i2")

    def _product(self, buffer: np.ndarray, start: int, count: int, taps: np.ndarray) -> np.ndarray:
        """``count`` windows of ``buffer`` from sample ``start``, one per row of ``taps``' width, times ``taps``.

        The windows overlap; the contiguous copy lets BLAS take the product (numpy's own loop over the
        overlapping view is several times slower than copy + BLAS). A row of several blocks copies each sample
        fewer times than a row per block: with 16 blocks a row, a 40 ms chunk's copy is 15-30 KB, not 170-330 KB.
        """
        step = buffer.itemsize
        stride = taps.shape[1] // self._up * self._down * step
        windows = np.ndarray((count, taps.shape[0]), buffer.dtype, buffer, start * step, (stride, step))
        return (np.ascontiguousarray(windows) @ taps).reshape(-1)


# ---------------------------------------------------------------------------------------------------------
# The two directions of a call
# ---------------------------------------------------------------------------------------------------------


class InboundAudio:
    """Caller -> model: Twilio μ-law 8 kHz frames to PCM16 LE at the model's input rate."""

    def __init__(self, model_rate: int) -> None:
        self.model_rate = model_rate
        self._resampler = Resampler(TWILIO_RATE, model_rate)

    def convert(self, ulaw: bytes) -> bytes:
        """Decode and resample one piece of caller audio (any length; 160 bytes per Twilio frame)."""
        samples = _ULAW_DECODE.take(np.frombuffer(ulaw, dtype=np.uint8))
        return self._resampler.process_array(samples).tobytes()

    def reset(self) -> None:
        """Forget the filter history (e.g. when a new stream starts on the same object)."""
        self._resampler.reset()


class OutboundAudio:
    """Model -> caller: PCM16 LE at the model's output rate to whole 20 ms μ-law frames for Twilio.

    Only whole 160-byte frames leave (Twilio plays whole frames); the remainder waits for the next call
    or for :meth:`flush` at the end of the turn.
    """

    def __init__(self, model_rate: int) -> None:
        self.model_rate = model_rate
        self._resampler = Resampler(model_rate, TWILIO_RATE)
        self._whole = _WholeSamples()
        self._pending = bytearray()

    def convert(self, pcm16: bytes) -> bytes:
        """Resample and encode; returns a multiple of FRAME_BYTES (possibly empty)."""
        resampled = self._resampler.process_array(self._whole.take(pcm16))
        self._pending += _ULAW_ENCODE.take(resampled.view("<u2")).tobytes()
        return self._take_frames()

    def flush(self) -> bytes:
        """End of turn: emit the filter tail and the remainder, padding the last frame with silence."""
        self._whole.clear()
        self._pending += pcm16_to_ulaw(self._resampler.flush())
        self._pending += bytes([ULAW_SILENCE]) * (-len(self._pending) % FRAME_BYTES)
        return self._take_frames()

    def reset(self) -> None:
        """Barge-in: drop the filter history and the unsent remainder so no stale audio follows."""
        self._resampler.reset()
        self._whole.clear()
        self._pending.clear()

    def _take_frames(self) -> bytes:
        """Remove and return all whole frames from the pending buffer."""
        whole = len(self._pending) - len(self._pending) % FRAME_BYTES
        frames = bytes(self._pending[:whole])
        del self._pending[:whole]
        return frames


# ---------------------------------------------------------------------------------------------------------
# Sound files the bridge plays itself (the apology, the hold sound)
# ---------------------------------------------------------------------------------------------------------


class SoundFileError(ValueError):
    """A sound file the bridge cannot play; the message says what is wrong and what it takes."""


def load_sound_file(path: str | Path) -> bytes:
    """A WAV file (mono, 16-bit PCM, any rate) or raw 8 kHz μ-law (any other name) as whole 20 ms μ-law frames."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as error:
        raise SoundFileError(f"cannot read {file}: {error.strerror or error}") from error
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        ulaw = _wav_to_ulaw(file)
    else:
        ulaw = data
    ulaw = ulaw[: len(ulaw) - len(ulaw) % FRAME_BYTES]
    if not ulaw:
        raise SoundFileError(f"{file} holds less than one 20 ms frame of audio")
    return ulaw


def _wav_to_ulaw(file: Path) -> bytes:
    try:
        with wave.open(str(file), "rb") as wav:
            channels, width, rate = wav.getnchannels(), wav.getsampwidth(), wav.getframerate()
            pcm = wav.readframes(wav.getnframes())
    except (wave.Error, EOFError) as error:
        raise SoundFileError(f"{file} is not a WAV file this can read ({error}): save it as 16-bit PCM") from error
    if channels != 1 or width != 2:
        raise SoundFileError(f"{file} has {channels} channel(s) of {8 * width}-bit audio: save it as mono 16-bit PCM")
    outbound = OutboundAudio(rate)
    return outbound.convert(pcm) + outbound.flush()

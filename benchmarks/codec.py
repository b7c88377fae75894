"""Compare telephony.codec with the usual alternatives on the numbers that matter for a phone call.

Run: ``uv run python benchmarks/codec.py``. Prints one table: ours, stateful ``audioop.ratecv`` (what most
samples do) and soxr ``ResampleStream`` HQ (pipecat's choice). Same signals and measurements for all three
(benchmarks/signals.py, also used by tests/test_codec.py); only the CPU column is a timing.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Protocol

import numpy as np

try:
    from benchmarks import signals
except ImportError:  # run as a script without the editable install: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks import signals

from telephony import codec

MODEL_RATES = (16000, 24000)
ALIAS_TONES = range(4500, 7001, 250)
FLAT_TONES = (100, 200, 300, 500, 700, 1000, 1500, 2000, 2500, 3000, 3200, 3400)
CALL_SECONDS = 60
CPU_REPEATS = 9


class Stream(Protocol):
    """A stateful mono PCM16 resampler, as the benchmark drives it."""

    def process(self, pcm16: bytes) -> bytes: ...

    def flush(self) -> bytes: ...


class Converter(Protocol):
    """One direction of a call (codec.InboundAudio or the baselines' equivalent)."""

    def convert(self, data: bytes) -> bytes: ...


class FlushingConverter(Converter, Protocol):
    """The outbound direction, which also flushes at the end of a turn."""

    def flush(self) -> bytes: ...


@dataclass
class Approach:
    """One resampler under test plus the μ-law functions it is normally paired with."""

    name: str
    stream: Callable[[int, int], Stream]
    encode: Callable[[bytes], bytes]
    decode: Callable[[bytes], bytes]


# ---------------------------------------------------------------------------------------------------------
# The contenders
# ---------------------------------------------------------------------------------------------------------


class _OddByteCarry:
    """Carries an odd trailing byte, so baselines see whole samples like ours does."""

    def __init__(self) -> None:
        self._odd = b""

    def _whole(self, data: bytes) -> bytes:
        data = self._odd + data
        cut = len(data) & ~1
        self._odd = data[cut:]
        return data[:cut]


class RatecvStream(_OddByteCarry):
    """audioop.ratecv with its state carried between calls (the common, non-clicking usage)."""

    def __init__(self, src: int, dst: int) -> None:
        super().__init__()
        self._audioop = _import_audioop()
        self._rates, self._state = (src, dst), None

    def process(self, pcm16: bytes) -> bytes:
        out, self._state = self._audioop.ratecv(self._whole(pcm16), 2, 1, *self._rates, self._state)
        return out

    def flush(self) -> bytes:
        self._state, self._odd = None, b""
        return b""


class SoxrStream(_OddByteCarry):
    """soxr.ResampleStream, quality HQ, int16 in and out."""

    def __init__(self, src: int, dst: int) -> None:
        super().__init__()
        import soxr

        self._stream = soxr.ResampleStream(src, dst, 1, dtype="int16", quality="HQ")

    def process(self, pcm16: bytes) -> bytes:
        return self._stream.resample_chunk(np.frombuffer(self._whole(pcm16), "<i2")).tobytes()

    def flush(self) -> bytes:
        tail = self._stream.resample_chunk(np.zeros(0, np.int16), last=True).tobytes()
        self._stream.clear()
        self._odd = b""
        return tail


def _import_audioop() -> ModuleType | None:
    """The audioop module (audioop-lts on 3.13+), or None where it is unavailable."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import audioop
        except ImportError:
            return None
    return audioop


def _approaches() -> list[Approach]:
    """Ours always; each baseline only where its package is installed."""
    found = [Approach("ours (polyphase FIR)", codec.Resampler, codec.pcm16_to_ulaw, codec.ulaw_to_pcm16)]
    audioop = _import_audioop()
    if audioop is not None:
        found.append(
            Approach(
                "audioop.ratecv (stateful)",
                RatecvStream,
                lambda data: audioop.lin2ulaw(data, 2),
                lambda data: audioop.ulaw2lin(data, 2),
            )
        )
    try:
        import soxr  # noqa: F401

        found.append(Approach("soxr ResampleStream HQ", SoxrStream, codec.pcm16_to_ulaw, codec.ulaw_to_pcm16))
    except ImportError:
        pass
    return found


class Outbound:
    """Model PCM -> 20 ms μ-law frames with any approach, framed exactly like codec.OutboundAudio."""

    def __init__(self, approach: Approach, model_rate: int) -> None:
        self._stream = approach.stream(model_rate, codec.TWILIO_RATE)
        self._encode = approach.encode
        self._pending = bytearray()

    def convert(self, pcm16: bytes) -> bytes:
        """Resample, encode, return whole frames only."""
        self._pending += self._encode(self._stream.process(pcm16))
        whole = len(self._pending) - len(self._pending) % codec.FRAME_BYTES
        frames = bytes(self._pending[:whole])
        del self._pending[:whole]
        return frames

    def flush(self) -> bytes:
        """Filter tail and remainder, padded with μ-law silence."""
        self._pending += self._encode(self._stream.flush())
        self._pending += b"\xff" * (-len(self._pending) % codec.FRAME_BYTES)
        return self.convert(b"")


class Inbound:
    """Twilio μ-law frames -> model PCM with any approach."""

    def __init__(self, approach: Approach, model_rate: int) -> None:
        self._stream = approach.stream(codec.TWILIO_RATE, model_rate)
        self._decode = approach.decode

    def convert(self, ulaw: bytes) -> bytes:
        """Decode, then resample."""
        return self._stream.process(self._decode(ulaw))

    def flush(self) -> bytes:
        """The resampler's tail."""
        return self._stream.flush()


def _pipelines(approach: Approach, model_rate: int) -> tuple[Converter, FlushingConverter]:
    """Ours uses the real telephony.codec classes; the baselines the equivalent wrappers above."""
    if approach.stream is codec.Resampler:
        return codec.InboundAudio(model_rate), codec.OutboundAudio(model_rate)
    return Inbound(approach, model_rate), Outbound(approach, model_rate)


# ---------------------------------------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------------------------------------


def _samples(data: bytes) -> np.ndarray:
    """PCM16 LE bytes as int16 samples."""
    return np.frombuffer(data, "<i2")


@cache
def _speech(rate: int) -> np.ndarray:
    """The shared speech-like signal, synthesised once per rate."""
    return signals.speech_like(rate)


def round_trip_snr(approach: Approach, model_rate: int) -> float:
    """Model speech -> outbound (40-100 ms chunks) -> μ-law -> inbound (20 ms frames) -> model rate."""
    speech = _speech(model_rate)
    inbound, outbound = _pipelines(approach, model_rate)
    pieces = signals.chunked(speech.tobytes(), signals.outbound_chunk_sizes(model_rate))
    ulaw = b"".join(outbound.convert(piece) for piece in pieces) + outbound.flush()
    frames = signals.chunked(ulaw, [codec.FRAME_BYTES])
    back = b"".join(inbound.convert(frame) for frame in frames)
    back += inbound.flush() if hasattr(inbound, "flush") else b""
    return signals.align(speech, _samples(back), model_rate)[1]


def alias_leakage(approach: Approach, src: int) -> float:
    """Worst power (dB re. the tone) reaching 0-4 kHz from 4.5-7 kHz tones going src -> 8 kHz."""
    worst = -200.0
    for freq in ALIAS_TONES:
        stream = approach.stream(src, codec.TWILIO_RATE)
        out = stream.process(signals.tone(src, freq, 0.3).tobytes()) + stream.flush()
        worst = max(worst, signals.leakage_db(_samples(out), codec.TWILIO_RATE))
    return worst


def passband_ripple(approach: Approach) -> float:
    """Largest spread (dB) of tone gains over 100-3400 Hz, over 8k<->16k and 8k<->24k."""
    worst = 0.0
    for src, dst in ((8000, 16000), (16000, 8000), (8000, 24000), (24000, 8000)):
        gains = []
        for freq in FLAT_TONES:
            stream = approach.stream(src, dst)
            out = stream.process(signals.tone(src, freq, 0.3).tobytes()) + stream.flush()
            gains.append(signals.tone_gain_db(_samples(out), dst, freq))
        worst = max(worst, max(gains) - min(gains))
    return worst


def content_delay(approach: Approach, src: int, dst: int) -> float:
    """Delay (s) of the signal itself through the filter, from a pulse fed as one block."""
    stream = approach.stream(src, dst)
    pulse = np.round(signals.gaussian_pulse(src)).astype("<i2")
    out = stream.process(pulse.tobytes()) + stream.flush()
    delay, _ = signals.align(signals.gaussian_pulse(dst), _samples(out), dst, high_hz=3400.0, trim_s=0.0)
    return delay / dst


def streaming_delay(approach: Approach, src: int, dst: int, sizes: list[int]) -> tuple[float, float]:
    """Added delay (avg, max in s) when fed in chunks of `sizes` bytes.

    After every call: filter delay + (input time fed - output time emitted). The second term is the audio
    the resampler holds back; it is what makes block resamplers bursty.
    """
    stream = approach.stream(src, dst)
    delay = content_delay(approach, src, dst)
    fed = emitted = 0
    lags = []
    for piece in signals.chunked(_speech(src).tobytes(), sizes):
        fed += len(piece) // 2
        emitted += len(stream.process(piece)) // 2
        lags.append(delay + fed / src - emitted / dst)
    return statistics.fmean(lags), max(lags)


def chunking_identical(approach: Approach) -> bool:
    """Same bytes out for one block, 20 ms pieces and odd pieces (1, 3, 77, 333 bytes)?"""
    for src, dst in ((8000, 16000), (16000, 8000), (8000, 24000), (24000, 8000)):
        data = _speech(src)[:src].tobytes()
        results = set()
        for sizes in ([len(data)], [src // 50 * 2], [1, 3, 77, 333]):
            stream = approach.stream(src, dst)
            results.add(b"".join(stream.process(p) for p in signals.chunked(data, sizes)) + stream.flush())
        if len(results) != 1:
            return False
    return True


def cpu_percents(approaches: list[Approach], model_rate: int) -> list[float]:
    """CPU % of one core per call (both directions) for each approach: median over simulated calls.

    Approaches take turns within every repetition, so a busy machine slows them all alike.
    """
    repeat = -(-CALL_SECONDS // 3)
    speech = np.tile(_speech(model_rate), repeat)[: model_rate * CALL_SECONDS].tobytes()
    caller = np.tile(_speech(codec.TWILIO_RATE), repeat)[: codec.TWILIO_RATE * CALL_SECONDS].tobytes()
    frames = signals.chunked(codec.pcm16_to_ulaw(caller), [codec.FRAME_BYTES])
    chunks = signals.chunked(speech, signals.outbound_chunk_sizes(model_rate, count=997))
    times: list[list[float]] = [[] for _ in approaches]
    for approach in approaches:  # warm-up (caches, allocator, BLAS), not counted
        _simulated_call(approach, model_rate, frames[:500], chunks[:100])
    for _ in range(CPU_REPEATS):
        for approach, spent in zip(approaches, times, strict=True):
            spent.append(_simulated_call(approach, model_rate, frames, chunks))
    return [100 * statistics.median(spent) / CALL_SECONDS for spent in times]


def _simulated_call(approach: Approach, model_rate: int, frames: list[bytes], chunks: list[bytes]) -> float:
    """CPU seconds to convert one call's audio: 20 ms frames in, 40-100 ms chunks out."""
    inbound, outbound = _pipelines(approach, model_rate)
    start = time.process_time()
    for frame in frames:
        inbound.convert(frame)
    for chunk in chunks:
        outbound.convert(chunk)
    return time.process_time() - start


# ---------------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------------

COLUMNS = [
    ("approach", 26),
    ("SNR rt 16k", 10),
    ("SNR rt 24k", 10),
    ("alias 16k>8k", 12),
    ("alias 24k>8k", 12),
    ("ripple", 7),
    ("delay in avg/max", 16),
    ("delay out avg/max", 17),
    ("bit-identical", 13),
    ("CPU 16k", 8),
    ("CPU 24k", 8),
]


def _row(approach: Approach, cpu: list[float]) -> list[str]:
    """All measurements for one approach (CPU measured beforehand, for all together), formatted."""
    inbound = streaming_delay(approach, 8000, 16000, [codec.FRAME_BYTES * 2])
    outbound = streaming_delay(approach, 16000, 8000, signals.outbound_chunk_sizes(16000))
    return [
        approach.name,
        *(f"{round_trip_snr(approach, rate):.1f} dB" for rate in MODEL_RATES),
        *(f"{alias_leakage(approach, rate):.1f} dB" for rate in MODEL_RATES),
        f"{passband_ripple(approach):.3f}",
        f"{inbound[0] * 1e3:.1f} / {inbound[1] * 1e3:.1f} ms",
        f"{outbound[0] * 1e3:.1f} / {outbound[1] * 1e3:.1f} ms",
        "yes" if chunking_identical(approach) else "no",
        *(f"{percent:.3f} %" for percent in cpu),
    ]


def _machine() -> str:
    """Platform, CPU model and versions, so numbers can be compared across machines."""
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = f"Python {platform.python_version()}, numpy {np.__version__}"
    try:
        import soxr

        versions += f", soxr {soxr.__version__}"
    except ImportError:
        pass
    load = f"load avg {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs" if hasattr(os, "getloadavg") else ""
    return f"{platform.platform()} | {cpu} | {load} | {versions}"


def main() -> int:
    """Measure every available approach and print the table."""
    print(_machine())
    print(
        "inbound: 8k->16k, 20 ms frames; outbound: 16k->8k, 40-100 ms chunks; "
        f"CPU: simulated {CALL_SECONDS} s call, both directions, median of {CPU_REPEATS}"
    )
    print("SNR: round trip 0-3.4 kHz; alias: worst 4.5-7 kHz tone into 0-4 kHz; ripple: dB spread 100-3400 Hz")
    print("delay: filter delay + audio held back between calls, avg/max over calls; CPU 24k: 8k<->24k instead")
    print()
    print(" | ".join(name.ljust(width) for name, width in COLUMNS))
    print("-+-".join("-" * width for _, width in COLUMNS))
    approaches = _approaches()
    cpu = list(zip(*(cpu_percents(approaches, rate) for rate in MODEL_RATES), strict=True))
    for approach, approach_cpu in zip(approaches, cpu, strict=True):
        cells = _row(approach, list(approach_cpu))
        print(" | ".join(cell.ljust(width) for cell, (_, width) in zip(cells, COLUMNS, strict=True)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

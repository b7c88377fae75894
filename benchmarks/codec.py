"""Compare telephony.codec with the usual alternatives on the numbers that matter for a phone call.

Run: ``uv run python benchmarks/codec.py``. Prints one table: ours, stateful ``audioop.ratecv`` (what most
samples do), soxr ``ResampleStream`` HQ, and pipecat's ``TwilioFrameSerializer``. Same signals and
measurements for all (benchmarks/signals.py, also used by tests/test_codec.py); only the CPU column is a
timing.

pipecat is never a dependency of the project: the script installs it into a throwaway virtual environment
(cached per pipecat and Python version under ~/.cache/voicebot-bench/pipecat-venv) and talks to
benchmarks/pipecat_probe.py running there. The probe only drives pipecat and returns its raw output; every
measurement is computed here by the same functions as for the other rows.
"""

from __future__ import annotations

import base64
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import numpy as np

try:
    from benchmarks import signals
except ImportError:  # run as a script without the editable install: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks import signals

from telephony import codec
from telephony.twilio import media_streams as protocol

MODEL_RATES = (16000, 24000)
ALIAS_TONES = range(4500, 7001, 250)
FLAT_TONES = (100, 200, 300, 500, 700, 1000, 1500, 2000, 2500, 3000, 3200, 3400)
CALL_SECONDS = 60
CPU_REPEATS = 9

PIPECAT_VERSION = "1.14.0"  # newest on PyPI when this was written; the venv is keyed by it
PIPECAT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "voicebot-bench" / "pipecat-venv"
PIPECAT_PROBE = Path(__file__).resolve().with_name("pipecat_probe.py")
PIPECAT_INSTALL_TIMEOUT_S = 200
PUSH_OUT_S = 0.3  # silence after a turn: pipecat's serializer never flushes its resampler
STREAM_SID = "MZ00000000000000000000000000000000"


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
# pipecat, in a throwaway environment of its own
# ---------------------------------------------------------------------------------------------------------


class PipecatUnavailable(RuntimeError):
    """pipecat could not be installed or run here; the text says why."""


def _venv_python(home: Path) -> Path:
    return home / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _run(command: list[str], what: str, timeout: float) -> None:
    """Run a set-up step; PipecatUnavailable with the most telling line of its output if it fails."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise PipecatUnavailable(f"{what} took more than {timeout:.0f} s") from None
    except OSError as error:
        raise PipecatUnavailable(f"{what}: {error}") from None
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("ERROR")] or lines or [f"exit status {done.returncode}"]
        offline = any("connection" in line.lower() for line in lines)
        raise PipecatUnavailable(f"{what} failed{' (no network?)' if offline else ''}: {errors[-1][:160]}")


def pipecat_python() -> Path:
    """The interpreter of a venv holding pipecat-ai==PIPECAT_VERSION, built on first use, reused after.

    Built beside the cache entry and renamed into place only once complete, so an interrupted install
    is never reused and two runs at once cannot corrupt each other.
    """
    key = f"pipecat-ai-{PIPECAT_VERSION}-py{sys.version_info.major}.{sys.version_info.minor}"
    home = PIPECAT_CACHE / key
    if (home / ".complete").is_file() and _venv_python(home).exists():
        return _venv_python(home)
    print(f"(installing pipecat-ai=={PIPECAT_VERSION} into {home}; first run only)", file=sys.stderr, flush=True)
    try:
        PIPECAT_CACHE.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=f"{key}.building-", dir=PIPECAT_CACHE))
    except OSError as error:
        raise PipecatUnavailable(f"cache directory: {error}") from None
    try:
        _run([sys.executable, "-m", "venv", str(building)], "python -m venv", timeout=120)
        pip = [str(_venv_python(building)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        _run(
            [*pip, "--retries", "1", "--timeout", "20", f"pipecat-ai=={PIPECAT_VERSION}"],
            f"pip install pipecat-ai=={PIPECAT_VERSION}",
            timeout=PIPECAT_INSTALL_TIMEOUT_S,
        )
        (building / ".complete").write_text(f"pipecat-ai=={PIPECAT_VERSION}\n", encoding="utf-8")
        if home.exists() and not (home / ".complete").is_file():
            shutil.rmtree(home, ignore_errors=True)  # a leftover that never completed
        try:
            building.rename(home)
        except OSError:
            if not (home / ".complete").is_file():  # not merely another run finishing first
                raise
    except OSError as error:
        raise PipecatUnavailable(f"building the venv: {error}") from None
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return _venv_python(home)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class PipecatProbe:
    """benchmarks/pipecat_probe.py running in the pipecat venv: one JSON request and answer per line."""

    def __init__(self, python: Path) -> None:
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self._process = subprocess.Popen(
            [str(python), str(PIPECAT_PROBE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
        )

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and wait for its answer; PipecatUnavailable if the probe fails."""
        assert self._process.stdin is not None and self._process.stdout is not None
        try:
            self._process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        except OSError:
            line = ""
        if not line:
            self._stderr.seek(0)
            lines = [text for text in self._stderr.read().splitlines() if text.strip()] or ["no output"]
            raise PipecatUnavailable(f"probe exited: {lines[-1][:160]}")
        answer = json.loads(line)
        if "error" in answer:
            raise PipecatUnavailable(f"probe {op}: {answer['error'][:160]}")
        return answer

    def close(self) -> None:
        """End the probe (closing its stdin ends its loop)."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._stderr.close()


class _Recording(_OddByteCarry):
    """Dry-run stand-in for pipecat's resampler: records what a measurement feeds it, answers with ours."""

    def __init__(self, sessions: list[_Recording], src: int, dst: int) -> None:
        super().__init__()
        self.rates = (src, dst)
        self.calls: list[bytes | None] = []  # None: flush
        self._stand_in = codec.Resampler(src, dst)
        sessions.append(self)

    def process(self, pcm16: bytes) -> bytes:
        whole = self._whole(pcm16)
        self.calls.append(whole)
        return self._stand_in.process(whole)

    def flush(self) -> bytes:
        self.calls.append(None)
        self._odd = b""
        return self._stand_in.flush()


class _Replay(_OddByteCarry):
    """pipecat's answers to a recorded session, handed out as the measurement makes the same calls again."""

    def __init__(self, recording: _Recording, outputs: list[str], src: int, dst: int) -> None:
        super().__init__()
        if recording.rates != (src, dst):
            raise RuntimeError("replay out of step with its dry run")
        self._calls = iter(zip(recording.calls, outputs, strict=True))

    def _next(self, call: bytes | None) -> bytes:
        recorded, output = next(self._calls)
        if call != recorded:
            raise RuntimeError("replay out of step with its dry run")
        return base64.b64decode(output)

    def process(self, pcm16: bytes) -> bytes:
        return self._next(self._whole(pcm16))

    def flush(self) -> bytes:
        self._odd = b""
        return self._next(None)


def on_pipecat_resampler[T](probe: PipecatProbe, measure: Callable[[Approach], T]) -> T:
    """Run a resampler measurement on the stream resampler pipecat's serializer uses.

    The measurement runs twice: a dry run records every call it makes (answered by our resampler so it
    can go on), the probe makes the same calls on pipecat's resampler in one batch, then the measurement
    runs again on pipecat's answers. This works because no measurement's input depends on its output;
    the replay checks that every call matches the dry run.
    """
    sessions: list[_Recording] = []
    measure(Approach("dry run", partial(_Recording, sessions), codec.pcm16_to_ulaw, codec.ulaw_to_pcm16))
    outputs = probe.ask(
        "resample",
        sessions=[
            {"src": s.rates[0], "dst": s.rates[1], "calls": [None if c is None else _b64(c) for c in s.calls]}
            for s in sessions
        ],
    )["outputs"]
    replies = iter(zip(sessions, outputs, strict=True))
    return measure(
        Approach(
            "pipecat", lambda src, dst: _Replay(*next(replies), src, dst), codec.pcm16_to_ulaw, codec.ulaw_to_pcm16
        )
    )


def twilio_media(index: int, payload: bytes) -> str:
    """Caller frame number `index` as Twilio sends it (numbers as strings, field order as on the wire)."""
    media = {"track": "inbound", "chunk": str(index + 1), "timestamp": str(20 * index), "payload": _b64(payload)}
    return json.dumps({"event": "media", "sequenceNumber": str(index + 2), "media": media, "streamSid": STREAM_SID})


def _sent_audio(text: str | None) -> bytes:
    """The μ-law in one message pipecat would send to Twilio, read with our own parser (None: nothing sent)."""
    if text is None:
        return b""
    message = protocol.parse_message(text)
    if not isinstance(message, protocol.Media) or message.stream_sid != STREAM_SID:
        raise PipecatUnavailable(f"serializer sent something other than media: {text[:80]}")
    return message.payload


def pipecat_round_trip(probe: PipecatProbe, model_rate: int) -> tuple[float, float]:
    """(SNR dB, seconds of the turn held back) for model speech -> serialize -> Twilio frames -> deserialize.

    Same chunking as round_trip_snr. The serializer has no end-of-turn flush, so PUSH_OUT_S of silence
    follows the turn in both directions to get its tail out for the SNR; what was still held back when the
    turn's last chunk had been serialized is returned separately.
    """
    speech = _speech(model_rate)
    sizes = signals.outbound_chunk_sizes(model_rate)
    turn = signals.chunked(speech.tobytes(), sizes)
    after = signals.chunked(bytes(2 * int(PUSH_OUT_S * model_rate)), sizes)
    texts = probe.ask("outbound", rate=model_rate, chunks=[_b64(chunk) for chunk in turn + after])["messages"]
    sent = [_sent_audio(text) for text in texts]
    held = speech.size / model_rate - sum(map(len, sent[: len(turn)])) / codec.TWILIO_RATE
    ulaw = b"".join(sent)
    ulaw += bytes([codec.ULAW_SILENCE]) * (-len(ulaw) % codec.FRAME_BYTES + int(PUSH_OUT_S * codec.TWILIO_RATE))
    frames = signals.chunked(ulaw, [codec.FRAME_BYTES])
    audio = probe.ask("inbound", rate=model_rate, messages=[twilio_media(i, f) for i, f in enumerate(frames)])["audio"]
    back = b"".join(base64.b64decode(piece) for piece in audio if piece)
    return signals.align(speech, _samples(back), model_rate)[1], held


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


def call_audio(model_rate: int) -> tuple[list[bytes], list[bytes]]:
    """One simulated call: the caller's 20 ms μ-law frames and the model's 40-100 ms PCM16 chunks."""
    repeat = -(-CALL_SECONDS // 3)
    speech = np.tile(_speech(model_rate), repeat)[: model_rate * CALL_SECONDS].tobytes()
    caller = np.tile(_speech(codec.TWILIO_RATE), repeat)[: codec.TWILIO_RATE * CALL_SECONDS].tobytes()
    frames = signals.chunked(codec.pcm16_to_ulaw(caller), [codec.FRAME_BYTES])
    chunks = signals.chunked(speech, signals.outbound_chunk_sizes(model_rate, count=997))
    return frames, chunks


def cpu_percents(timers: list[Callable[[], float]]) -> list[float]:
    """CPU % of one core per call (both directions) for each timer (CPU seconds of one simulated call).

    Median over repeated calls; the timers take turns within every repetition, so a busy machine slows
    them all alike.
    """
    times: list[list[float]] = [[] for _ in timers]
    for timer in timers:  # warm-up (caches, allocator, BLAS), not counted
        timer()
    for _ in range(CPU_REPEATS):
        for timer, spent in zip(timers, times, strict=True):
            spent.append(timer())
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


def _simulated_call_with_protocol(model_rate: int, messages: list[str], chunks: list[bytes]) -> float:
    """As _simulated_call for ours, plus the Twilio protocol the way the session and playback use it:
    every inbound message parsed, every outbound 20 ms frame built into its own media message."""
    inbound, outbound = codec.InboundAudio(model_rate), codec.OutboundAudio(model_rate)
    start = time.process_time()
    for text in messages:
        message = protocol.parse_message(text)
        if isinstance(message, protocol.Media):
            inbound.convert(message.payload)
    for chunk in chunks:
        ulaw = outbound.convert(chunk)
        for offset in range(0, len(ulaw), codec.FRAME_BYTES):
            protocol.media_message(STREAM_SID, ulaw[offset : offset + codec.FRAME_BYTES])
    return time.process_time() - start


# ---------------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------------

COLUMNS = [
    ("approach", 29),
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


def _resampler_cells(approach: Approach) -> list[str]:
    """The measurements of the resampler alone, formatted (bit-identity last: it may stop early)."""
    inbound = streaming_delay(approach, 8000, 16000, [codec.FRAME_BYTES * 2])
    outbound = streaming_delay(approach, 16000, 8000, signals.outbound_chunk_sizes(16000))
    return [
        *(f"{alias_leakage(approach, rate):.1f} dB" for rate in MODEL_RATES),
        f"{passband_ripple(approach):.3f}",
        f"{inbound[0] * 1e3:.1f} / {inbound[1] * 1e3:.1f} ms",
        f"{outbound[0] * 1e3:.1f} / {outbound[1] * 1e3:.1f} ms",
        "yes" if chunking_identical(approach) else "no",
    ]


def _cpu_cells(cpu: tuple[float, ...]) -> list[str]:
    return [f"{percent:.3f} %" for percent in cpu]


def _row(approach: Approach, cpu: tuple[float, ...]) -> list[str]:
    """All measurements for one approach (CPU measured beforehand, for all together), formatted."""
    snr = [f"{round_trip_snr(approach, rate):.1f} dB" for rate in MODEL_RATES]
    return [approach.name, *snr, *_resampler_cells(approach), *_cpu_cells(cpu)]


def _print_row(cells: list[str]) -> None:
    print(" | ".join(cell.ljust(width) for cell, (_, width) in zip(cells, COLUMNS, strict=True)), flush=True)


class Pipecat:
    """The pipecat side of a run: its probe while it works, or why it is not available."""

    def __init__(self) -> None:
        self.probe: PipecatProbe | None = None
        self.hello: dict[str, Any] = {}
        self.reason = ""
        try:
            self.probe = PipecatProbe(pipecat_python())
            self.hello = self.probe.ask("hello")
        except PipecatUnavailable as error:
            self.fail(error)
        except OSError as error:
            self.fail(PipecatUnavailable(f"starting the probe: {error}"))

    def fail(self, error: PipecatUnavailable) -> None:
        """Stop using pipecat for the rest of the run; its row says why."""
        self.reason = self.reason or str(error)
        if self.probe is not None:
            self.probe.close()
            self.probe = None

    def load_call(self, model_rate: int, messages: list[str], chunks: list[bytes]) -> None:
        if self.probe is not None:
            try:
                self.probe.ask("load_call", rate=model_rate, messages=messages, chunks=[_b64(c) for c in chunks])
            except PipecatUnavailable as error:
                self.fail(error)

    def time_call(self, model_rate: int) -> float:
        """CPU seconds of one simulated call in the probe (NaN once pipecat has failed)."""
        if self.probe is not None:
            try:
                return float(self.probe.ask("time_call", rate=model_rate)["seconds"])
            except PipecatUnavailable as error:
                self.fail(error)
        return float("nan")

    def row(self, cpu: tuple[float, ...]) -> tuple[list[str], list[float]]:
        """The formatted row and the seconds of each turn held back (PipecatUnavailable if it failed)."""
        if self.probe is None:
            raise PipecatUnavailable(self.reason)
        trips = [pipecat_round_trip(self.probe, rate) for rate in MODEL_RATES]
        cells = [
            "pipecat TwilioFrameSerializer",
            *(f"{snr:.1f} dB" for snr, _ in trips),
            *on_pipecat_resampler(self.probe, _resampler_cells),
            *_cpu_cells(cpu),
        ]
        return cells, [held for _, held in trips]

    def close(self) -> None:
        if self.probe is not None:
            self.probe.close()


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
    print(_machine(), flush=True)
    pipecat = Pipecat()
    try:
        _report(pipecat)
    finally:
        pipecat.close()
    return 0


def _report(pipecat: Pipecat) -> None:
    print(
        "inbound: 8k->16k, 20 ms frames; outbound: 16k->8k, 40-100 ms chunks; "
        f"CPU: simulated {CALL_SECONDS} s call, both directions, median of {CPU_REPEATS}"
    )
    print("SNR: round trip 0-3.4 kHz; alias: worst 4.5-7 kHz tone into 0-4 kHz; ripple: dB spread 100-3400 Hz")
    print("delay: filter delay + audio held back between calls, avg/max over calls; CPU 24k: 8k<->24k instead")
    print("CPU of the first rows: audio conversion only; of the '+ Twilio JSON' and pipecat rows: also the")
    print("Twilio messages (parse each inbound JSON + base64, build each outbound one), as in a real call")
    print()
    print(" | ".join(name.ljust(width) for name, width in COLUMNS))
    print("-+-".join("-" * width for _, width in COLUMNS))
    approaches = _approaches()
    per_rate = []
    for rate in MODEL_RATES:
        frames, chunks = call_audio(rate)
        messages = [twilio_media(index, frame) for index, frame in enumerate(frames)]
        pipecat.load_call(rate, messages, chunks)
        timers = [partial(_simulated_call, approach, rate, frames, chunks) for approach in approaches]
        timers.append(partial(_simulated_call_with_protocol, rate, messages, chunks))
        timers.append(partial(pipecat.time_call, rate))
        per_rate.append(cpu_percents(timers))
    cpu = list(zip(*per_rate, strict=True))
    for approach, approach_cpu in zip(approaches, cpu[: len(approaches)], strict=True):
        _print_row(_row(approach, approach_cpu))
    _print_row(["ours + Twilio JSON", *["= ours"] * (len(COLUMNS) - 3), *_cpu_cells(cpu[len(approaches)])])
    try:
        cells, held = pipecat.row(cpu[-1])
    except PipecatUnavailable as error:
        pipecat.fail(error)
        print(f"pipecat: not available ({pipecat.reason})")
        return
    _print_row(cells)
    versions = ", ".join(f"{name} {version}" for name, version in pipecat.hello["versions"].items())
    tails = " / ".join(
        f"{seconds * 1e3:.0f} ms ({rate // 1000}k)" for seconds, rate in zip(held, MODEL_RATES, strict=True)
    )
    print()
    print(f"pipecat: {versions}, Python {pipecat.hello['python']}, venv under {PIPECAT_CACHE}")
    print("  SNR and CPU: TwilioFrameSerializer (auto_hang_up off), deserialize() per inbound message and")
    print("  serialize() per outbound chunk; the other columns: the resampler it uses on its own,")
    print(f"  {pipecat.hello['resampler']}")
    print(f"  no end-of-turn flush: the last {tails} of the turn stayed in that resampler; it goes out")
    print("  only if more audio follows within clear_after_secs, else it is dropped. SNR was measured with")
    print(f"  {PUSH_OUT_S:g} s of silence after the turn to push it out")


if __name__ == "__main__":
    sys.exit(main())

"""telephony.codec: G.711 exactness, resampler quality, and the streaming contract of both directions.

Quality is checked as deterministic signal computations (no timing): see benchmarks/signals.py.
"""

from __future__ import annotations

import math
import sys
import warnings
from functools import cache
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

try:
    from benchmarks import signals
except ImportError:  # not installed in editable mode: the helpers live next to the benchmark
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks import signals

from telephony.codec import (
    FRAME_BYTES,
    TWILIO_RATE,
    InboundAudio,
    OutboundAudio,
    Resampler,
    pcm16_to_ulaw,
    ulaw_to_pcm16,
)

RATE_PAIRS = [(8000, 16000), (16000, 8000), (8000, 24000), (24000, 8000), (16000, 24000), (24000, 16000)]
TELEPHONE_PAIRS = RATE_PAIRS[:4]
ODD_PIECES = [1, 3, 77, 333]
ALL_PCM16 = np.arange(-32768, 32768, dtype=np.int16)


def _audioop() -> ModuleType:
    """audioop (deprecated in 3.12, gone in 3.13 unless audioop-lts is installed) as an oracle."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return pytest.importorskip("audioop")


@cache
def _speech(rate: int) -> bytes:
    return signals.speech_like(rate).tobytes()


def _samples(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<i2")


# ---------------------------------------------------------------------------------------------------------
# G.711 μ-law
# ---------------------------------------------------------------------------------------------------------


def _reference_encode(sample: int) -> int:
    """G.711 μ-law, one sample at a time: 14-bit magnitude + bias, segment = position of the top bit."""
    value = sample >> 2  # 16-bit PCM to G.711's 14-bit linear range (arithmetic shift, as audioop does)
    sign = 0x80 if value < 0 else 0x00
    biased = min(abs(value), 8159) + 33
    if biased >= 0x2000:
        exponent, mantissa = 7, 0x0F
    else:
        exponent = max(0, biased.bit_length() - 6)
        mantissa = (biased >> (exponent + 1)) & 0x0F
    return ~(sign | (exponent << 4) | mantissa) & 0xFF


def _reference_decode(code: int) -> int:
    """G.711 μ-law expansion to the 14-bit value, scaled to 16 bits."""
    code = ~code & 0xFF
    exponent, mantissa = (code >> 4) & 0x07, code & 0x0F
    magnitude = (((2 * mantissa + 33) << exponent) - 33) * 4
    return -magnitude if code & 0x80 else magnitude


def test_ulaw_decode_matches_reference_for_every_code() -> None:
    expected = [_reference_decode(code) for code in range(256)]
    assert _samples(ulaw_to_pcm16(bytes(range(256)))).tolist() == expected


def test_ulaw_encode_matches_reference_for_every_sample() -> None:
    expected = bytes(_reference_encode(int(sample)) for sample in ALL_PCM16)
    assert pcm16_to_ulaw(ALL_PCM16.tobytes()) == expected


def test_ulaw_matches_audioop_bit_for_bit() -> None:
    audioop = _audioop()
    assert ulaw_to_pcm16(bytes(range(256))) == audioop.ulaw2lin(bytes(range(256)), 2)
    assert pcm16_to_ulaw(ALL_PCM16.tobytes()) == audioop.lin2ulaw(ALL_PCM16.tobytes(), 2)


def test_ulaw_round_trip_keeps_every_code_but_negative_zero() -> None:
    codes = bytes(range(256))
    again = pcm16_to_ulaw(ulaw_to_pcm16(codes))
    assert [c for c, d in zip(codes, again, strict=True) if c != d] == [0x7F]  # -0 and +0 both decode to 0 -> 0xFF


def test_ulaw_silence_and_empty_input() -> None:
    assert ulaw_to_pcm16(b"\xff") == b"\x00\x00"
    assert pcm16_to_ulaw(b"\x00\x00") == b"\xff"
    assert ulaw_to_pcm16(b"") == b"" and pcm16_to_ulaw(b"") == b""


# ---------------------------------------------------------------------------------------------------------
# Resampler: streaming behaviour
# ---------------------------------------------------------------------------------------------------------


def _run(resampler: Resampler, pieces: list[bytes]) -> bytes:
    return b"".join(resampler.process(piece) for piece in pieces) + resampler.flush()


@pytest.mark.parametrize(("src", "dst"), RATE_PAIRS)
def test_output_is_bit_identical_however_the_input_is_chunked(src: int, dst: int) -> None:
    data = _speech(src)[: src * 2]  # one second
    resampler = Resampler(src, dst)
    whole = _run(resampler, [data])
    assert _run(resampler, signals.chunked(data, [src // 50 * 2])) == whole  # 20 ms pieces
    assert _run(resampler, signals.chunked(data, ODD_PIECES)) == whole
    assert _run(resampler, signals.chunked(data, [1, 2, 3, 5, 8, 13, 4096, 1])) == whole
    assert _run(resampler, signals.chunked(data, [7919])) == whole  # pieces much larger than 20 ms


@pytest.mark.parametrize(("src", "dst"), RATE_PAIRS)
def test_flush_emits_the_filter_tail_then_starts_over(src: int, dst: int) -> None:
    data = _speech(src)[: src // 5 * 2]  # 100 ms
    resampler = Resampler(src, dst)
    body = resampler.process(data)
    tail = resampler.flush()
    n_in = len(data) // 2
    expected = math.ceil(n_in * dst / src + resampler.delay * dst - 1e-9)
    assert (len(body) + len(tail)) // 2 == expected
    assert resampler.process(data) + resampler.flush() == body + tail
    assert resampler.flush() == b""


@pytest.mark.parametrize(("src", "dst"), RATE_PAIRS)
def test_reset_forgets_everything(src: int, dst: int) -> None:
    data = _speech(src)[: src // 10 * 2]
    fresh = _run(Resampler(src, dst), [data])
    used = Resampler(src, dst)
    used.process(_speech(src)[1:3001])  # leaves history and an odd byte behind
    used.reset()
    assert _run(used, [data]) == fresh


def test_odd_byte_is_carried_to_the_next_call() -> None:
    data = _speech(8000)[:3200]
    whole = _run(Resampler(8000, 16000), [data])
    resampler = Resampler(8000, 16000)
    assert resampler.process(data[:1]) == b""
    first = resampler.process(data[1:4])  # the carried byte and these three make two samples
    assert len(first) == 2 * 2 * 2
    assert first + resampler.process(data[4:]) + resampler.flush() == whole


def test_equal_rates_pass_audio_through_untouched() -> None:
    resampler = Resampler(16000, 16000)
    assert resampler.process(b"\x01\x02\x03") == b"\x01\x02"
    assert resampler.process(b"\x04") == b"\x03\x04"
    assert resampler.flush() == b""
    assert resampler.delay == 0.0


@pytest.mark.parametrize(("src", "dst"), [(0, 8000), (8000, -1), (8000.5, 16000)])
def test_invalid_rates_are_rejected(src: float, dst: int) -> None:
    with pytest.raises(ValueError):
        Resampler(src, dst)  # type: ignore[arg-type]


@pytest.mark.parametrize(("src", "dst"), RATE_PAIRS)
def test_constant_input_gives_exactly_constant_output(src: int, dst: int) -> None:
    out = _samples(Resampler(src, dst).process(np.full(src // 10, -12345, dtype="<i2").tobytes()))
    assert set(out[len(out) // 2 :].tolist()) == {-12345}


def test_full_scale_overshoot_is_clipped_not_wrapped() -> None:
    square = np.where(np.arange(1600) // 40 % 2 == 0, 32767, -32768).astype("<i2")  # 100 Hz, full scale
    out = _samples(Resampler(8000, 16000).process(square.tobytes()))[1600:]
    assert out.max() == 32767 and out.min() == -32768  # the filter's overshoot was clipped
    crossings = np.count_nonzero(np.diff(out >= 0))
    assert crossings == 20  # one per edge: a wrapped overshoot would add a crossing at every peak


# ---------------------------------------------------------------------------------------------------------
# Resampler: quality
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("src", "dst"), TELEPHONE_PAIRS)
def test_passband_is_flat_from_100_hz_to_3400_hz(src: int, dst: int) -> None:
    gains = []
    for freq in [100, 200, 300, 500, 700, 1000, 1500, 2000, 2500, 3000, 3200, 3400]:
        out = _samples(Resampler(src, dst).process(signals.tone(src, freq, 0.3).tobytes()))
        gains.append(signals.tone_gain_db(out, dst, freq))
    assert max(gains) - min(gains) <= 0.5
    assert max(abs(g) for g in gains) <= 0.25


@pytest.mark.parametrize("src", [16000, 24000])
def test_tones_above_the_telephone_band_do_not_alias_into_it(src: int) -> None:
    for freq in range(4500, 7001, 250):
        out = _samples(Resampler(src, TWILIO_RATE).process(signals.tone(src, freq, 0.3).tobytes()))
        assert signals.leakage_db(out, TWILIO_RATE) <= -75.0, freq


@pytest.mark.parametrize(("src", "dst"), RATE_PAIRS)
def test_added_delay_is_at_most_5_ms(src: int, dst: int) -> None:
    resampler = Resampler(src, dst)
    pulse = np.round(signals.gaussian_pulse(src)).astype("<i2")
    out = _samples(resampler.process(pulse.tobytes()) + resampler.flush())
    delay, _ = signals.align(signals.gaussian_pulse(dst), out, dst, high_hz=0.45 * min(src, dst), trim_s=0.0)
    assert delay / dst <= 0.005
    assert delay / dst == pytest.approx(resampler.delay, abs=5e-5)


# ---------------------------------------------------------------------------------------------------------
# InboundAudio / OutboundAudio
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model_rate", [16000, 24000])
def test_round_trip_speech_snr_is_at_the_g711_ceiling(model_rate: int) -> None:
    speech = _speech(model_rate)
    outbound, inbound = OutboundAudio(model_rate), InboundAudio(model_rate)
    pieces = signals.chunked(speech, signals.outbound_chunk_sizes(model_rate))
    ulaw = b"".join(outbound.convert(piece) for piece in pieces) + outbound.flush()
    back = b"".join(inbound.convert(frame) for frame in signals.chunked(ulaw, [FRAME_BYTES]))
    delay, snr = signals.align(np.frombuffer(speech, "<i2"), _samples(back), model_rate)
    assert snr >= 37.0
    assert delay / model_rate <= 2 * 0.005


@pytest.mark.parametrize("model_rate", [8000, 16000, 24000])
def test_inbound_frames_map_to_a_fixed_number_of_samples(model_rate: int) -> None:
    inbound = InboundAudio(model_rate)
    assert inbound.model_rate == model_rate
    ulaw = pcm16_to_ulaw(_speech(8000)[:3200])
    sizes = {len(inbound.convert(frame)) for frame in signals.chunked(ulaw, [FRAME_BYTES])}
    assert sizes == {FRAME_BYTES * 2 * model_rate // TWILIO_RATE}


def test_inbound_at_8_khz_is_plain_decoding() -> None:
    ulaw = bytes(range(256))
    assert InboundAudio(8000).convert(ulaw) == ulaw_to_pcm16(ulaw)


def test_inbound_reset_forgets_history() -> None:
    ulaw = pcm16_to_ulaw(_speech(8000)[:3200])
    inbound = InboundAudio(16000)
    first = inbound.convert(ulaw)
    inbound.reset()
    assert inbound.convert(ulaw) == first


@pytest.mark.parametrize("model_rate", [8000, 16000, 24000])
def test_outbound_returns_whole_frames_and_flush_pads_with_silence(model_rate: int) -> None:
    outbound = OutboundAudio(model_rate)
    assert outbound.model_rate == model_rate
    data = _speech(model_rate)[: model_rate // 4 * 2 + 1]  # 250 ms and an odd byte
    out = [outbound.convert(piece) for piece in signals.chunked(data, [*ODD_PIECES, 1999])]
    tail = outbound.flush()
    assert all(len(chunk) % FRAME_BYTES == 0 for chunk in out)
    assert len(tail) % FRAME_BYTES == 0 and 0 < len(tail) <= 2 * FRAME_BYTES
    reference = Resampler(model_rate, TWILIO_RATE)
    expected = pcm16_to_ulaw(reference.process(data) + reference.flush())
    expected += b"\xff" * (-len(expected) % FRAME_BYTES)
    assert b"".join(out) + tail == expected
    assert outbound.flush() == b""


def test_outbound_flush_with_nothing_pending_is_empty() -> None:
    assert OutboundAudio(16000).flush() == b""
    outbound = OutboundAudio(16000)
    outbound.convert(np.zeros(320, "<i2").tobytes())  # exactly one frame out, nothing left but the tail
    assert len(outbound.flush()) == FRAME_BYTES


def test_outbound_at_8_khz_is_plain_encoding() -> None:
    data = _speech(8000)[:3200]
    outbound = OutboundAudio(8000)
    assert outbound.convert(data) + outbound.flush() == pcm16_to_ulaw(data)


@pytest.mark.parametrize("model_rate", [16000, 24000])
def test_outbound_reset_drops_stale_audio(model_rate: int) -> None:
    loud = signals.tone(model_rate, 1000.0, 0.03, amplitude=0.9).tobytes()  # 30 ms: leaves a remainder
    silence = np.zeros(model_rate // 10, "<i2").tobytes()

    stale = OutboundAudio(model_rate)
    stale.convert(loud)
    assert set(stale.convert(silence) + stale.flush()) != {0xFF}  # without reset the tone would leak

    outbound = OutboundAudio(model_rate)
    outbound.convert(loud)
    outbound.reset()
    assert outbound.flush() == b""
    outbound.convert(loud)
    outbound.reset()
    assert set(outbound.convert(silence) + outbound.flush()) == {0xFF}


def test_the_shipped_hold_sound_is_what_its_recipe_makes() -> None:
    from telephony.bridge.hold_sound import SHIPPED

    from .data.make_hold_sound import hold_sound

    assert SHIPPED.read_bytes() == hold_sound()


def test_a_hold_sound_file_is_read_from_wav_or_raw_ulaw_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    import wave

    from telephony.codec import SoundFileError, load_sound_file
    from telephony.config import ConfigError, load_settings

    path = tmp_path / "tick.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1), wav.setsampwidth(2), wav.setframerate(16000)
        wav.writeframes(b"\x00\x10" * 16000)  # one second at 16 kHz
    ulaw = load_sound_file(path)
    assert 8000 <= len(ulaw) < 8400 and len(ulaw) % 160 == 0  # one second of 8 kHz μ-law (and the filter's tail)
    raw = tmp_path / "tick.ulaw"
    raw.write_bytes(b"\x7f" * 330)
    assert len(load_sound_file(raw)) == 320  # whole 20 ms frames
    stereo = tmp_path / "stereo.wav"
    with wave.open(str(stereo), "wb") as wav:
        wav.setnchannels(2), wav.setsampwidth(2), wav.setframerate(8000)
        wav.writeframes(b"\x00\x10" * 1600)
    with pytest.raises(SoundFileError, match="mono 16-bit"):
        load_sound_file(stereo)
    with pytest.raises(ConfigError, match=r"VOICEBOT_HOLD_SOUND.*cannot read"):
        load_settings({"VOICEBOT_HOLD_SOUND": str(tmp_path / "missing.wav")}, dotenv=None)

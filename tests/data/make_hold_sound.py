"""Makes ``telephony/bridge/assets/hold.ulaw``: the soft sound a caller hears while a tool runs.

Two quiet, quickly fading notes (a rising third, like a soft marimba) every 1.5 s, then silence, so that the
clip loops without a seam and never sounds like speech to a model's voice detector. Peak about -22 dBFS, mean
level far lower: a caller hears that the line is alive, not music on hold. ``tests/test_codec.py`` checks that
the shipped file is what this makes.

    uv run python tests/data/make_hold_sound.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from telephony.codec import TWILIO_RATE, pcm16_to_ulaw

TARGET = Path(__file__).resolve().parents[2] / "telephony" / "bridge" / "assets" / "hold.ulaw"
LOOP_S = 1.5
NOTES = ((0.0, 523.25), (0.22, 659.25))
"""(start in seconds, pitch in Hz): C5 then E5."""
PEAK_DBFS = -22.0
DECAY_S = 0.09


def hold_sound() -> bytes:
    t = np.arange(round(LOOP_S * TWILIO_RATE)) / TWILIO_RATE
    wave = np.zeros_like(t)
    for start, hz in NOTES:
        local = t - start
        on = local >= 0
        attack = np.clip(local / 0.004, 0.0, 1.0)  # 4 ms: no click at the onset
        envelope = np.where(on, attack * np.exp(-np.maximum(local, 0) / DECAY_S), 0.0)
        tone = np.sin(2 * np.pi * hz * local) + 0.25 * np.sin(2 * np.pi * 2 * hz * local)
        wave += envelope * tone
    wave *= 10 ** (PEAK_DBFS / 20) / np.max(np.abs(wave))
    pcm = np.round(wave * 32767).astype("<i2").tobytes()
    return pcm16_to_ulaw(pcm)


if __name__ == "__main__":
    TARGET.write_bytes(hold_sound())
    print(f"wrote {TARGET} ({len(hold_sound())} bytes)")

"""Regenerates the recorded Twilio message sequences in this folder (run from the repo root).

The sequences follow what Twilio really sends: ``connected`` (no streamSid), ``start`` with
sequenceNumber "1", media every 20 ms with string scalars and first timestamp ~120 ms, a keypress,
``stop``. The caller's voice is a tone so the files stay small and deterministic.
"""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path

import numpy as np

from telephony.codec import pcm16_to_ulaw

HERE = Path(__file__).parent
STREAM = "MZ" + "a" * 32
CALL = "CA" + "b" * 32
ACCOUNT = "AC" + "c" * 32


def tone_ulaw(seconds: float, hz: float) -> bytes:
    n = int(seconds * 8000)
    wave = 0.25 * 32767 * np.sin(2 * math.pi * hz * np.arange(n) / 8000)
    return pcm16_to_ulaw(wave.astype("<i2").tobytes())


def inbound_call_with_keypress() -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [
        {"event": "connected", "protocol": "Call", "version": "1.0.0"},
        {
            "event": "start",
            "sequenceNumber": "1",
            "start": {
                "accountSid": ACCOUNT,
                "streamSid": STREAM,
                "callSid": CALL,
                "tracks": ["inbound"],
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
            },
            "streamSid": STREAM,
        },
    ]
    sequence, chunk, timestamp = 1, 0, 120
    audio = tone_ulaw(1.0, 500) + b"\xff" * 4000
    for offset in range(0, len(audio), 160):
        sequence += 1
        chunk += 1
        messages.append(
            {
                "event": "media",
                "sequenceNumber": str(sequence),
                "media": {
                    "track": "inbound",
                    "chunk": str(chunk),
                    "timestamp": str(timestamp),
                    "payload": base64.b64encode(audio[offset : offset + 160]).decode(),
                },
                "streamSid": STREAM,
            }
        )
        timestamp += 20
        if chunk == 50:
            sequence += 1
            messages.append(
                {
                    "event": "dtmf",
                    "streamSid": STREAM,
                    "sequenceNumber": str(sequence),
                    "dtmf": {"track": "inbound_track", "digit": "5"},
                }
            )
    messages.append(
        {
            "event": "stop",
            "sequenceNumber": str(sequence + 1),
            "streamSid": STREAM,
            "stop": {"accountSid": ACCOUNT, "callSid": CALL},
        }
    )
    return messages


if __name__ == "__main__":
    lines = [json.dumps(message) for message in inbound_call_with_keypress()]
    (HERE / "inbound_call_with_keypress.jsonl").write_text("\n".join(lines) + "\n")

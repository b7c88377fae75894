"""What recording a long call costs in memory: a synthetic call fed through the recorder's audio and transcript.

Every 20 ms the caller sends a frame (with Twilio's timestamp, a little jitter); the bot talks in 4 s turns,
sent in bursts faster than real time as models do, and every third turn is cut by a ``clear``. The
records go through ``TranscriptBuilder`` exactly as the recorder's writer thread feeds it, then the WAVs
and the transcript are rendered. Python's allocations are traced (numpy's included).

    uv run python benchmarks/recorder_memory.py [--minutes 10 60]
"""

from __future__ import annotations

import argparse
import base64
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from telephony.recording.call_audio import CallAudio
from telephony.recording.transcript import TranscriptBuilder

FRAME = base64.b64encode(bytes(range(0, 160))).decode()


def records(minutes: float):
    """The call's records in time order (the same stream every run)."""
    frames = round(minutes * 60 / 0.02)
    turn = 0
    for index in range(frames):
        at = index * 0.02
        jitter = (index * 7919 % 13) / 1000
        media = {"track": "inbound", "timestamp": str(index * 20), "payload": FRAME}
        yield {"t": at + 0.03 + jitter, "kind": "twilio_in", "message": {"event": "media", "media": media}}
        if index % 400 == 0:  # every 8 s the bot answers: 4 s of audio, sent 4x faster than real time
            turn += 1
            yield {"t": at, "kind": "agent", "event": {"type": "bidi_response_start"}}
        if index % 400 < 50:
            for burst in range(4):
                message = {"event": "media", "streamSid": "MZ", "media": {"payload": FRAME}}
                yield {"t": at + burst * 0.005, "kind": "twilio_out", "message": message}
        if turn % 3 == 0 and index % 400 == 150:
            yield {"t": at, "kind": "twilio_out", "message": {"event": "clear", "streamSid": "MZ"}}


def measure(minutes: float) -> None:
    with tempfile.TemporaryDirectory(prefix="voicebot-recorder-bench-") as folder:
        tracemalloc.start()
        began = time.perf_counter()
        builder = TranscriptBuilder(CallAudio(Path(folder)))
        for record in records(minutes):
            builder.add(record)
        fed_s = time.perf_counter() - began
        _, collecting = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        began = time.perf_counter()
        builder.audio.write(Path(folder))
        builder.build({"call": {"call_sid": "CA0"}}, None)
        render_s = time.perf_counter() - began
        _, rendering = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        builder.audio.close()
        wav_mb = sum(path.stat().st_size for path in Path(folder).glob("*.wav")) / 1e6
    print(
        f"{minutes:g} min call: peak Python memory {collecting / 1e6:.1f} MB while recording, "
        f"{rendering / 1e6:.1f} MB while rendering; feeding {fed_s:.1f} s, rendering {render_s:.1f} s; "
        f"WAVs {wav_mb:.0f} MB on disk"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, nargs="+", default=[10.0, 60.0])
    for minutes in parser.parse_args().minutes:
        measure(minutes)


if __name__ == "__main__":
    main()

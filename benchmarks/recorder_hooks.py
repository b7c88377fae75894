"""What a recording hook costs the call: the bridge calls one per Twilio message, on the event loop.

The hooks only timestamp and enqueue (the writer thread parses and writes), so each should take a few
microseconds. Printed, not asserted: a figure on a loaded machine says little about the code (this was a
test's threshold once; under parallel test runs it measured the machine instead).

    uv run python benchmarks/recorder_hooks.py [--calls 50000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from telephony.call_info import CallInfo
from telephony.recording.recorder import CallRecorder

CALL = CallInfo(call_sid="CA" + "1" * 32, stream_sid="MZ" + "2" * 32)
MEDIA = json.dumps({"event": "media", "media": {"payload": "/" * 216}})
"""A Twilio media message of one 20 ms frame (160 bytes of μ-law, base64)."""


def per_hook_s(calls: int) -> float:
    """Seconds per ``twilio_received`` call, its writer thread not started (the queue only fills)."""
    recorder = CallRecorder(CALL, Path("/nonexistent"), max_queued=calls + 1)
    started = time.perf_counter()
    for _ in range(calls):
        recorder.twilio_received(MEDIA)
    return (time.perf_counter() - started) / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50_000, help="hook calls per run")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    figures = [per_hook_s(args.calls) * 1e6 for _ in range(args.runs)]
    print(f"recorder hook (twilio_received), {args.calls} calls x {args.runs} runs:")
    print(f"  median {statistics.median(figures):.2f} µs, best {min(figures):.2f} µs, worst {max(figures):.2f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

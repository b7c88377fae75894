"""Run the local Nova in its own process (for benchmarks): ``python -m telephony.simulation.local_nova``.

It prints ``LOCAL_NOVA_ENDPOINT=https://127.0.0.1:PORT`` once listening, writes the CA to ``--ca-out``,
and answers every caller turn and text input with a short tone (``--goodbye-hz``: a turn at that pitch
gets a goodbye and ``end_conversation``; ``--offline``: the front-desk script, heard and spoken for real)
until SIGINT/SIGTERM.
Clients need ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` = that endpoint and ``AWS_CA_BUNDLE`` = the CA file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from pathlib import Path

import numpy as np

from .faults import TimeLimits
from .process import serve_until_signalled
from .replies import Brain, PitchBrain, Reply, ScriptedBrain, Tone, goodbye_reply
from .server import LocalNova
from .turns import Pacing


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m telephony.simulation.local_nova", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--ca-out", type=Path, required=True, help="where to write the CA certificate (PEM)")
    parser.add_argument("--reply-s", type=float, default=1.0, help="length of each spoken reply")
    parser.add_argument("--speedup", type=float, default=4.0, help="how much faster than real time audio streams")
    parser.add_argument("--time-scale", type=float, default=1.0, help="multiplies the 480 s / 175 s limits")
    parser.add_argument("--offline", action="store_true", help="hear and speak the front-desk script (OfflineBrain)")
    parser.add_argument(
        "--goodbye-hz",
        type=float,
        help="a caller turn at this pitch gets a goodbye and end_conversation (PitchBrain); other turns the tone",
    )
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument(
        "--arrivals-out",
        type=Path,
        help="at exit, write one JSON line per stream: its caller audio's sample rate and arrival times (benchmarks)",
    )
    return parser.parse_args()


async def _serve(arguments: argparse.Namespace) -> None:
    default = Reply(text="This is the local Nova.", audio=Tone(arguments.reply_s))
    brain: Brain = ScriptedBrain(default=default)
    if arguments.goodbye_hz:
        brain = PitchBrain({arguments.goodbye_hz: goodbye_reply()}, default)
    if arguments.offline:
        from .offline_replies import OfflineBrain

        brain = OfflineBrain()
    nova = LocalNova(
        brain,
        limits=TimeLimits(time_scale=arguments.time_scale),
        pacing=Pacing(speedup=arguments.speedup),
        port=arguments.port,
    )
    await serve_until_signalled(
        nova,
        arguments.ca_out,
        lambda: {"LOCAL_NOVA_ENDPOINT": nova.endpoint},
        "local nova stopping: %d streams, %d violations",
        logging.getLogger(__name__),
    )
    if arguments.arrivals_out is not None:
        with arguments.arrivals_out.open("w", encoding="utf-8") as out:
            for record in nova.sessions:
                line = {"rate": record.caller_sample_rate, "arrivals": record.audio_arrivals}
                out.write(json.dumps({**line, **first_tones(bytes(record.caller_audio), record.caller_sample_rate)}))
                out.write("\n")


def first_tones(pcm: bytes, rate: int | None, most: int = 4) -> dict[str, list[tuple[float, float]]]:
    """The first few sounds the caller made after a pause: (start in seconds into the stream, pitch in Hz).

    Benchmarks give each caller a pitch of its own, and tell its stream by it."""
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float64)
    loud = np.flatnonzero(np.abs(samples) > 2000)
    if rate is None or not len(loud):
        return {}
    starts = [int(loud[0])] + [int(loud[i + 1]) for i in np.flatnonzero(np.diff(loud) > rate * 0.3)[: most - 1]]
    tones = []
    for start in starts:
        tone = samples[start + rate // 20 : start + rate // 20 + rate // 2]  # 0.5 s, past the onset's ramp
        if len(tone) < rate // 4:
            continue
        spectrum = np.abs(np.fft.rfft(tone * np.hanning(len(tone))))
        tones.append((start / rate, float(np.fft.rfftfreq(len(tone), 1 / rate)[int(np.argmax(spectrum))])))
    return {"tones": tones}


def main() -> None:
    arguments = _arguments()
    logging.basicConfig(level=arguments.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    asyncio.run(_serve(arguments))


if __name__ == "__main__":
    main()

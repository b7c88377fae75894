"""Run the local Gemini Live in its own process (for benchmarks): ``python -m telephony.simulation.local_gemini``.

It prints ``LOCAL_GEMINI_BASE_URL=https://127.0.0.1:PORT`` once listening, writes the CA to ``--ca-out``, and answers
every caller turn and text input with a short tone (``--goodbye-hz``: a turn at that pitch gets a goodbye and
``end_conversation``) until SIGINT/SIGTERM. Clients need ``GOOGLE_GEMINI_BASE_URL`` = that URL,
``SSL_CERT_FILE`` = the CA file and any ``GOOGLE_API_KEY``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from telephony.simulation.local_nova.process import serve_until_signalled
from telephony.simulation.local_nova.replies import Brain, PitchBrain, Reply, ScriptedBrain, Tone, goodbye_reply

from .faults import TimeLimits
from .server import LocalGemini
from .turns import Pacing


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m telephony.simulation.local_gemini", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--ca-out", type=Path, required=True, help="where to write the CA certificate (PEM)")
    parser.add_argument("--reply-s", type=float, default=1.0, help="length of each spoken reply")
    parser.add_argument("--speedup", type=float, default=4.0, help="how much faster than real time audio streams")
    parser.add_argument("--time-scale", type=float, default=1.0, help="multiplies the 600 s connection limit")
    parser.add_argument(
        "--goodbye-hz",
        type=float,
        help="a caller turn at this pitch gets a goodbye and end_conversation (PitchBrain); other turns the tone",
    )
    parser.add_argument("--log-level", default="INFO")
    return parser.parse_args()


async def _serve(arguments: argparse.Namespace) -> None:
    default = Reply(text="This is the local Gemini.", audio=Tone(arguments.reply_s))
    brain: Brain = ScriptedBrain(default=default)
    if arguments.goodbye_hz:
        brain = PitchBrain({arguments.goodbye_hz: goodbye_reply()}, default)
    gemini = LocalGemini(
        brain,
        limits=TimeLimits(time_scale=arguments.time_scale),
        pacing=Pacing(speedup=arguments.speedup),
        port=arguments.port,
    )
    await serve_until_signalled(
        gemini,
        arguments.ca_out,
        lambda: {"LOCAL_GEMINI_BASE_URL": gemini.base_url},
        "local gemini stopping: %d connections, %d violations",
        logging.getLogger(__name__),
    )


def main() -> None:
    arguments = _arguments()
    logging.basicConfig(level=arguments.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    asyncio.run(_serve(arguments))


if __name__ == "__main__":
    main()

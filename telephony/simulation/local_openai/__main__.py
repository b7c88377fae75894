"""Run the local OpenAI Realtime in its own process (for benchmarks): ``python -m telephony.simulation.local_openai``.

It prints ``LOCAL_OPENAI_BASE_URL=http://127.0.0.1:PORT/v1`` (``https`` with ``--tls``, the CA written to
``--ca-out``) and ``LOCAL_OPENAI_API_KEY=...`` once listening, and answers every caller turn and text input with a
short tone (``--goodbye-hz``: a turn at that pitch gets a goodbye and ``end_conversation``) until SIGINT/SIGTERM.
Clients need ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` = those (and ``SSL_CERT_FILE`` = the CA with ``--tls``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from telephony.simulation.local_nova import Pacing, Reply, ScriptedBrain, Tone
from telephony.simulation.local_nova.process import serve_until_signalled
from telephony.simulation.local_nova.replies import Brain, PitchBrain, goodbye_reply

from .faults import SessionLimits
from .server import LocalOpenAI


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m telephony.simulation.local_openai", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--tls", action="store_true", help="serve wss:// with a throwaway CA (see --ca-out)")
    parser.add_argument("--ca-out", type=Path, help="where to write the CA certificate (PEM), with --tls")
    parser.add_argument("--reply-s", type=float, default=1.0, help="length of each spoken reply")
    parser.add_argument("--speedup", type=float, default=4.0, help="how much faster than real time audio is made")
    parser.add_argument("--session-limit-s", type=float, default=3600.0, help="when a session expires")
    parser.add_argument(
        "--goodbye-hz",
        type=float,
        help="a caller turn at this pitch gets a goodbye and end_conversation (PitchBrain); other turns the tone",
    )
    parser.add_argument("--log-level", default="INFO")
    arguments = parser.parse_args()
    if arguments.tls and arguments.ca_out is None:
        parser.error("--tls needs --ca-out")
    return arguments


async def _serve(arguments: argparse.Namespace) -> None:
    default = Reply(text="This is the local OpenAI.", audio=Tone(arguments.reply_s))
    brain: Brain = ScriptedBrain(default=default)
    if arguments.goodbye_hz:
        brain = PitchBrain({arguments.goodbye_hz: goodbye_reply()}, default)
    server = LocalOpenAI(
        brain,
        limits=SessionLimits(arguments.session_limit_s),
        pacing=Pacing(speedup=arguments.speedup),
        tls=arguments.tls,
        port=arguments.port,
    )
    await serve_until_signalled(
        server,
        arguments.ca_out,
        lambda: {"LOCAL_OPENAI_BASE_URL": server.base_url, "LOCAL_OPENAI_API_KEY": server.api_key},
        "local openai stopping: %d sessions, %d violations",
        logging.getLogger(__name__),
    )


def main() -> None:
    arguments = _arguments()
    logging.basicConfig(level=arguments.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    asyncio.run(_serve(arguments))


if __name__ == "__main__":
    main()

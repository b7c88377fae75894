"""``voicebot replay``'s command line: its arguments, its run, and the printed result."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import TextIO

from telephony.config import Settings
from telephony.recording.format import EVENTS_FILE, RecordingError
from telephony.simulation.caller.simulated_caller import AnswerError
from telephony.simulation.replay.replaying import ReplayOptions, ReplayResult, replay


def print_result(result: ReplayResult, source: Path, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    print(f"replay of {source}", file=out)
    for line in result.report.summary():
        print(f"  {line}", file=out)
    end = result.recording.end if result.recording is not None else None
    if end is not None:
        print(f"  recorded call: hung up by {end.get('ended_by')} ({end.get('reason')})", file=out)
    if result.comparison is not None:
        print(f"  {result.comparison.describe()}", file=out)
    if result.recorded_in is not None:
        print(f"  recorded to {result.recorded_in} ({EVENTS_FILE}, WAVs, transcript)", file=out)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``voicebot replay``'s arguments (the parser itself belongs to :mod:`telephony.cli`)."""
    parser.add_argument("recording", type=Path, help="a recording folder, its events.jsonl, or a WAV of a caller")
    parser.add_argument(
        "--url",
        metavar="WS_URL",
        help="connect the media stream here (ws://... or wss://...) instead of the <Stream url> /twiml returns",
    )
    parser.add_argument(
        "--server",
        metavar="URL",
        help="where to POST /twiml (default: the host of --url, else http://VOICEBOT_HOST:VOICEBOT_PORT)",
    )
    parser.add_argument("--speed", type=float, default=1.0, metavar="N", help="play N times faster than real time")
    parser.add_argument("--out", type=Path, metavar="DIR", help="record the call as the caller heard it, under DIR")
    parser.add_argument(
        "--offline",
        action="store_true",
        help="no server needed: run the bridge here with the recording's agent side, and compare what it sends",
    )
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="with --offline: also record the call on the bridge's side under DIR (what the bridge sends today)",
    )


def run_command(settings: Settings, args: argparse.Namespace) -> int:
    """``voicebot replay``: 0 when the replay ran (and, offline, matched the recording), 1 otherwise."""
    if not 0 < args.speed <= 100:
        print("voicebot replay: --speed must be between 0 and 100", file=sys.stderr)
        return 2
    if args.url and not args.url.startswith(("ws://", "wss://")):
        print("voicebot replay: --url must start with ws:// or wss://", file=sys.stderr)
        return 2
    if args.record and not args.offline:
        print(
            "voicebot replay: --record needs --offline (a remote server records with its own --record)", file=sys.stderr
        )
        return 2
    if args.offline:
        logging.getLogger("telephony").setLevel(logging.ERROR)  # the local server's lines would bury the summary
    options = ReplayOptions(args.recording, args.url, args.server, args.speed, args.out, args.offline, args.record)
    try:
        result = asyncio.run(replay(options, settings, progress=sys.stderr))
    except (RecordingError, AnswerError, ValueError, OSError, TimeoutError) as error:
        print(f"voicebot replay: {error}", file=sys.stderr)
        return 1
    print_result(result, args.recording)
    return 0 if result.comparison is None or result.comparison.matches else 1

"""``voicebot test PATH…``: run scenario files against an agent, as phone calls, and say what failed and where.

Exit status: 0 when every scenario passed, 1 when one failed (or a file could not be read), 2 for bad usage.
``--local MODEL`` (nova, openai, gemini; ``--local-nova`` is ``--local nova``) plays scenarios' brains on a local
server that the agent's own model talks to. ``--from-recording RECORDING`` writes a scenario from a recorded call
instead of running anything.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from telephony.config import Settings
from telephony.recording.format import RecordingError
from telephony.simulation.scenarios.junit import write_junit
from telephony.simulation.scenarios.on_local_model import LOCAL_MODELS
from telephony.simulation.scenarios.preflight import load_scenarios
from telephony.simulation.scenarios.runner import RunOptions, ScenarioRunner, summary_table, uses_brain
from telephony.simulation.scenarios.scenario import Scenario, ScenarioError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``voicebot test``'s arguments (the parser itself belongs to :mod:`telephony.cli`)."""
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="scenario files (.yaml) or folders of them")
    parser.add_argument(
        "--agent",
        metavar="MODULE:FUNCTION",
        help="the agent factory to test, over each scenario's own 'agent:' (default: that, else VOICEBOT_AGENT)",
    )
    parser.add_argument(
        "--real-model",
        action="store_true",
        help="run on the model the agent factory builds (e.g. Nova Sonic: needs its credentials), "
        "ignoring the scenarios' scripted brains",
    )
    parser.add_argument(
        "--local",
        choices=tuple(LOCAL_MODELS),
        metavar="MODEL",
        help="play the scenarios' brains on a local server for MODEL (nova, openai or gemini), which the agent's "
        "own model of that provider talks to over its wire protocol, on 127.0.0.1 (no account used)",
    )
    parser.add_argument(
        "--local-nova",
        action="store_true",
        help="the same as --local nova: play the scenarios' brains on the local Nova Sonic emulator, which the "
        "agent's own Nova Sonic model talks to over Nova's wire protocol "
        "(the factory must build BedrockNovaSonicModel)",
    )
    parser.add_argument("--junit", type=Path, metavar="FILE", help="also write the results as JUnit XML (for CI)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("recordings"),
        metavar="DIR",
        help="where each run's recording goes (default ./recordings; open them with the console's calls page)",
    )
    parser.add_argument(
        "--text-model",
        metavar="BEDROCK_MODEL_ID",
        help="text model for goal callers and judges (e.g. us.amazon.nova-lite-v1:0; needs AWS credentials); "
        "default: their offline stand-ins",
    )
    parser.add_argument(
        "--from-recording",
        type=Path,
        metavar="RECORDING",
        help="write a scenario from a recorded call (its folder or events.jsonl) instead of running: the caller "
        "is the recording, the expectations are what happened; edit it, then run it",
    )
    parser.add_argument(
        "--write",
        type=Path,
        metavar="FILE",
        help="with --from-recording: the scenario file to write (default: print it)",
    )


def run_command(settings: Settings, args: argparse.Namespace) -> int:
    if args.from_recording is not None:
        return _from_recording(args)
    if not args.paths:
        print("voicebot test: give scenario files or folders (or --from-recording RECORDING)", file=sys.stderr)
        return 2
    if args.local_nova and args.local not in (None, "nova"):
        print(f"voicebot test: --local-nova is --local nova, not --local {args.local}: choose one", file=sys.stderr)
        return 2
    local = "nova" if args.local_nova else args.local
    if local is not None and args.real_model:
        flag = "--local-nova" if args.local_nova else f"--local {local}"
        print(f"voicebot test: {flag} plays the scripted brain; --real-model ignores it: choose one", file=sys.stderr)
        return 2
    options = RunOptions(
        agent=args.agent,
        real_model=args.real_model,
        out=args.out,
        text_model=args.text_model,
        local=local,
    )
    try:
        checked = asyncio.run(load_scenarios(args.paths, options, settings))
    except ScenarioError as error:
        print(_mistakes(error), file=sys.stderr)
        return 1
    scenarios = checked.scenarios
    if not scenarios:
        print(f"voicebot test: no scenario files (*.yaml) in {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 1
    for notice in checked.notices:
        print(f"voicebot test: {notice}")
    for name in ("telephony", "agent", "strands", "botocore", "websockets", "google_genai"):
        logging.getLogger(name).setLevel(logging.ERROR)  # the runner tells the story (script gaps included)
    print(_header(scenarios, options, settings))
    results = asyncio.run(ScenarioRunner(settings, options, out=sys.stdout).run_all(scenarios))
    print()
    for line in summary_table(results):
        print(line)
    print(f"recordings: {args.out}/ (VOICEBOT_RECORD_DIR={args.out} shows them on the console's calls page)")
    if args.junit:
        write_junit(results, args.junit)
        print(f"JUnit XML: {args.junit}")
    return 0 if all(result.passed for result in results) else 1


def _mistakes(error: ScenarioError) -> str:
    """Every mistake, one a line, and that nothing was run."""
    count = len(error.problems)
    lines = "\n".join(f"  {problem}" for problem in error.problems)
    return f"voicebot test: {count} mistake(s) in the scenarios, so no call was placed:\n{lines}"


def _header(scenarios: list[Scenario], options: RunOptions, settings: Settings) -> str:
    scripted = sum(uses_brain(scenario, options) for scenario in scenarios)
    local = options.local_server
    where = f"the scripted brain on the {LOCAL_MODELS[local].title}" if local else "the scripted brain"
    model = (
        f"{scripted} on {where} (no model account used), {len(scenarios) - scripted} on the agent's own model"
        if scripted
        else "all on the agent's own model"
    )
    return f"voicebot test: {len(scenarios)} scenario(s), {model}"


def _from_recording(args: argparse.Namespace) -> int:
    from telephony.simulation.replay.from_recording import scenario_from_recording

    try:
        text = scenario_from_recording(args.from_recording, args.write)
    except (RecordingError, OSError) as error:
        print(f"voicebot test: {error}", file=sys.stderr)
        return 1
    if args.write is None:
        sys.stdout.write(text)
    else:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(text, encoding="utf-8")
        print(f"wrote {args.write}: edit its expectations, then run `voicebot test {args.write}`")
    return 0

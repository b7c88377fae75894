"""``voicebot test PATH…``: run scenario files against an agent, as phone calls, and say what failed and where.

Exit status: 0 when every scenario passed, 1 when one failed (or a file could not be read), 2 for bad usage.
``--local MODEL`` (nova, openai, gemini; ``--local-nova`` is ``--local nova``) plays scenarios' brains on a local
server that the agent's own model talks to. ``--from-recording RECORDING`` writes a scenario from a recorded call
instead of running anything. ``--jobs N`` places N calls at once, ``-k`` picks scenarios by name, ``--check`` only
reads the files, ``--line`` puts every call on a bad line.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

from telephony.config import Settings
from telephony.recording.format import RecordingError
from telephony.simulation.scenarios.junit import write_junit
from telephony.simulation.scenarios.line_field import line_from_option
from telephony.simulation.scenarios.name_filter import NameFilter, NameFilterError
from telephony.simulation.scenarios.on_local_model import LOCAL_MODELS
from telephony.simulation.scenarios.parallel_runs import run_in_workers
from telephony.simulation.scenarios.preflight import Preflight, load_scenarios
from telephony.simulation.scenarios.results import ScenarioResult, progress_label, result_lines
from telephony.simulation.scenarios.runner import RunOptions, ScenarioRunner, summary_table, uses_brain
from telephony.simulation.scenarios.scenario import Scenario, ScenarioError

QUIET_LOGGERS = ("telephony", "agent", "strands", "botocore", "websockets", "google_genai")
"""Loggers kept to errors during a run: the runner's own lines tell the story (script gaps included)."""


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
    parser.add_argument(
        "-j",
        "--jobs",
        type=_positive,
        default=1,
        metavar="N",
        help="place N calls at once, each in its own worker process (results still print in file order)",
    )
    parser.add_argument(
        "-k",
        dest="select",
        metavar="EXPRESSION",
        help="run only the scenarios whose name or file name matches: words, and/or/not, parentheses "
        "(e.g. -k booking, -k 'not goal')",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="check the scenario files as a run would before its first call (every mistake in every file), "
        "place no call (exit 1 on a mistake)",
    )
    parser.add_argument(
        "--keep-workdirs",
        action="store_true",
        help="keep the work folder (set-up data such as a database) of each run that failed, and print where",
    )
    parser.add_argument(
        "--line",
        metavar="CONDITIONS",
        help="line conditions for every scenario, over its own 'line:': a YAML file, or inline, e.g. "
        '"{noise: {kind: babble, level_dbfs: -35}, packet_loss: 0.02, jitter_ms: 40}"',
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
        return _from_recording(args, settings)
    if not args.paths:
        print("voicebot test: give scenario files or folders (or --from-recording RECORDING)", file=sys.stderr)
        return 2
    try:
        select = NameFilter(args.select) if args.select is not None else None
        conditions = line_from_option(args.line) if args.line is not None else None
    except (NameFilterError, ScenarioError) as error:
        print(f"voicebot test: {error}", file=sys.stderr)
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
        keep_failed_workdirs=args.keep_workdirs,
        line=conditions,
    )
    checked = _preflight(args, options, settings, select)
    if checked is None:
        return 1
    scenarios = checked.scenarios
    for notice in checked.notices:
        print(f"voicebot test: {notice}")
    if args.check:
        print(f"voicebot test --check: {len(scenarios)} scenario(s) read and checked, no call placed:")
        for scenario in scenarios:
            print(f"  {scenario.path}: {scenario.name}")
        return 0
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)  # the runner tells the story (script gaps included)
    print(_header(scenarios, options, settings, args.jobs))
    started = time.monotonic()
    if args.jobs > 1:
        results = run_in_workers(scenarios, settings, options, args.jobs, _printer(len(scenarios)), QUIET_LOGGERS)
    else:
        results = asyncio.run(ScenarioRunner(settings, options, out=sys.stdout).run_all(scenarios))
    print()
    for line in summary_table(results, time.monotonic() - started if args.jobs > 1 else None):
        print(line)
    print(f"recordings: {args.out}/ (VOICEBOT_RECORD_DIR={args.out} shows them on the console's calls page)")
    if args.junit:
        write_junit(results, args.junit)
        print(f"JUnit XML: {args.junit}")
    return 0 if all(result.passed for result in results) else 1


def _preflight(
    args: argparse.Namespace, options: RunOptions, settings: Settings, select: NameFilter | None
) -> Preflight | None:
    """The scenarios to run, every file checked before any call (:mod:`preflight`); None once what is wrong
    (every mistake in every file, or that ``-k`` chose nothing) has been printed."""
    chosen = (lambda scenario: select.matches(scenario.name, scenario.path.name)) if select is not None else None
    try:
        checked = asyncio.run(load_scenarios(args.paths, options, settings, chosen))
    except ScenarioError as error:
        print(_mistakes(error), file=sys.stderr)
        return None
    if checked.scenarios:
        return checked
    if checked.not_chosen:
        names = ", ".join(repr(scenario.name) for scenario in checked.not_chosen)
        print(f"voicebot test: -k {args.select!r} matches none of {names}", file=sys.stderr)
    else:
        print(f"voicebot test: no scenario files (*.yaml) in {', '.join(map(str, args.paths))}", file=sys.stderr)
    return None


def _mistakes(error: ScenarioError) -> str:
    """Every mistake, one a line, and that nothing was run."""
    count = len(error.problems)
    lines = "\n".join(f"  {problem}" for problem in error.problems)
    return f"voicebot test: {count} mistake(s) in the scenarios, so no call was placed:\n{lines}"


def _printer(total: int) -> Callable[[int, ScenarioResult], None]:
    """Prints a finished scenario as a serial run does (the runs come back in file order)."""

    def finished(position: int, result: ScenarioResult) -> None:
        print(progress_label(position + 1, total, result.scenario) + "\n".join(result_lines(result)), flush=True)

    return finished


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of calls at once, 1 or more, got {text!r}")
    return value


def _header(scenarios: list[Scenario], options: RunOptions, settings: Settings, jobs: int = 1) -> str:
    scripted = sum(uses_brain(scenario, options) for scenario in scenarios)
    local = options.local_server
    where = f"the scripted brain on the {LOCAL_MODELS[local].title}" if local else "the scripted brain"
    model = (
        f"{scripted} on {where} (no model account used), {len(scenarios) - scripted} on the agent's own model"
        if scripted
        else "all on the agent's own model"
    )
    runs = sum(scenario.runs for scenario in scenarios)
    at_once = f", {min(jobs, runs)} calls at once" if jobs > 1 else ""
    line = f", every call over {options.line.describe()}" if options.line is not None else ""
    return f"voicebot test: {len(scenarios)} scenario(s), {model}{at_once}{line}"


def _from_recording(args: argparse.Namespace, settings: Settings) -> int:
    from telephony.simulation.replay.from_recording import scenario_from_recording, write_scenario_from_recording

    try:
        if args.write is None:
            sys.stdout.write(scenario_from_recording(args.from_recording, None, args.agent, settings.agent))
            return 0
        caller = write_scenario_from_recording(args.from_recording, args.write, args.agent, settings.agent)
    except (RecordingError, OSError) as error:
        print(f"voicebot test: {error}", file=sys.stderr)
        return 1
    print(f"wrote {args.write} and its caller, {caller}: edit its expectations, then run `voicebot test {args.write}`")
    return 0

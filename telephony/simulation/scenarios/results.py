"""What a scenario run gives back: the options it ran with, each run's verdict and figures, and the printed
progress line and summary table.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from telephony.config import Settings
from telephony.simulation.caller.line_conditions import LineConditions
from telephony.simulation.scenarios.expectations import CallOutcome, Finding, barge_ins
from telephony.simulation.scenarios.false_clears import false_clears
from telephony.simulation.scenarios.scenario import Scenario
from telephony.simulation.scenarios.timing_checks import dead_air_waits


@dataclass(frozen=True)
class RunOptions:
    agent: str | None = None
    """``module:function`` over every scenario's own ``agent:`` (None: the scenario's, else VOICEBOT_AGENT)."""
    real_model: bool = False
    """Run on the model the factory builds, ignoring scenarios' scripted brains."""
    out: Path = Path("recordings")
    text_model: str | None = None
    """Bedrock model id for goal callers and judges (None: their offline stand-ins)."""
    local_nova: bool = False
    """Play scenarios' brains on the local Nova Sonic emulator (the same as ``local="nova"``)."""
    local: str | None = None
    """Play scenarios' brains on this provider's local server (nova, openai, gemini), talking to the factory's
    own model of that provider."""
    workdirs: Path | None = None
    """Keep each run's work folder (``setup`` data such as a database) under here (None: a temporary one, deleted)."""
    keep_failed_workdirs: bool = False
    """Keep the temporary work folder of a run that failed, to look at what it left (``--keep-workdirs``)."""
    line: LineConditions | None = None
    """Line conditions for every scenario, over each one's own ``line:`` (``--line``)."""

    @property
    def local_server(self) -> str | None:
        """The provider whose local server plays the brains (None: the in-process scripted model)."""
        return self.local or ("nova" if self.local_nova else None)


@dataclass
class RunResult:
    index: int
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    """Wall-clock time of the run, set-up to verdict."""
    call_s: float = 0.0
    recording: Path | None = None
    model: str = ""
    outcome: CallOutcome | None = None
    """What happened on the call (transcript, tool calls, records), for assertions of one's own."""
    error: str | None = None
    """The run could not be carried out (the agent factory failed to load, a set-up function failed, …)."""
    kept_workdir: Path | None = None
    """The failed run's work folder, kept (``--keep-workdirs``)."""

    @property
    def passed(self) -> bool:
        return self.error is None and not self.findings

    def problems(self) -> list[str]:
        return [self.error] if self.error else [str(finding) for finding in self.findings]

    def figures(self) -> str:
        """Measured on this call: response latencies, dead air and barge-in reaction (for the progress line and
        JUnit)."""
        if self.outcome is None:
            return ""
        parts = []
        if latencies := self.outcome.latencies:
            parts.append(f"latency median {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s")
        if waits := dead_air_waits(self.outcome):
            parts.append(f"longest dead air {max(wait['s'] for wait in waits):.2f} s")
        delays = [(cleared - spoke) * 1000 for _, spoke, cleared, _ in barge_ins(self.outcome) if spoke and cleared]
        if delays:
            parts.append("barge-in to clear " + ", ".join(f"{delay:.0f}" for delay in delays) + " ms")
        false = false_clears(self.outcome)
        if false or self.outcome.line is not None:
            parts.append(f"false clears {len(false)}")
        return "; ".join(parts)


@dataclass
class ScenarioResult:
    scenario: Scenario
    runs: list[RunResult] = field(default_factory=list)

    @property
    def passes(self) -> int:
        return sum(run.passed for run in self.runs)

    @property
    def passed(self) -> bool:
        return self.passes >= self.scenario.passes_needed

    @property
    def seconds(self) -> float:
        return sum(run.seconds for run in self.runs)

    @property
    def model(self) -> str:
        return next((run.model for run in self.runs if run.model), "?")


def agent_spec(scenario: Scenario, options: RunOptions, settings: Settings) -> str:
    return options.agent or scenario.agent or settings.agent


def uses_brain(scenario: Scenario, options: RunOptions) -> bool:
    return scenario.brain is not None and not options.real_model


def run_settings(settings: Settings, scenario: Scenario, options: RunOptions) -> Settings:
    """The environment's call behaviour on a loopback server with no Twilio account (REST is simulated), and with
    ``--local MODEL`` that provider's model for the default agent to build."""
    settings = replace(
        settings,
        public_url=None,
        twilio_account_sid=None,
        twilio_auth_token=None,
        host="127.0.0.1",
        record_dir=None,
        console=False,
        greeting=scenario.greeting if scenario.greeting is not None else settings.greeting,
        prewarm=settings.prewarm and not scenario.parameters,  # a pre-warmed agent never sees them
    )
    if options.local_server and uses_brain(scenario, options):
        settings = replace(settings, model=options.local_server)
    return settings


def progress_line(result: ScenarioResult) -> str:
    verdict = "PASS" if result.passed else "FAIL"
    runs = result.runs
    counted = f"{result.passes}/{len(runs)} runs  " if len(runs) > 1 else ""
    figures = runs[-1].figures() if runs else ""
    return f"{verdict} {result.seconds:6.1f} s  {counted}{f'({figures})' if figures else ''}".rstrip()


def progress_label(number: int, total: int, scenario: Scenario) -> str:
    """``[3/8] booking succeeds``, padded: printed before the scenario's verdict, on the same line."""
    label = f"[{number}/{total}] {scenario.name}"
    return f"{label:<48} "


def result_lines(result: ScenarioResult) -> list[str]:
    """The verdict line, then what failed and where each kept work folder is, indented under it."""
    lines = [progress_line(result)]
    many = len(result.runs) > 1
    for run in result.runs:
        lines += [f"      run {run.index}: {problem}" if many else f"      {problem}" for problem in run.problems()]
        if run.kept_workdir is not None:
            lines.append(f"      {f'run {run.index}: ' if many else ''}work folder kept: {run.kept_workdir}")
    return lines


def summary_table(results: list[ScenarioResult], wall_s: float | None = None) -> Iterator[str]:
    """The table printed after all scenarios: one row per scenario; ``wall_s``: how long they took side by side."""
    headers = ("scenario", "result", "runs passed", "time (each run)", "call time", "model")
    rows = []
    for result in results:
        each = ", ".join(f"{run.seconds:.1f}" for run in result.runs)
        calls = ", ".join(f"{run.call_s:.1f}" for run in result.runs)
        needed = f" (need {result.scenario.passes_needed})" if result.scenario.runs > 1 else ""
        rows.append(
            (
                result.scenario.name,
                "PASS" if result.passed else "FAIL",
                f"{result.passes}/{len(result.runs)}{needed}",
                f"{each} s",
                f"{calls} s",
                result.model,
            )
        )
    widths = [max(len(str(row[column])) for row in [headers, *rows]) for column in range(len(headers))]
    line = "  ".join(f"{{:<{width}}}" for width in widths)
    yield line.format(*headers)
    yield line.format(*("-" * width for width in widths))
    for row in rows:
        yield line.format(*row)
    failed = sum(not result.passed for result in results)
    total = sum(result.seconds for result in results)
    side_by_side = f" of calls, {wall_s:.1f} s from first to last" if wall_s is not None else ""
    yield f"{len(results) - failed} passed, {failed} failed in {total:.1f} s{side_by_side}"

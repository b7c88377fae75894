"""Running scenarios: each run is a real call through the real ``/twiml`` and media stream on a loopback server.

For each run the runner starts the app with the agent factory under test (``--agent``, else the scenario's
``agent:``, else ``VOICEBOT_AGENT``), a simulated Twilio REST client (so hang-ups and transfers are carried
out), a recorder (the run's folder opens in the console's calls page) and a live transcript for goal
callers. When the scenario has a ``brain:`` and ``--real-model`` is not given, the model the factory built
is replaced, before it starts, by a :class:`~agent.scripted.ScriptedBrainModel` playing that brain: the
agent's tools, prompt and hang-up stay the agent's own. The caller then performs the scenario, and the
finished call is checked against ``expect:`` (:mod:`telephony.simulation.expectations`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from agent.scripted import ScriptedBrainModel, stand_ins
from telephony.bridge.agent_factory import AgentFactory, build_agent, load_agent_factory, with_settings
from telephony.call_info import CallInfo
from telephony.config import Settings
from telephony.recording.format import Recording, RecordingError
from telephony.recording.recorder import CallRecorder, folder_name
from telephony.recording.transcript import TRANSCRIPT_FILE
from telephony.simulation.caller import SimulatedCaller, answer
from telephony.simulation.caller_script import CallerScript, Linger, play
from telephony.simulation.demo import Voice
from telephony.simulation.expectations import CallOutcome, Finding, barge_ins, evaluate, run_check
from telephony.simulation.goal_caller import (
    CallerBrain,
    Judge,
    LiveTranscript,
    PatternJudge,
    RuleCaller,
    TextModelCaller,
    TextModelJudge,
    bedrock_text_model,
)
from telephony.simulation.local_server import serve_app
from telephony.simulation.replay import twilio_form
from telephony.simulation.replay_report import ReplayReport
from telephony.simulation.scenario import Scenario
from telephony.simulation.scenario_caller import CallerLine, ScenarioCaller
from telephony.simulation.twilio_rest import SimulatedCallControl

log = logging.getLogger(__name__)

SESSION_END_TIMEOUT_S = 15.0
"""After the caller's side closes, how long the server gets to finish the call and its recording."""


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
    """Play scenarios' brains on the local Nova Sonic emulator, talking to the factory's own Nova Sonic model."""
    workdirs: Path | None = None
    """Keep each run's work folder (``setup`` data such as a database) under here (None: a temporary one, deleted)."""


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

    @property
    def passed(self) -> bool:
        return self.error is None and not self.findings

    def problems(self) -> list[str]:
        return [self.error] if self.error else [str(finding) for finding in self.findings]

    def figures(self) -> str:
        """Measured on this call: response latencies and barge-in reaction (for the progress line and JUnit)."""
        if self.outcome is None:
            return ""
        parts = []
        if latencies := self.outcome.latencies:
            parts.append(f"latency median {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s")
        delays = [(cleared - spoke) * 1000 for _, spoke, cleared, _ in barge_ins(self.outcome) if spoke and cleared]
        if delays:
            parts.append("barge-in to clear " + ", ".join(f"{delay:.0f}" for delay in delays) + " ms")
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


LOCAL_NOVA_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDLOCALNOVA0000000",
    "AWS_SECRET_ACCESS_KEY": "local-nova-secret-not-checked",
    "AWS_SESSION_TOKEN": None,
    "AWS_PROFILE": None,
    "AWS_ENDPOINT_URL": None,
    "AWS_EC2_METADATA_DISABLED": "true",
}
"""Fake keys (the emulator checks none) and nothing that could send the client elsewhere."""


@contextlib.asynccontextmanager
async def local_nova(scenario: Scenario, label: list[str]) -> AsyncIterator[None]:
    """The emulator playing ``scenario.brain``, with the AWS environment pointing at it for the call."""
    from telephony.simulation.local_nova import LocalNova
    from telephony.simulation.nova_brain import NovaScriptedBrain

    assert scenario.brain is not None
    holder: list[Any] = []

    def prompt() -> str | None:
        sessions = holder[0].sessions if holder else []
        return sessions[-1].system_prompts[0] if sessions and sessions[-1].system_prompts else None

    brain = await asyncio.to_thread(NovaScriptedBrain, scenario.brain, prompt)
    async with LocalNova(brain=brain) as nova:
        holder.append(nova)
        values = {
            **LOCAL_NOVA_ENV,
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": nova.endpoint,
            "AWS_CA_BUNDLE": str(nova.ca_file),
        }
        saved = {name: os.environ.get(name) for name in values}
        try:
            for name, value in values.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            notes = [*brain.brain.unanswered, *brain.brain.missing] if brain._brain is not None else []
            label.extend(notes)
            label.extend(f"local Nova: {violation}" for violation in nova.violations)


class ScenarioRunner:
    """Runs scenarios one after another in this event loop, printing progress to ``out`` (None: silent)."""

    def __init__(self, settings: Settings, options: RunOptions, out: TextIO | None = None) -> None:
        self.settings = settings
        self.options = options
        self.out = out
        self._voice: Voice | None = None

    def _print(self, text: str) -> None:
        if self.out is not None:
            print(text, file=self.out, flush=True)

    async def run_all(self, scenarios: list[Scenario]) -> list[ScenarioResult]:
        results = []
        for number, scenario in enumerate(scenarios, start=1):
            if self.out is not None:
                label = f"[{number}/{len(scenarios)}] {scenario.name}"
                self.out.write(f"{label:<48} ")
                self.out.flush()
            result = await self.run_scenario(scenario)
            results.append(result)
            self._print(progress_line(result))
            for run in result.runs:
                for problem in run.problems():
                    self._print(f"      run {run.index}: {problem}" if len(result.runs) > 1 else f"      {problem}")
        return results

    async def run_scenario(self, scenario: Scenario) -> ScenarioResult:
        result = ScenarioResult(scenario)
        for index in range(1, scenario.runs + 1):
            result.runs.append(await self.run_once(scenario, index))
        return result

    async def run_once(self, scenario: Scenario, index: int = 1) -> RunResult:
        """One call: set up, call, check. Never raises for a problem of the agent or the scenario."""
        started = time.monotonic()
        run = RunResult(index)
        keep = self.options.workdirs
        if keep is not None:
            await asyncio.to_thread(keep.mkdir, parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="voicebot-scenario-", dir=keep))
        try:
            await self._run(scenario, run, workdir)
        except Exception as error:  # a crashing run is a failed run, reported with its cause
            log.debug("scenario %s crashed", scenario.name, exc_info=True)
            run.error = f"the run failed: {type(error).__name__}: {error}"
        finally:
            if keep is None:
                await asyncio.to_thread(shutil.rmtree, workdir, True)
        run.seconds = time.monotonic() - started
        return run

    async def _run(self, scenario: Scenario, run: RunResult, workdir: Path) -> None:
        outcome = run.outcome = CallOutcome(transcript={}, records=[], workdir=workdir)
        for check in scenario.setup:
            if (problem := await run_check(check, outcome)) is not None:
                run.error = f"{check.where}: set-up failed: {problem}"
                return
        spec = agent_spec(scenario, self.options, self.settings)
        try:
            factory = load_agent_factory(spec)
        except Exception as error:  # noqa: BLE001 - an agent that cannot even be imported fails the run
            run.error = f"cannot load the agent factory {spec}: {error}"
            return
        if self._voice is None:
            self._voice = await asyncio.to_thread(Voice)
        call = await self._call(scenario, factory, outcome, run)
        if call is None:
            return
        run.findings = await evaluate(scenario.expect, outcome, self._judge())
        if call.timed_out:
            last = outcome.steps[-1].step.describe() if outcome.steps else "before its first step"
            run.findings.insert(
                0,
                Finding(None, f"the call did not end within {scenario.timeout_s:g} s (the caller's last step: {last})"),
            )

    def _judge(self) -> Judge:
        if self.options.text_model:
            return TextModelJudge(bedrock_text_model(self.options.text_model, self.settings.aws_region))
        return PatternJudge()

    def _caller_brain(self, scenario: Scenario) -> CallerBrain:
        assert scenario.goal is not None
        if self.options.text_model:
            return TextModelCaller(scenario.goal, bedrock_text_model(self.options.text_model, self.settings.aws_region))
        return RuleCaller(scenario.goal)

    def _settings(self, scenario: Scenario) -> Settings:
        """The environment's call behaviour on a loopback server with no Twilio account (REST is simulated)."""
        return replace(
            self.settings,
            public_url=None,
            twilio_account_sid=None,
            twilio_auth_token=None,
            host="127.0.0.1",
            record_dir=None,
            console=False,
            greeting=scenario.greeting if scenario.greeting is not None else self.settings.greeting,
            prewarm=self.settings.prewarm and not scenario.parameters,  # a pre-warmed agent never sees them
        )

    async def _call(
        self, scenario: Scenario, factory: AgentFactory, outcome: CallOutcome, run: RunResult
    ) -> _Call | None:
        assert self._voice is not None
        scripted = uses_brain(scenario, self.options)
        on_nova = scripted and self.options.local_nova
        models: list[Any] = []
        nova_notes: list[str] = []

        settings = self._settings(scenario)
        factory = with_settings(factory, settings)  # a factory taking `settings` gets the run's (flags included)

        async def make_agent(call: CallInfo) -> Any:
            agent = await build_agent(factory, call)
            built = agent.model
            if on_nova:
                run.model = f"local Nova Sonic emulator playing the scripted brain ({describe_model(built)})"
            elif scripted:
                assert scenario.brain is not None
                agent.model = ScriptedBrainModel(scenario.brain)
                run.model = f"scripted brain (in place of {type(built).__name__})"
            else:
                run.model = describe_model(built)
            models.append(agent.model)
            return agent

        recorders: list[CallRecorder] = []
        out = self.options.out

        def record(call: CallInfo) -> CallRecorder:
            recorders.append(CallRecorder.start(call, folder_name(out, call)))
            return recorders[-1]

        tap = LiveTranscript()
        rest = SimulatedCallControl()
        from telephony.app import create_app

        app = create_app(settings, agent_factory=make_agent, call_control=rest, observers=[record, lambda _: tap])
        sid = "CA" + secrets.token_hex(16)
        form = twilio_form(
            {"call_sid": sid, "account_sid": "AC" + "0" * 32, "from": scenario.call_from, "to": scenario.call_to}
        )
        await asyncio.to_thread(out.mkdir, parents=True, exist_ok=True)
        nova = local_nova(scenario, nova_notes) if on_nova else contextlib.nullcontext()
        with stand_ins() if scripted else contextlib.nullcontext():
            async with nova, serve_app(app) as base:
                target = await answer(f"http://{base}", form)
                caller = SimulatedCaller(
                    f"ws://{base}/media-stream",
                    call_sid=sid,
                    stream_sid="MZ" + secrets.token_hex(16),
                    account_sid="AC" + "0" * 32,
                    parameters={**target.parameters, **scenario.parameters},
                )
                call = _Call()
                report = ReplayReport(caller)
                async with caller:
                    await caller.connect()
                    performer = ScenarioCaller(CallerLine(caller), self._voice, scenario.patience_s)
                    try:
                        async with asyncio.timeout(scenario.timeout_s):
                            await self._perform(scenario, performer, tap)
                    except TimeoutError:
                        call.timed_out = True
                    finally:
                        await performer.line.close()
                        if not caller.closed.is_set():
                            with contextlib.suppress(Exception):
                                await caller.stop()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(caller.closed.wait(), 5.0)
                await _until(lambda: not app.state.sessions, SESSION_END_TIMEOUT_S)
        outcome.latencies = report.update().latencies
        outcome.steps = performer.log
        outcome.redirects = rest.redirects
        brain = getattr(models[-1], "brain", None) if models and not on_nova else None
        outcome.brain_notes = nova_notes + ([*brain.unanswered, *brain.missing] if brain is not None else [])
        if not recorders or recorders[-1].folder is None:
            run.error = "the call never started: the bridge did not accept the stream (see the log)"
            return None
        folder = recorders[-1].folder
        run.recording = folder
        try:
            outcome.recording = folder
            outcome.records = (await asyncio.to_thread(Recording.load, folder)).records
            outcome.transcript = json.loads(
                await asyncio.to_thread((folder / TRANSCRIPT_FILE).read_text, encoding="utf-8")
            )
        except (RecordingError, OSError, ValueError) as error:
            run.error = f"the call's recording in {folder} cannot be read: {error}"
            return None
        run.call_s = outcome.duration_s
        return call

    async def _perform(self, scenario: Scenario, performer: ScenarioCaller, tap: LiveTranscript) -> None:
        if scenario.recording is not None:
            source = scenario.recording
            script = await asyncio.to_thread(_caller_script, source)
            await performer.line.close()  # the recording's own frames are the line
            await play(performer.caller, script, Linger(quiet_s=3.0, max_s=30.0))
        elif scenario.goal is not None:
            await performer.perform_goal(self._caller_brain(scenario), tap, scenario.goal.max_turns)
        else:
            await performer.perform(scenario.caller)
        await performer.caller.closed.wait()


@dataclass
class _Call:
    timed_out: bool = False


def _caller_script(source: Path) -> CallerScript:
    if source.suffix.lower() == ".wav":
        return CallerScript.from_wav(source)
    recording = Recording.load(source)
    return CallerScript.from_recording(recording).without_first_frames(recording.frames_before_model)


async def _until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


def describe_model(model: Any) -> str:
    model_id = getattr(model, "model_id", None) or (getattr(model, "get_config", lambda: {})() or {}).get("model_id")
    return f"{type(model).__name__} {model_id}" if model_id else type(model).__name__


# --- reporting -----------------------------------------------------------------------------------------


def progress_line(result: ScenarioResult) -> str:
    verdict = "PASS" if result.passed else "FAIL"
    runs = result.runs
    counted = f"{result.passes}/{len(runs)} runs  " if len(runs) > 1 else ""
    figures = runs[-1].figures() if runs else ""
    return f"{verdict} {result.seconds:6.1f} s  {counted}{f'({figures})' if figures else ''}".rstrip()


def summary_table(results: list[ScenarioResult]) -> Iterator[str]:
    """The table printed after all scenarios: one row per scenario."""
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
    yield f"{len(results) - failed} passed, {failed} failed in {total:.1f} s"

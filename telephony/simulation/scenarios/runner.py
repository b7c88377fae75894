"""Running scenarios: each run is a real call through the real ``/twiml`` and media stream on a loopback server.

For each run the runner starts the app with the agent factory under test (``--agent``, else the scenario's
``agent:``, else ``VOICEBOT_AGENT``), a simulated Twilio REST client (so hang-ups and transfers are carried
out), a recorder (the run's folder opens in the console's calls page) and a live transcript for goal
callers. When the scenario has a ``brain:`` and ``--real-model`` is not given, the model the factory built
is replaced, before it starts, by a :class:`~agent.scripted.ScriptedBrainModel` playing that brain: the
agent's tools, prompt and hang-up stay the agent's own. The caller then performs the scenario, and the
finished call is checked against ``expect:`` (:mod:`telephony.simulation.scenarios.expectations`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from agent.scripted import ScriptedBrainModel, stand_ins
from telephony.bridge.agent_factory import AgentFactory, build_agent, load_agent_factory, with_settings
from telephony.call_info import CallInfo
from telephony.config import Settings
from telephony.recording.format import Recording, RecordingError
from telephony.recording.recorder import CallRecorder, folder_name
from telephony.recording.transcript import TRANSCRIPT_FILE
from telephony.simulation.caller.line_conditions import LineConditions
from telephony.simulation.caller.script import CallerScript, Linger, play
from telephony.simulation.caller.simulated_caller import SimulatedCaller, answer
from telephony.simulation.caller.twilio_rest import SimulatedCallControl
from telephony.simulation.caller.voice import Voice
from telephony.simulation.local_app.loopback import serve_app
from telephony.simulation.replay.replaying import twilio_form
from telephony.simulation.replay.report import ReplayReport
from telephony.simulation.replay.run_origin import write_origin
from telephony.simulation.scenarios.call_checks import call_findings
from telephony.simulation.scenarios.caller_truth import SpeechSpan, speech_spans, talking_over_the_bot
from telephony.simulation.scenarios.expectations import CallOutcome, Finding, evaluate, in_file_order, run_check
from telephony.simulation.scenarios.goal_caller import (
    CallerBrain,
    Judge,
    LiveTranscript,
    PatternJudge,
    RuleCaller,
    TextModelCaller,
    TextModelJudge,
    bedrock_text_model,
)
from telephony.simulation.scenarios.on_local_model import LOCAL_MODELS, local_model, wrong_model
from telephony.simulation.scenarios.results import (
    RunOptions,
    RunResult,
    ScenarioResult,
    agent_spec,
    progress_label,
    result_lines,
    run_settings,
    summary_table,
    uses_brain,
)
from telephony.simulation.scenarios.scenario import CallerStep, Scenario
from telephony.simulation.scenarios.scenario_caller import CallerLine, ScenarioCaller, StepLog

__all__ = [
    "RunOptions",
    "RunResult",
    "ScenarioResult",
    "ScenarioRunner",
    "describe_model",
    "summary_table",
    "uses_brain",
]

log = logging.getLogger(__name__)

SESSION_END_TIMEOUT_S = 15.0
"""After the caller's side closes, how long the server gets to finish the call and its recording."""


class ScenarioRunner:
    """Runs scenarios one after another in this event loop, printing progress to ``out`` (None: silent)."""

    def __init__(self, settings: Settings, options: RunOptions, out: TextIO | None = None) -> None:
        self.settings = settings
        self.options = options
        self.out = out
        self._voices: dict[str | None, Voice] = {}

    def _print(self, text: str) -> None:
        if self.out is not None:
            print(text, file=self.out, flush=True)

    async def run_all(self, scenarios: list[Scenario]) -> list[ScenarioResult]:
        results = []
        for number, scenario in enumerate(scenarios, start=1):
            if self.out is not None:
                self.out.write(progress_label(number, len(scenarios), scenario))
                self.out.flush()
            result = await self.run_scenario(scenario)
            results.append(result)
            for line in result_lines(result):
                self._print(line)
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
            if keep is None and (run.passed or not self.options.keep_failed_workdirs):
                await asyncio.to_thread(shutil.rmtree, workdir, True)
            elif keep is None:
                run.kept_workdir = workdir
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
        line = self.options.line.over(scenario.line) if self.options.line is not None else scenario.line
        if line.voice not in self._voices:
            self._voices[line.voice] = await asyncio.to_thread(Voice, line.voice)
        call = await self._call(scenario, factory, outcome, run, line)
        if call is None:
            return
        brain_played = uses_brain(scenario, self.options)
        found = call_findings(scenario, outcome, brain_played) + await evaluate(scenario.expect, outcome, self._judge())
        run.findings = in_file_order(found)
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

    async def _call(
        self, scenario: Scenario, factory: AgentFactory, outcome: CallOutcome, run: RunResult, line: LineConditions
    ) -> _Call | None:
        scripted = uses_brain(scenario, self.options)
        local = LOCAL_MODELS[self.options.local_server or ""] if scripted and self.options.local_server else None
        models: list[Any] = []
        nova_notes: list[str] = []
        mismatch: list[str] = []

        settings = run_settings(self.settings, scenario, self.options)  # with --local, model=that provider
        factory = with_settings(factory, settings)  # a factory taking `settings` gets the run's (flags included)

        async def make_agent(call: CallInfo) -> Any:
            agent = await build_agent(factory, call)
            built = agent.model
            if local is not None:
                if (problem := wrong_model(local, built)) is not None:
                    mismatch.append(problem)
                    raise RuntimeError(problem)
                run.model = f"{local.title} playing the scripted brain ({describe_model(built)})"
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
        server = local_model(local.name, scenario, nova_notes) if local is not None else contextlib.nullcontext()
        with stand_ins() if scripted else contextlib.nullcontext():
            async with server, serve_app(app) as base:
                target = await answer(f"http://{base}", form)
                caller = SimulatedCaller(
                    f"ws://{base}/media-stream",
                    call_sid=sid,
                    stream_sid="MZ" + secrets.token_hex(16),
                    account_sid="AC" + "0" * 32,
                    parameters={**target.parameters, **scenario.parameters},
                    line=line.line(run.index),
                )
                call = _Call()
                report = ReplayReport(caller)
                async with caller:
                    await caller.connect()
                    performer = ScenarioCaller(CallerLine(caller), self._voices[line.voice], scenario.patience_s)
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
        outcome.caller_speech = speech_spans(caller.said)
        outcome.line = line if line.impairs else None
        outcome.steps = performer.log or _recorded_barge_ins(scenario, outcome.caller_speech, caller)
        outcome.redirects = rest.redirects
        brain = getattr(models[-1], "brain", None) if models and local is None else None
        outcome.brain_notes = nova_notes + ([*brain.unanswered, *brain.missing] if brain is not None else [])
        if mismatch:
            run.error = mismatch[0]
            return None
        if not recorders or recorders[-1].folder is None:
            run.error = "the call never started: the bridge did not accept the stream (see the log)"
            return None
        folder = recorders[-1].folder
        run.recording = folder
        await self._note_origin(folder, scenario)
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

    async def _note_origin(self, folder: Path, scenario: Scenario) -> None:
        """``scenario.json`` beside the recording, for ``--from-recording``; a failure to write it fails nothing."""
        spec = agent_spec(scenario, self.options, self.settings)
        setup = [(check.function, check.arguments) for check in scenario.setup]
        try:
            await asyncio.to_thread(write_origin, folder, scenario.path, scenario.name, spec, setup)
        except OSError as error:
            log.warning(
                "cannot note the scenario beside %s (%s): --from-recording will not know its set-up", folder, error
            )

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


def _recorded_barge_ins(scenario: Scenario, spans: list[SpeechSpan], caller: SimulatedCaller) -> list[StepLog]:
    """A caller replaying a recording has no steps; where it talked over the bot stands in for them, so
    ``expect.barge_in`` checks the barge-ins the recorded call had."""
    if scenario.recording is None:
        return []
    return [
        StepLog(
            CallerStep(
                "play", text=f"the recorded caller at {span.at_s:.1f} s", audio=scenario.recording, over_the_bot_ms=0
            ),
            span.at_s,
            timestamp=span.start_ms,
        )
        for span in talking_over_the_bot(spans, caller.heard)
    ]


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
    get_config = getattr(model, "get_config", None)
    config: dict[str, Any] = (get_config() if get_config is not None else None) or {}
    model_id = getattr(model, "model_id", None) or config.get("model_id")
    return f"{type(model).__name__} {model_id}" if model_id else type(model).__name__

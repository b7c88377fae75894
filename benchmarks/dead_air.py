"""Dead air under model faults: what a caller hears when Nova Sonic, OpenAI Realtime or Gemini Live goes quiet.

Each call runs through the real app (in this process, on loopback) with the product's default dead-air settings
(``Settings()`` defaults, greeting on: hold sound + nudge at 3.5 s, new model connection at 7 s, apology at 15 s,
hold sound for a tool after 1 s, a silent caller checked on after 10 s, twice, then goodbye), the default agent
(``agent.factory.create_agent``: its prompt, tools and model client, chosen by ``Settings.model``) and the real
strands client of each model against its local server (local Nova over TLS, local OpenAI, local Gemini over TLS),
started here and pointed at by the environment its client reads. A simulated Twilio caller speaks tones; the
servers' brain (:class:`ToneBrain`) answers each trigger with a tone whose pitch says which it was.

One call per fault per model (``--calls N`` repeats), the faults pushed on the server's fault queue (taken by the
call's first model connection):

- ``none``: greeting, two questions, two answers, the caller hangs up (no rescue step may be taken);
- ``stall``: the 2nd answer (the answer to the first question) stops after 0.5 s of audio, its stream left open;
- ``never``: the first connection never answers anything, not even the greeting;
- ``close``: as ``stall``, then the connection is dropped (Nova RST_STREAM, OpenAI/Gemini close 1011);
- ``throttled``: the first connection is refused as rate-limited (Nova HTTP 429, OpenAI 429, Gemini 1011);
- ``tool``: the first question is answered by a tool call (``slow_lookup``, 6 s) and then its result; the agent is
  the default agent plus that tool (built here the way ``create_agent`` builds it, :func:`agent_for`);
- ``silent``: after the greeting the caller says nothing for 60 s; the brain answers the check-ins with a tone and
  the goodbye note with a goodbye tone plus an ``end_conversation`` tool call.

Calls on one model run one after another (a fault goes to the next new connection on that server); the three
models run at the same time. Printed per model and fault: the dead-air waits the bridge measured (its ``dead_air``
observer notes: p50 / max over every wait of those calls, and the longest), when the caller first heard anything
after the fault (hold sound included) and when the bot's real answer came (greeting, answer or a reply to the
nudge), whether the call recovered or ended with the apology heard in full, the steps taken and the outcome (both
from the call's summary log line).

    uv run python benchmarks/dead_air.py                      # every model and fault once (about 2 minutes)
    uv run python benchmarks/dead_air.py --model openai --fault stall never --calls 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from strands import tool  # noqa: E402
from strands.bidi import BidiAgent  # noqa: E402

from agent.factory import create_agent  # noqa: E402
from agent.models import create_model  # noqa: E402
from agent.prompt import LINE_NOTE, system_prompt  # noqa: E402
from agent.tools import end_conversation, time_limited  # noqa: E402
from telephony.app import create_app  # noqa: E402
from telephony.bridge.ending import load_apology  # noqa: E402
from telephony.bridge.hold_sound import load_hold_sound  # noqa: E402
from telephony.bridge.observer import QuietObserver  # noqa: E402
from telephony.call_info import CallInfo  # noqa: E402
from telephony.codec import pcm16_to_ulaw, ulaw_to_pcm16  # noqa: E402
from telephony.config import Settings  # noqa: E402
from telephony.simulation.local_app.loopback import serve_app  # noqa: E402
from telephony.simulation.local_gemini import Fault as GeminiFault  # noqa: E402
from telephony.simulation.local_gemini import LocalGemini  # noqa: E402
from telephony.simulation.local_nova import Fault as NovaFault  # noqa: E402
from telephony.simulation.local_nova import LocalNova, Reply, Tone, ToolRequest  # noqa: E402
from telephony.simulation.local_nova.pytest_plugin import _FAKE_ENV  # noqa: E402
from telephony.simulation.local_nova.replies import CallerTurn  # noqa: E402
from telephony.simulation.local_openai import Fault as OpenAIFault  # noqa: E402
from telephony.simulation.local_openai import LocalOpenAI  # noqa: E402
from tests.fakes.audio import frame_hz  # noqa: E402
from tests.fakes.twilio import FakeTwilioCall  # noqa: E402

MODELS = ("nova", "openai", "gemini")
MODEL_IDS = {"nova": "amazon.nova-2-sonic-v1:0", "openai": "gpt-realtime", "gemini": "gemini-live-2.5-flash-preview"}
FAULTS = ("none", "stall", "never", "close", "throttled", "tool", "silent")
FAULT_NAMES = {
    "none": "none (normal call)",
    "stall": "stall mid-answer",
    "never": "never answers",
    "close": "closed mid-answer",
    "throttled": "throttled open",
    "tool": "6 s tool",
    "silent": "caller silent 60 s",
}
STEPS = ("nudge", "reconnect", "apology", "check_in", "idle_goodbye", "idle_end")

# What the bot "says": a tone per trigger (clear of the hold sound's 500 / 650 Hz and of each other).
GREETING_HZ, ANSWER_HZ, AGAIN_HZ, TOOL_ANSWER_HZ, CHECK_IN_HZ, GOODBYE_HZ = 1000, 1500, 1800, 2100, 1200, 2400
SPEECH_HZ = {GREETING_HZ: "greeting", ANSWER_HZ: "answer", AGAIN_HZ: "again", TOOL_ANSWER_HZ: "tool answer",
             CHECK_IN_HZ: "check-in", GOODBYE_HZ: "goodbye"}  # fmt: skip
REAL_ANSWERS = {GREETING_HZ, ANSWER_HZ, AGAIN_HZ, TOOL_ANSWER_HZ}
"""What counts as the bot's real answer after a fault (a greeting, an answer, a reply to a nudge or ask-again)."""
GREETING_S, ANSWER_S, SHORT_S = 0.8, 1.2, 0.8
CALLER_HZ = 300
TOOL_S = 6.0
PHASE_TIMEOUT_S = 30.0
"""The caller waits this long for each thing it expects (the apology comes at 15 s)."""
SUMMARY = re.compile(
    r"call=(?P<sid>CA\w+) \| call ended \| outcome=(?P<outcome>\S+) "
    r".*dead_air_max=(?P<max>[0-9.]+)s(?P<steps>.*?) latency\("
)


# --- the model side --------------------------------------------------------------------------------------


class ToneBrain:
    """Every local server's brain: a tone per trigger, shared by every connection (the answers do not depend on
    which connection asks). A ``tool`` call's first caller turn is answered with the slow tool instead."""

    def __init__(self) -> None:
        self.tool_turn_for: set[str] = set()
        """Armed by the benchmark for a tool call: the next caller turn asks for ``slow_lookup``."""
        self.log: list[str] = []

    async def on_caller_turn(self, turn: CallerTurn) -> Reply | None:
        if self.tool_turn_for:
            self.tool_turn_for.clear()
            self.log.append("turn->tool")
            return Reply(heard="look it up", tool_uses=(ToolRequest("slow_lookup", {}),))
        self.log.append("turn")
        return Reply(text="Here is your answer.", audio=Tone(ANSWER_S, hz=ANSWER_HZ), heard="a question")

    async def on_text(self, text: str) -> Reply | None:
        self.log.append(text[:40])
        if "has not answered after" in text:  # IDLE_GOODBYE_NOTE
            return Reply(
                text="Goodbye.",
                audio=Tone(SHORT_S, hz=GOODBYE_HZ),
                tool_uses=(ToolRequest("end_conversation", {"reason": "the caller said nothing"}),),
            )
        if "has said nothing for" in text:  # CHECK_IN_NOTE
            return Reply(text="Are you still there?", audio=Tone(SHORT_S, hz=CHECK_IN_HZ))
        if text.startswith(LINE_NOTE) or "not to be read out" in text:  # a nudge, ask-again or a cut answer
            return Reply(text="Sorry, here it is.", audio=Tone(ANSWER_S, hz=AGAIN_HZ))
        return Reply(text="Hello, how can I help?", audio=Tone(GREETING_S, hz=GREETING_HZ))  # the greeting

    async def on_tool_result(self, tool_use_id: str, name: str, result: Any) -> Reply | None:
        self.log.append(f"tool result {name}")
        if name == "slow_lookup":
            return Reply(text="I found it.", audio=Tone(ANSWER_S, hz=TOOL_ANSWER_HZ))
        return None


def fault_for(model: str, fault: str) -> Any:
    kind = {"nova": NovaFault, "openai": OpenAIFault, "gemini": GeminiFault}[model]
    if fault == "stall":
        return kind.stall_mid_answer(answer=2, audio_s=0.5)
    if fault == "close":
        return kind.close_mid_answer(answer=2, audio_s=0.5)
    if fault == "never":
        return kind.never_answers()
    if fault == "throttled":
        return kind.throttled_open()
    return None


@tool
async def slow_lookup() -> str:
    """Looks the caller's question up (slowly)."""
    await asyncio.sleep(TOOL_S)
    return "found it"


TOOL_CALLS: set[str] = set()
"""Call SIDs whose agent gets ``slow_lookup`` as well."""


def agent_for(call: CallInfo, settings: Any) -> BidiAgent:
    """The default agent (``agent.factory.create_agent``); for a tool call, the same agent built the same way (its
    prompt, its model from ``create_model``, its time-limited tools) with ``slow_lookup`` added."""
    if call.call_sid not in TOOL_CALLS:
        return create_agent(call, settings)
    prompt = settings.system_prompt or system_prompt(call.from_number, call.parameters.get("purpose", ""))
    return BidiAgent(
        model=create_model(settings),
        tools=time_limited([end_conversation, slow_lookup], settings.tool_timeout_s),
        system_prompt=prompt,
        name="voicebot",
    )


@contextlib.asynccontextmanager
async def local_servers(models: list[str], folder: Path) -> Any:
    """The local servers, started, with the environment each model client reads pointing at them."""
    servers: dict[str, Any] = {}
    try:
        for model in models:
            server: Any = {"nova": LocalNova, "openai": LocalOpenAI, "gemini": LocalGemini}[model]()
            await server.start()
            servers[model] = server
            server.brain = ToneBrain()
            if model == "nova":
                os.environ.update(_FAKE_ENV)
                for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
                    os.environ.pop(name, None)
                os.environ["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"] = server.endpoint
                os.environ["AWS_CA_BUNDLE"] = str(server.ca_file)
            elif model == "openai":
                os.environ["OPENAI_BASE_URL"] = server.base_url
                os.environ["OPENAI_API_KEY"] = server.api_key
            else:
                os.environ["GOOGLE_API_KEY"] = "local-gemini-key-not-checked"
                for name in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_VERTEX_BASE_URL", "SSL_CERT_DIR"):
                    os.environ.pop(name, None)
                os.environ["GOOGLE_GEMINI_BASE_URL"] = server.base_url
                os.environ["SSL_CERT_FILE"] = str(server.ca_file)
        yield servers
    finally:
        for server in servers.values():
            await server.aclose()


# --- the caller side -------------------------------------------------------------------------------------


class Notes(QuietObserver):
    """One call's ``dead_air`` notes (and the rescue and check-in notes, for the details)."""

    def __init__(self) -> None:
        self.waits: list[dict[str, Any]] = []
        self.notes: list[tuple[float, str, str]] = []

    def note(self, kind: str, detail: str) -> None:
        if kind == "dead_air":
            self.waits.append(json.loads(detail))
        elif kind in ("rescue", "check_in", "hold_sound", "error", "hangup"):
            self.notes.append((time.monotonic(), kind, detail))


class Summaries(logging.Handler):
    """Each call's summary line (outcome, steps) and its warnings, by call SID."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.summary: dict[str, tuple[str, dict[str, int]]] = {}
        self.lines: dict[str, list[str]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if match := SUMMARY.search(message):
            steps = {name: int(count) for name, count in re.findall(r"(\w+)=(\d+)", match["steps"])}
            self.summary[match["sid"]] = (match["outcome"], steps)
        if record.levelno >= logging.WARNING and (sid := re.search(r"call=(CA\w+)", message)):
            self.lines.setdefault(sid.group(1), []).append(message[:200])


def caller_tone(seconds: float) -> bytes:
    t = np.arange(int(seconds * 8000)) / 8000
    return pcm16_to_ulaw((0.3 * 32767 * np.sin(2 * np.pi * CALLER_HZ * t)).astype("<i2").tobytes())


HOLD = load_hold_sound("") or b""
APOLOGY = load_apology()


@dataclass
class Frame:
    at: float
    kind: str
    """``quiet``, ``hold``, ``apology``, one of SPEECH_HZ's names, or ``other``."""


def classify(payload: bytes, at: float) -> Frame:
    samples = np.frombuffer(ulaw_to_pcm16(payload), dtype="<i2")
    if samples.size == 0 or int(np.max(np.abs(samples.astype(np.int32)))) < 64:
        return Frame(at, "quiet")
    if payload in HOLD:
        return Frame(at, "hold")
    if payload in APOLOGY:
        return Frame(at, "apology")
    hz = frame_hz(payload)
    for tone_hz, name in SPEECH_HZ.items():
        if abs(hz - tone_hz) <= 60:
            return Frame(at, name)
    return Frame(at, "other")


class Ear:
    """What the caller heard, classified frame by frame as it arrives."""

    def __init__(self, call: FakeTwilioCall) -> None:
        self.call = call
        self.frames: list[Frame] = []

    def update(self) -> list[Frame]:
        for heard in self.call.heard[len(self.frames) :]:
            self.frames.append(classify(heard.payload, heard.at))
        return self.frames

    def speech_after(self, at: float, kinds: set[str] | None = None) -> float:
        names = kinds or {SPEECH_HZ[hz] for hz in REAL_ANSWERS}
        return sum(0.02 for frame in self.update() if frame.at > at and frame.kind in names)

    def quiet_now(self) -> bool:
        frames = self.update()
        return not self.call.playing and (not frames or self.call.now() - frames[-1].at > 0.3)


async def listen(call: FakeTwilioCall, done: Callable[[], bool], timeout: float) -> bool:
    """Silence, as a phone line sends, until ``done()``, the line closes or ``timeout``."""
    deadline = time.monotonic() + timeout
    while not call.closed.is_set() and time.monotonic() < deadline:
        if done():
            return True
        await call.silence(0.1)
    return False


@dataclass
class CallResult:
    model: str
    fault: str
    fault_at: float = 0.0
    """When the fault struck, on the caller's clock (what the waits after it are counted from)."""
    first_heard_s: float | None = None
    answer_s: float | None = None
    recovered: bool = False
    apology_full: bool = False
    apology_any: bool = False
    goodbye: bool = False
    check_ins: int = 0
    hung_up_by_bot: bool = False
    waits: list[float] = field(default_factory=list)
    longest_quiet_s: float = 0.0
    """The caller's own measure: the longest stretch with nothing audible, from the fault to the recovery."""
    outcome: str = "?"
    steps: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


async def talk(call: FakeTwilioCall, ear: Ear, fault: str) -> dict[str, float]:
    """The caller's side of one call; returns the moments the result is measured from (caller clock)."""
    marks: dict[str, float] = {}
    await call.connect()
    greeted = await listen(call, lambda: ear.speech_after(0.0) >= 0.3 and ear.quiet_now(), PHASE_TIMEOUT_S)
    if not greeted:
        return marks
    if fault == "silent":
        marks["greeting_end"] = max(f.at for f in ear.update() if f.kind == "greeting") + 0.02
        await listen(call, lambda: False, 70.0)  # a minute and more of nothing; the bot should end the call
        return marks
    for question in ("q1", "q2"):
        await call.stream(caller_tone(1.0))
        asked = marks[question] = call.now()
        answered = await listen(call, lambda at=asked: ear.speech_after(at) >= 1.0 and ear.quiet_now(), PHASE_TIMEOUT_S)
        if not answered:
            return marks
    await call.silence(0.3)
    await call.stop()
    return marks


def measure(result: CallResult, ear: Ear, marks: dict[str, float]) -> None:
    frames = ear.update()
    fault = result.fault
    if fault in ("never", "throttled"):
        result.fault_at = 0.0  # the greeting is owed from the start
    elif fault == "silent":
        result.fault_at = marks.get("greeting_end", 0.0)
    elif fault in ("stall", "close"):
        asked = marks.get("q1", 0.0)
        first = next((f for f in frames if f.at > asked and f.kind != "quiet"), None)
        result.fault_at = asked
        if first is not None:  # the end of the contiguous run of answer audio the caller heard before the gap
            last = first
            for frame in frames[frames.index(first) + 1 :]:
                if frame.kind == "quiet" or frame.at - last.at > 0.05:
                    break
                last = frame
            result.fault_at = last.at + 0.02
    else:
        result.fault_at = marks.get("q1", 0.0)
    after = [f for f in frames if f.at > result.fault_at]
    audible = [f for f in after if f.kind != "quiet"]
    if audible:
        result.first_heard_s = audible[0].at - result.fault_at
    real = {SPEECH_HZ[hz] for hz in REAL_ANSWERS}
    answer = next((f for f in after if f.kind in real), None)
    if answer is not None:
        result.answer_s = answer.at - result.fault_at
        result.recovered = fault != "silent"
    heard = b"".join(frame.payload for frame in ear.call.heard)
    whole = APOLOGY[: len(APOLOGY) // 160 * 160]
    result.apology_full = whole in heard
    result.apology_any = APOLOGY[:1600] in heard
    result.goodbye = any(f.kind == "goodbye" for f in after)
    said = [f.at for f in after if f.kind == "check-in"]
    result.check_ins = sum(1 for i, at in enumerate(said) if i == 0 or at - said[i - 1] > 0.5)  # one per check-in
    result.hung_up_by_bot = not ear.call.hung_up and ear.call.closed.is_set()
    end = answer.at if answer is not None else (frames[-1].at if frames else result.fault_at)
    times = [result.fault_at] + [f.at for f in audible if f.at <= end] + [end]
    result.longest_quiet_s = max((b - a for a, b in itertools.pairwise(times)), default=0.0)


async def one_call(
    model: str, fault: str, index: int, server: Any, summaries: Summaries, base: str, notes: dict[str, Notes]
) -> CallResult:
    sid = f"CA{MODELS.index(model):02x}{FAULTS.index(fault):02x}{index:028x}"
    brain: ToneBrain = server.brain
    server.faults = type(server.faults)()  # nothing left over from an earlier call
    if (pushed := fault_for(model, fault)) is not None:
        server.faults.push(pushed)
    if fault == "tool":
        TOOL_CALLS.add(sid)
        brain.tool_turn_for.add(sid)
    result = CallResult(model, fault)
    call = FakeTwilioCall(f"ws://{base}/media-stream", call_sid=sid, stream_sid="MZ" + sid[2:])
    async with call:
        ear = Ear(call)
        marks = await talk(call, ear, fault)
        if not call.closed.is_set() and not call.hung_up:
            result.problems.append("the caller gave up waiting")
            with contextlib.suppress(Exception):
                await call.stop()
        deadline = time.monotonic() + 25
        while sid not in summaries.summary and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.2)
    brain.tool_turn_for.clear()
    measure(result, ear, marks)
    watched = notes.get(sid)
    result.waits = [wait["s"] for wait in watched.waits] if watched else []
    result.outcome, result.steps = summaries.summary.get(sid, ("no summary line", {}))
    if sid not in summaries.summary:
        result.problems.append("no summary line")
    return result


async def run_model(model: str, server: Any, faults: list[str], calls: int, summaries: Summaries) -> list[CallResult]:
    notes: dict[str, Notes] = {}

    def observe(call: CallInfo) -> Notes:
        notes[call.call_sid] = Notes()
        return notes[call.call_sid]

    settings = Settings(model=model, model_id=MODEL_IDS[model])  # every dead-air setting at its default
    app = create_app(settings, agent_factory=agent_for, observers=[observe])
    results: list[CallResult] = []
    async with serve_app(app, log_config=None) as base:
        for index in range(calls):
            for fault in faults:
                started = time.monotonic()
                result = await one_call(model, fault, index, server, summaries, base, notes)
                results.append(result)
                print(f"  {model} {fault} #{index + 1}: {result.outcome} in {time.monotonic() - started:.0f} s",
                      file=sys.stderr, flush=True)  # fmt: skip
                deadline = time.monotonic() + 10
                while app.state.sessions and time.monotonic() < deadline:
                    await asyncio.sleep(0.1)
                await asyncio.sleep(0.5)  # the model connections close before the next fault is pushed
    return results


# --- the report ------------------------------------------------------------------------------------------


def p50_max(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} / {max(values):.1f}" if values else "-"


def result_of(run: CallResult) -> str:
    if run.fault == "silent":
        said = f"{run.check_ins} check-in(s), goodbye" if run.goodbye else f"{run.check_ins} check-in(s), no goodbye"
        return said + (", bot hung up" if run.hung_up_by_bot else "")
    if run.recovered and not run.apology_any:
        return "recovered"
    if run.apology_full:
        return "recovered, then apology" if run.recovered else "apology (in full)"
    if run.apology_any:
        return "apology CUT"
    return "NEITHER"


HEADER = (
    "fault              | calls | dead air p50 / max | first heard after fault | answer after fault | "
    "result                               | steps                          | outcome"
)


def table(model: str, runs: list[CallResult], faults: list[str]) -> list[str]:
    lines = [f"\n{model}: local {model} through its real strands client, default dead-air settings", HEADER,
             "-" * len(HEADER)]  # fmt: skip
    for fault in faults:
        rows = [run for run in runs if run.fault == fault]
        if not rows:
            continue
        waits = [wait for run in rows for wait in run.waits]
        first = [run.first_heard_s for run in rows if run.first_heard_s is not None]
        answers = [run.answer_s for run in rows if run.answer_s is not None]
        results = sorted({result_of(run) for run in rows})
        totals: dict[str, int] = {}
        for run in rows:
            for name, count in run.steps.items():
                totals[name] = totals.get(name, 0) + count
        steps = " ".join(f"{name}={totals[name]}" for name in STEPS if totals.get(name)) or "-"
        if len(rows) > 1 and totals:
            steps += f" (over {len(rows)})"
        outcomes = ", ".join(sorted({run.outcome for run in rows}))
        lines.append(
            f"{FAULT_NAMES[fault]:<18} | {len(rows):>5} | {p50_max(waits):>18} | {p50_max(first):>23} | "
            f"{p50_max(answers):>18} | {'; '.join(results):<36} | {steps:<30} | {outcomes}"
        )
    return lines


def flags(runs: list[CallResult]) -> list[str]:
    found: list[str] = []
    for run in runs:
        name = f"{run.model} / {FAULT_NAMES[run.fault]}"
        if run.fault != "silent" and run.longest_quiet_s > 5.0:
            found.append(f"{name}: the caller heard nothing for {run.longest_quiet_s:.1f} s after the fault")
        long_waits = [wait for wait in run.waits if wait > 5.0]
        if long_waits:
            found.append(f"{name}: dead-air wait(s) over 5 s: {', '.join(f'{w:.1f} s' for w in long_waits)}")
        if run.fault not in ("none", "silent") and not run.recovered and not run.apology_full:
            found.append(f"{name}: neither recovered nor apologised in full ({result_of(run)})")
        if run.fault == "none" and any(run.steps.get(step) for step in STEPS):
            found.append(f"{name}: steps taken in a normal call: {run.steps}")
        if run.fault == "silent" and not (run.goodbye and run.hung_up_by_bot):
            found.append(f"{name}: the silent caller was not said goodbye to and hung up on ({result_of(run)})")
        found += [f"{name}: {problem}" for problem in run.problems]
    return found


async def main_async(args: argparse.Namespace) -> None:
    models = [m for m in MODELS if args.model in ("all", m)]
    faults = [f for f in FAULTS if not args.fault or f in args.fault]
    summaries = Summaries()
    logging.getLogger().addHandler(summaries)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="voicebot-dead-air-") as scratch:
        async with local_servers(models, Path(scratch)) as servers:
            per_model = await asyncio.gather(
                *(run_model(model, servers[model], faults, args.calls, summaries) for model in models)
            )
    print(f"\n{platform.platform()} | {os.cpu_count()} CPUs | Python {platform.python_version()} | "
          f"{args.calls} call(s) per model and fault | {time.monotonic() - started:.0f} s")  # fmt: skip
    print("dead air: the bridge's dead_air notes (every wait of those calls), seconds; first heard / answer: seconds "
          "from the fault (the question's end; the gap in a stalled answer; the call's start for never/throttled; "
          "the greeting's end for a silent caller) to the first audible frame (hold sound included) / the real "
          "answer")  # fmt: skip
    everything: list[CallResult] = []
    for model, runs in zip(models, per_model, strict=True):
        everything += runs
        print("\n".join(table(model, runs, faults)))
    found = flags(everything)
    print("\nflags:" if found else "\nflags: none")
    for line in found:
        print(f"  - {line}")
    if args.verbose:
        for sid, lines in summaries.lines.items():
            print(f"\n{sid}:\n  " + "\n  ".join(lines[:12]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=[*MODELS, "all"], default="all")
    parser.add_argument("--fault", nargs="+", choices=FAULTS, help="only these faults (default: all)")
    parser.add_argument("--calls", type=int, default=1, help="calls per model and fault")
    parser.add_argument("--verbose", action="store_true", help="print each call's warnings")
    args = parser.parse_args()
    for name in ("NO_PROXY", "no_proxy"):  # loopback past any proxy (websockets honours the proxy variables)
        os.environ[name] = ",".join(filter(None, [os.environ.get(name, ""), "127.0.0.1", "localhost"]))
    logging.basicConfig(level=logging.WARNING)
    root = logging.getLogger()
    logging.getLogger("telephony").setLevel(logging.INFO)  # to the summaries; the console shows errors only
    root.handlers[0].setLevel(logging.CRITICAL)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()

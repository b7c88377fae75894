"""``voicebot replay``: play a recorded call's caller side (or a WAV) against a server, exactly as Twilio would.

The simulated caller POSTs ``/twiml`` (signed when ``TWILIO_AUTH_TOKEN`` is set), follows the
``<Stream>`` it gets back (or ``--url``), signs the upgrade, streams the caller's 20 ms frames at real
time (or ``--speed`` times faster), echoes marks when the audio before them would have played, honours
``clear``, and prints a progress line and a summary. ``--out DIR`` records the call as the caller saw
it, in the same format as the server's recordings.

``--offline`` needs no server: it starts the real app on a loopback port with the recorded agent side
(:class:`agent.replay_model.ReplayModel`) and checks that the bridge sends Twilio what it sent when
the call was recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import re
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from telephony.call_info import CallInfo
from telephony.config import Settings
from telephony.recording.format import EVENTS_FILE, Recording, RecordingError
from telephony.recording.recorder import CallRecorder, folder_name
from telephony.simulation.caller import AnswerError, SimulatedCaller, StreamTarget, answer, twilio_signature
from telephony.simulation.caller_script import CallerScript, Linger, play
from telephony.simulation.local_server import serve_app
from telephony.simulation.replay_report import ReplayReport

if TYPE_CHECKING:
    from strands.bidi import BidiAgent

    from agent.replay_model import ReplayModel

PROGRESS_INTERVAL_S = 0.25
PLAIN_PROGRESS_INTERVAL_S = 5.0
CLOSE_WAIT_S = 5.0
CATCH_UP_TIMEOUT_S = 10.0
_MARK_SUFFIX = re.compile(r"-\d+$")


@dataclass(frozen=True)
class ReplayOptions:
    source: Path
    url: str | None = None
    """WebSocket URL to connect to instead of the ``<Stream url>`` from ``/twiml``."""
    server: str | None = None
    """Base URL to POST ``/twiml`` to (default: from ``url``, else http://VOICEBOT_HOST:VOICEBOT_PORT)."""
    speed: float = 1.0
    out: Path | None = None
    offline: bool = False
    record: Path | None = None
    """Offline only: record the replayed call on the bridge's side too (a fixture of today's behaviour)."""


@dataclass
class ReplayResult:
    report: ReplayReport
    comparison: OutboundComparison | None = None
    recorded_in: Path | None = None
    recording: Recording | None = None


def load_source(source: Path) -> tuple[CallerScript, Recording | None]:
    """A recording folder or ``events.jsonl`` (its caller side), or a WAV file (the caller's voice)."""
    if source.suffix.lower() == ".wav":
        return CallerScript.from_wav(source), None
    recording = Recording.load(source)
    return CallerScript.from_recording(recording), recording


def twiml_server(options: ReplayOptions, settings: Settings) -> str:
    """Where ``/twiml`` is: ``--server``, else the host of ``--url``, else the configured local address."""
    if options.server:
        return options.server
    if options.url:
        scheme, rest = options.url.split("://", 1)
        return f"{'https' if scheme == 'wss' else 'http'}://{rest.split('/', 1)[0]}"
    return f"http://{settings.host}:{settings.port}"


def twilio_form(call: dict[str, Any]) -> dict[str, str]:
    """The voice webhook's fields, as Twilio posts them for a ringing inbound call."""
    return {
        "CallSid": str(call.get("call_sid", "")),
        "AccountSid": str(call.get("account_sid", "")),
        "From": str(call.get("from", "")),
        "To": str(call.get("to", "")),
        "CallStatus": "ringing",
        "Direction": "inbound",
        "ApiVersion": "2010-04-01",
    }


def make_caller(
    script: CallerScript, target: StreamTarget, url: str | None, settings: Settings, speed: float
) -> SimulatedCaller:
    """A caller for ``target`` (its parameters over the recorded ones), signed when a token is configured."""
    recorded = {k: v for k, v in (script.call.get("parameters") or {}).items() if not k.startswith("voicebot")}
    headers = {}
    if settings.twilio_auth_token:
        headers["X-Twilio-Signature"] = twilio_signature(settings.twilio_auth_token, target.url)
    return SimulatedCaller(
        url or target.url,
        call_sid=str(script.call.get("call_sid")),
        stream_sid=str(script.call.get("stream_sid")),
        account_sid=str(script.call.get("account_sid") or "AC" + "0" * 32),
        parameters={**recorded, **target.parameters},
        speed=speed,
        headers=headers,
    )


async def replay(options: ReplayOptions, settings: Settings, progress: TextIO | None = None) -> ReplayResult:
    """Run one replay; raises ``RecordingError``/``AnswerError`` with what to fix."""
    script, recording = load_source(options.source)
    if options.offline:
        if recording is None:
            raise ValueError("--offline replays a recording's agent side: give it a recording, not a WAV file")
        return await _replay_offline(options, settings, script, recording, progress)
    server = twiml_server(options, settings)
    target = await answer(server, twilio_form(script.call), settings.twilio_auth_token, settings.public_url)
    caller = make_caller(script, target, options.url, settings, options.speed)
    linger = Linger(quiet_s=None) if recording is not None else Linger()
    return await _call(caller, script, lambda: play(caller, script, linger), options.out, progress)


async def _call(
    caller: SimulatedCaller,
    script: CallerScript,
    perform: Callable[[], Awaitable[None]],
    out: Path | None,
    progress: TextIO | None,
) -> ReplayResult:
    """Open the stream, ``perform`` the caller's part, wait for the hang-up; record and report it."""
    recorder = _recorder(caller, script, out) if out else None
    caller.tap = recorder
    report = ReplayReport(caller)
    async with caller:
        await caller.connect()
        ticker = asyncio.create_task(_show_progress(report, progress)) if progress else None
        try:
            await perform()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(caller.closed.wait(), CLOSE_WAIT_S)  # the bot closes after our stop
        finally:
            if ticker is not None:
                ticker.cancel()
                await asyncio.gather(ticker, return_exceptions=True)
                _finish_progress(report, progress)
    if recorder is not None:
        by = "caller" if caller.hung_up else "agent"
        await recorder.call_ended("replay finished", by)
    return ReplayResult(report=report.update(), recorded_in=recorder.folder if recorder else None)


def _recorder(caller: SimulatedCaller, script: CallerScript, out: Path) -> CallRecorder:
    call = CallInfo(
        call_sid=caller.call_sid,
        stream_sid=caller.stream_sid,
        account_sid=caller.account_sid,
        from_number=str(script.call.get("from", "")),
        to_number=str(script.call.get("to", "")),
        parameters={k: v for k, v in (caller.parameters or {}).items() if not k.startswith("voicebot")},
    )
    return CallRecorder.start(call, folder_name(out, call))


async def _show_progress(report: ReplayReport, stream: TextIO) -> None:
    """A live line on a terminal (rewritten in place), an occasional line otherwise."""
    live = stream.isatty()
    interval = PROGRESS_INTERVAL_S if live else PLAIN_PROGRESS_INTERVAL_S
    while True:
        await asyncio.sleep(interval)
        line = report.update().progress_line()
        stream.write(f"\r{line}" if live else f"{line}\n")
        stream.flush()


def _finish_progress(report: ReplayReport, stream: TextIO) -> None:
    if stream.isatty():
        stream.write(f"\r{report.update().progress_line()}\n")
        stream.flush()


# --- offline: the recorded agent side through the real bridge ----------------------------------------


async def _replay_offline(
    options: ReplayOptions, settings: Settings, script: CallerScript, recording: Recording, progress: TextIO | None
) -> ReplayResult:
    from telephony.app import create_app

    models: list[ReplayModel] = []
    make_agent = replay_agent_factory(recording)

    def factory(call: CallInfo) -> Any:
        agent = make_agent(call)
        models.append(agent.model)
        return agent

    local = offline_settings(settings, recording, options.record)
    app = create_app(local, agent_factory=factory)
    async with serve_app(app) as base:
        target = await answer(f"http://{base}", twilio_form(script.call))
        caller = make_caller(script, target, f"ws://{base}/media-stream", local, options.speed)
        perform = partial(play_against_replay, caller, recording, lambda: models[-1] if models else None)
        result = await _call(caller, script, perform, options.out, progress)
    replayed = [item.message for item in caller.received]
    result.comparison = compare_outbound(recording.twilio_messages("twilio_out"), replayed)
    result.recording = recording
    return result


def replay_agent_factory(recording: Recording) -> Callable[[CallInfo], BidiAgent]:
    """An agent factory (as for ``voicebot serve --agent``) whose agent replays ``recording``'s agent side.

    Its tools are ``end_conversation`` and, if the recorded call was transferred, ``transfer_call`` to the
    same destination, so the recorded tool calls act again.
    """
    from strands.bidi import BidiAgent

    from agent.replay_model import ReplayModel
    from agent.tools import end_conversation, transfer_tool

    transfers = [record.get("detail", "") for record in recording.of_kind("note") if record.get("note") == "transfer"]

    def create_agent(call: CallInfo) -> BidiAgent:
        tools: list[Any] = [end_conversation]
        if transfers:
            tools.append(transfer_tool(str(transfers[0])))
        model = ReplayModel(recording.records, recording.model_rates)
        return BidiAgent(model=model, tools=tools, system_prompt="Replay of a recorded call.")

    return create_agent


async def play_against_replay(
    caller: SimulatedCaller, recording: Recording, model: Callable[[], ReplayModel | None]
) -> None:
    """The caller side of ``recording``, against a bridge whose agent replays the same recording.

    Lined up with the recorded call however slowly this machine runs: the first frame goes once the model
    has started (frames the recorded bridge dropped before its agent existed are skipped), and the caller
    hangs up only once the model has been given the caller audio it had been given then, and the bridge has
    sent as many messages as it had sent by then.
    """
    await wait_for(lambda: (current := model()) is not None and current.started)
    replay_model = model()
    assert replay_model is not None
    heard = float(((recording.end or {}).get("input") or {}).get("audio_s", 0.0))
    sent = sent_before_hang_up(recording)

    def caught_up() -> bool:
        return replay_model.audio_seconds >= heard - 1e-5 and len(caller.received) >= sent

    async def wait_until_caught_up() -> None:
        try:
            await wait_for(caught_up, CATCH_UP_TIMEOUT_S)
        except TimeoutError:
            pass  # hang up anyway: the comparison shows what the bridge did not send

    script = CallerScript.from_recording(recording).without_first_frames(recording.frames_before_model)
    await play(caller, script, Linger(quiet_s=None), before_hang_up=wait_until_caught_up)


def sent_before_hang_up(recording: Recording) -> int:
    """How many messages the bridge had sent when the caller's ``stop`` arrived (all of them if none did)."""
    sent = 0
    for record in recording.records:
        message = record.get("message")
        if record.get("kind") == "twilio_in" and isinstance(message, dict) and message.get("event") == "stop":
            break
        sent += record.get("kind") == "twilio_out"
    return sent


def offline_settings(settings: Settings, recording: Recording, record: Path | None = None) -> Settings:
    """The environment's call behaviour, with no Twilio account and the recorded greeting (if any).

    Caller audio reaches the replay model frame by frame (20 ms sends): the model re-emits each event
    once it has been given as much audio as when it was recorded, and whole frames hit that point
    exactly whatever chunk size the recording was made with.
    """
    return replace(
        settings,
        send_chunk_ms=20,
        send_chunk_speaking_ms=20,
        public_url=None,
        twilio_account_sid=None,
        twilio_auth_token=None,
        host="127.0.0.1",
        greeting=recorded_greeting(recording),
        record_dir=str(record) if record else None,
    )


def recorded_greeting(recording: Recording) -> str:
    """The text the bridge gave the agent before anything from the caller (the configured greeting)."""
    for record in recording.records:
        message = record.get("message")
        if record.get("kind") == "twilio_in" and isinstance(message, dict) and message.get("event") == "dtmf":
            return ""
        if record.get("kind") == "agent_text":
            return str(record.get("text", ""))
    return ""


async def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the replayed agent was not ready within {timeout:g}s")
        await asyncio.sleep(0.005)


# --- did the bridge send the same thing? -------------------------------------------------------------


@dataclass(frozen=True)
class OutboundComparison:
    """The bridge's messages to Twilio, recorded vs replayed, compared in order (mark numbers ignored)."""

    recorded: list[tuple[str, str]]
    replayed: list[tuple[str, str]]

    @property
    def first_difference(self) -> int | None:
        for index, (old, new) in enumerate(zip(self.recorded, self.replayed, strict=False)):
            if old != new:
                return index
        if len(self.recorded) != len(self.replayed):
            return min(len(self.recorded), len(self.replayed))
        return None

    @property
    def matches(self) -> bool:
        return self.first_difference is None

    def count(self, event: str) -> int:
        """Replayed messages of one kind."""
        return sum(1 for kind, _ in self.replayed if kind == event)

    def describe(self) -> str:
        counts = ", ".join(
            _plural(self.count(kind), noun) for kind, noun in (("media", "frame"), ("mark", "mark"), ("clear", "clear"))
        )
        index = self.first_difference
        if index is None:
            return f"bridge output matches the recording ({counts})"
        old = _describe(self.recorded, index)
        new = _describe(self.replayed, index)
        return f"bridge output DIFFERS from the recording at message {index + 1}: recorded {old}, replayed {new}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _describe(shape: list[tuple[str, str]], index: int) -> str:
    if index >= len(shape):
        return "nothing more"
    kind, detail = shape[index]
    frames = sum(1 for item in shape[:index] if item[0] == "media")
    return f"{kind}{f' {detail!r}' if kind == 'mark' else ''} after {frames} frames"


def outbound_shape(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each message to Twilio as (event, what matters): a frame's audio, a mark's label, nothing for clear."""
    shape = []
    for message in messages:
        event = str(message.get("event"))
        if event == "media":
            payload = (message.get("media") or {}).get("payload", "")
            shape.append((event, str(payload)))
        elif event == "mark":
            shape.append((event, _MARK_SUFFIX.sub("", str((message.get("mark") or {}).get("name", "")))))
        else:
            shape.append((event, ""))
    return shape


def compare_outbound(recorded: list[dict[str, Any]], replayed: list[dict[str, Any]]) -> OutboundComparison:
    return OutboundComparison(outbound_shape(recorded), outbound_shape(replayed))


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


# --- the command line --------------------------------------------------------------------------------


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

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

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from telephony.call_info import CallInfo
from telephony.config import Settings
from telephony.recording.format import Recording
from telephony.recording.recorder import CallRecorder, folder_name
from telephony.simulation.caller.script import CallerScript, Linger, play
from telephony.simulation.caller.simulated_caller import SimulatedCaller, StreamTarget, answer, twilio_signature
from telephony.simulation.local_app.loopback import serve_app
from telephony.simulation.replay.comparison import OutboundComparison, compare_outbound
from telephony.simulation.replay.offline import offline_settings, play_against_replay, replay_agent_factory
from telephony.simulation.replay.report import ReplayReport
from telephony.twilio.parameters import public_only

if TYPE_CHECKING:
    from agent.replay_model import ReplayModel

PROGRESS_INTERVAL_S = 0.25
PLAIN_PROGRESS_INTERVAL_S = 5.0
CLOSE_WAIT_S = 5.0
CATCH_UP_TIMEOUT_S = 10.0


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
    recorded = public_only(script.call.get("parameters") or {})
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
            if ticker is not None and progress is not None:
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
        parameters=public_only(caller.parameters or {}),
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
        models.append(cast("ReplayModel", agent.model))  # replay_agent_factory builds its agents on one
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

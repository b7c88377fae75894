"""`voicebot demo`: a whole phone call on this machine, no accounts, no network.

The real server runs in-process with the offline voice model (pocketsphinx + espeak-ng); a simulated
Twilio caller posts to ``/twiml``, follows its ``<Stream>`` and talks through 8 kHz μ-law both
ways, in a different espeak-ng voice from the bot's. The conversation is printed as it happens and
the call is recorded (WAVs, transcript, events) to a folder the command names.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from telephony.app import create_app
from telephony.bridge.observer import QuietObserver
from telephony.call_info import CallInfo
from telephony.config import Settings
from telephony.recording.recorder import recorder_factory
from telephony.simulation.caller.simulated_caller import SimulatedCaller, answer
from telephony.simulation.caller.voice import CALLER_RATE, Voice
from telephony.simulation.local_app.loopback import serve_app
from telephony.simulation.replay.report import ReplayReport

QUIET_BEFORE_SPEAKING_S = 0.8
"""How long the bot must have been silent before the scripted caller answers it."""
CALL_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class CallerLine:
    text: str
    over_the_bot: bool = False
    """Say it while the bot is still talking (a barge-in), instead of waiting for it to finish."""


DEMO_SCRIPT = (
    CallerLine("hello"),
    CallerLine("tell me a joke"),
    CallerLine("what time is it", over_the_bot=True),
    CallerLine("goodbye"),
)


class Printer(QuietObserver):
    """A CallObserver that prints the conversation as it happens (who said what, barge-ins, tools)."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._started = time.monotonic()

    def _say(self, text: str) -> None:
        print(f"  {time.monotonic() - self._started:6.2f} s  {text}", file=self._out, flush=True)

    def model_audio(self, input_rate: int, output_rate: int) -> None:
        self._say(f"[bot connected: hears {input_rate} Hz, speaks {output_rate} Hz]")

    def agent_event(self, event: Any) -> None:
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "bidi_transcript_block":
            who = "caller" if event.get("role") == "user" else "bot   "
            self._say(f"{who}: {event.get('transcript', '').strip()}")
        elif kind == "bidi_tool_use_blocks":
            for use in event.get("tool_uses") or []:
                self._say(f"[tool call: {use.get('name')} {use.get('input') or ''}]")

    def note(self, kind: str, detail: str) -> None:
        if kind == "barge_in":
            self._say("[barge-in: the caller talked over the bot; Twilio told to clear its audio]")
        elif kind == "hangup":
            self._say(f"[hang-up: {detail}]")
        elif kind == "error":
            self._say(f"[error: {detail}]")

    async def call_ended(self, reason: str, ended_by: str) -> None:
        self._say(f"[call ended by {ended_by}: {reason}]")


async def run_demo(
    settings: Settings,
    record_dir: Path,
    interactive: bool = False,
    out: TextIO = sys.stdout,
    script: tuple[CallerLine, ...] = DEMO_SCRIPT,
) -> int:
    """Place one simulated call against the offline bot; returns the exit code."""
    from agent.offline.factory import create_agent

    local = replace(settings, model="local", public_url=None, twilio_auth_token=None, twilio_account_sid=None)

    def agent_factory(call: CallInfo) -> Any:
        return create_agent(call, local)

    printer = Printer(out)
    app = create_app(local, agent_factory=agent_factory, observers=[recorder_factory(record_dir), lambda call: printer])
    quiet = logging.getLogger("telephony")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the printer tells the story; no server chatter
    try:
        return await _call(app, record_dir, interactive, out, script)
    finally:
        quiet.setLevel(level)


async def _call(app: Any, record_dir: Path, interactive: bool, out: TextIO, script: tuple[CallerLine, ...]) -> int:
    voice = await asyncio.to_thread(Voice)
    print("voicebot demo: a simulated phone call to the offline bot (8 kHz μ-law, Twilio's protocol)", file=out)
    async with serve_app(app) as base:
        target = await answer(f"http://{base}", {"CallSid": "CA" + "d" * 32, "From": "+15550100", "To": "+15550199"})
        url = target.url.replace("wss://", "ws://", 1)
        caller = SimulatedCaller(url, call_sid="CA" + "d" * 32, parameters=target.parameters)
        async with caller:
            await caller.connect()
            line = PhoneLine(caller)
            try:
                async with asyncio.timeout(CALL_TIMEOUT_S):
                    if interactive:
                        await talk_interactively(line, voice, out)
                    else:
                        await talk(line, voice, script)
                    await caller.closed.wait()
            except TimeoutError:
                print(f"the call did not end within {CALL_TIMEOUT_S:.0f} s: hanging up", file=out)
            finally:
                line.close()
                if not caller.closed.is_set():
                    await caller.stop()
        report = ReplayReport(caller)
        await asyncio.sleep(0.5)  # the server finishes the recording
    print("\nsummary:", file=out)
    for summary_line in report.summary():
        print(f"  {summary_line}", file=out)
    folders = sorted(record_dir.glob("*"), key=lambda path: path.stat().st_mtime)
    if folders:
        print(f"  recording: {folders[-1]} (call.wav: caller left, bot right; transcript.json)", file=out)
    return 0


class PhoneLine:
    """Keeps the caller's side of the line going: speech when there is some, silence otherwise,
    one 20 ms frame at a time (Twilio sends frames continuously, even when nobody speaks)."""

    def __init__(self, caller: SimulatedCaller) -> None:
        self.caller = caller
        self._speech = bytearray()
        self._task = asyncio.create_task(self._run())

    def say(self, ulaw: bytes) -> None:
        self._speech += ulaw

    @property
    def speaking(self) -> bool:
        return bool(self._speech)

    def close(self) -> None:
        self._task.cancel()

    async def _run(self) -> None:
        started = time.monotonic()
        frame = 0
        while not self.caller.closed.is_set():
            chunk = bytes(self._speech[:160]) if self._speech else b"\xff" * 160
            del self._speech[:160]
            await self.caller.media(chunk.ljust(160, b"\xff"))
            frame += 1
            await asyncio.sleep(max(0.0, started + frame * 0.02 - time.monotonic()))


async def until_bot_quiet(line: PhoneLine, quiet_s: float = QUIET_BEFORE_SPEAKING_S) -> None:
    """Wait until the bot has said something and then been silent for ``quiet_s``."""
    quiet_since: float | None = None
    while not line.caller.closed.is_set():
        if line.caller.playing or line.speaking:
            quiet_since = None
        elif line.caller.heard:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= quiet_s:
                return
        await asyncio.sleep(0.05)


async def until_bot_talking(line: PhoneLine, into_s: float = 1.0) -> None:
    """Wait until the bot has been talking for ``into_s`` (to talk over it)."""
    talking_since: float | None = None
    while not line.caller.closed.is_set():
        if line.caller.playing:
            talking_since = talking_since or time.monotonic()
            if time.monotonic() - talking_since >= into_s:
                return
        else:
            talking_since = None
        await asyncio.sleep(0.05)


async def talk(line: PhoneLine, voice: Voice, script: tuple[CallerLine, ...]) -> None:
    for index, caller_line in enumerate(script):
        speech = await voice.say(caller_line.text)
        if caller_line.over_the_bot:
            await until_bot_talking(line)
        else:
            await until_bot_quiet(line)
        if line.caller.closed.is_set():
            return
        line.say(speech)
        if caller_line.over_the_bot and index + 1 < len(script):
            await asyncio.sleep(len(speech) / CALLER_RATE)


async def talk_interactively(line: PhoneLine, voice: Voice, out: TextIO) -> None:
    print("type what the caller says (Enter to send, an empty line or 'bye' ends your side)", file=out)
    while not line.caller.closed.is_set():
        text = (await asyncio.to_thread(sys.stdin.readline)).strip()
        if not text:
            return
        line.say(await voice.say(text))

"""The caller of a scenario: says its lines in the caller's voice, presses keys, talks over the bot, hangs up.

It keeps the line going as Twilio does (a 20 ms frame every 20 ms, silence when it says nothing) and
notes, for each step, when it happened in the caller's time and which media ``timestamp`` its first
frame carried, so the bot's reaction can be found in the server's recording (barge-in → ``clear``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from telephony.codec import FRAME_BYTES
from telephony.simulation.caller.script import read_wav_as_ulaw
from telephony.simulation.caller.simulated_caller import FRAME_SECONDS, ULAW_SILENCE, SimulatedCaller
from telephony.simulation.caller.voice import Voice
from telephony.simulation.scenarios.goal_caller import CallerBrain, LiveTranscript
from telephony.simulation.scenarios.scenario import CallerStep

QUIET_BEFORE_SPEAKING_S = 0.8
"""How long the bot must have been silent before the caller takes its turn."""
GOODBYE_WAIT_S = 8.0
"""After its last step, how long the caller stays on the line for the bot to hang up."""


@dataclass
class StepLog:
    """What the caller did at one step: caller time, and the media ``timestamp`` of its first frame."""

    step: CallerStep
    at: float
    timestamp: int | None = None
    waited_out: bool = False
    """The bot never answered within the caller's patience; the caller went on anyway."""


class CallerLine:
    """The caller's side of the line: speech when there is some, silence otherwise, one frame every 20 ms."""

    def __init__(self, caller: SimulatedCaller) -> None:
        self.caller = caller
        self._speech = bytearray()
        self._first_frame: asyncio.Future[int] | None = None
        self._task = asyncio.create_task(self._run(), name="scenario-caller-line")

    def say(self, ulaw: bytes) -> asyncio.Future[int]:
        """Queue speech; the future gets the media ``timestamp`` of its first frame once sent."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if not self._speech:
            self._first_frame = future
        else:
            future.cancel()
        self._speech += ulaw
        return future

    @property
    def speaking(self) -> bool:
        return bool(self._speech)

    async def close(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        started = time.monotonic()
        frame = 0
        while not self.caller.closed.is_set():
            chunk = bytes(self._speech[:FRAME_BYTES]) if self._speech else ULAW_SILENCE
            del self._speech[:FRAME_BYTES]
            try:
                await self.caller.media(chunk.ljust(FRAME_BYTES, b"\xff"))
            except Exception:  # noqa: BLE001 - the socket closed under us: the call is over
                return
            if self._first_frame is not None and chunk != ULAW_SILENCE:
                if not self._first_frame.done():
                    self._first_frame.set_result(self.caller.last_timestamp)
                self._first_frame = None
            frame += 1
            await asyncio.sleep(max(0.0, started + frame * FRAME_SECONDS - time.monotonic()))


@dataclass
class ScenarioCaller:
    """Performs a scenario's caller steps (or a goal caller's turns) on a :class:`CallerLine`."""

    line: CallerLine
    voice: Voice
    patience_s: float
    log: list[StepLog] = field(default_factory=list)
    _spoke_until: float = 0.0

    @property
    def caller(self) -> SimulatedCaller:
        return self.line.caller

    async def perform(self, steps: list[CallerStep]) -> None:
        for index, step in enumerate(steps):
            if self.caller.closed.is_set():
                return
            await self.step(step, last=index == len(steps) - 1)
        await self.stay_for_goodbye()

    async def step(self, step: CallerStep, last: bool = False) -> None:
        audio = await self._audio(step)
        waited_out = False
        if step.over_the_bot_ms is not None:
            waited_out = not await self.until_bot_talking(step.over_the_bot_ms / 1000)
        elif step.wait:
            waited_out = not await self.until_bot_quiet()
        if self.caller.closed.is_set():
            return
        entry = StepLog(step, self.caller.now(), waited_out=waited_out)
        self.log.append(entry)
        if step.kind == "press":
            for digit in step.text:
                await self.caller.dtmf(digit)
                await asyncio.sleep(0.15)
        elif step.kind == "silence":
            await asyncio.sleep(step.seconds)
        elif step.kind == "hang_up":
            await self.caller.stop()
        elif audio:
            await self._speak(audio, entry, wait_until_said=last or step.over_the_bot_ms is not None)

    async def _audio(self, step: CallerStep) -> bytes:
        if step.kind == "say":
            return await self.voice.say(step.text)
        if step.kind == "play" and step.audio is not None:
            return await asyncio.to_thread(read_wav_as_ulaw, step.audio)
        return b""

    async def _speak(self, audio: bytes, entry: StepLog, wait_until_said: bool = False) -> None:
        first = self.line.say(audio)
        seconds = len(audio) / 8000
        self._spoke_until = time.monotonic() + seconds
        try:
            entry.timestamp = await asyncio.wait_for(first, 1.0)
        except (TimeoutError, asyncio.CancelledError):
            entry.timestamp = None
        if wait_until_said:
            await asyncio.sleep(max(0.0, self._spoke_until - time.monotonic()))

    async def say(self, text: str) -> StepLog:
        """Say ``text`` now (a goal caller's line)."""
        entry = StepLog(CallerStep("say", text=text), self.caller.now())
        self.log.append(entry)
        await self._speak(await self.voice.say(text), entry)
        return entry

    async def until_bot_quiet(self, quiet_s: float = QUIET_BEFORE_SPEAKING_S) -> bool:
        """Wait until the bot has answered and then been silent ``quiet_s``; False if it never answered in time."""
        heard_before = len(self.caller.heard)
        began = time.monotonic()
        quiet_since: float | None = None
        while not self.caller.closed.is_set():
            now = time.monotonic()
            if self.caller.playing or self.line.speaking:
                quiet_since = None
            elif len(self.caller.heard) > heard_before:
                quiet_since = quiet_since or now
                if now - quiet_since >= quiet_s:
                    return True
            elif now - max(began, self._spoke_until) >= self.patience_s:
                return False
            await asyncio.sleep(0.05)
        return True

    async def until_bot_talking(self, into_s: float) -> bool:
        """Wait until the bot has been talking for ``into_s``; False if it did not talk within the caller's patience."""
        talking_since: float | None = None
        deadline = time.monotonic() + self.patience_s
        while not self.caller.closed.is_set():
            now = time.monotonic()
            if self.caller.playing and now >= self._spoke_until:
                talking_since = talking_since or now
                if now - talking_since >= into_s:
                    return True
            else:
                talking_since = None
                if now > deadline:
                    return False
            await asyncio.sleep(0.01)
        return True

    async def stay_for_goodbye(self) -> None:
        """After the last step: stay on until the bot hangs up, or hang up once it has been quiet a while."""
        if self.caller.closed.is_set():
            return
        try:
            await asyncio.wait_for(self.caller.closed.wait(), GOODBYE_WAIT_S)
            return
        except TimeoutError:
            pass
        if await self.until_bot_quiet(quiet_s=2.0) and not self.caller.closed.is_set():
            await self.caller.stop()
        elif not self.caller.closed.is_set():
            await self.caller.stop()

    async def perform_goal(self, brain: CallerBrain, transcript: LiveTranscript, max_turns: int) -> None:
        """A goal caller: after each bot turn, its brain reads the transcript and says the next line (or hangs up)."""
        for _ in range(max_turns):
            await self.until_bot_quiet()
            if self.caller.closed.is_set():
                return
            line = await brain.next_line(transcript.turns())
            if line is None:
                await self.caller.stop()
                return
            await self.say(line)
        await self.stay_for_goodbye()

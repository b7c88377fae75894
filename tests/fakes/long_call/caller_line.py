"""The long call's caller: :func:`talk` follows a :class:`Plan` on a continuous line (silence between words)."""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from telephony.codec import ulaw_to_pcm16
from telephony.simulation.caller.simulated_caller import FRAME_SECONDS, SimulatedCaller
from tests.fakes.long_call.conversation import LOOKUP_S, Plan, Utterance


def tone_ulaw(hz: float, seconds: float, amplitude: float = 0.3) -> bytes:
    from telephony.codec import pcm16_to_ulaw

    count = round(seconds / FRAME_SECONDS) * 160
    wave = amplitude * 32767 * np.sin(2 * math.pi * hz * np.arange(count) / 8000)
    return pcm16_to_ulaw(wave.astype("<i2").tobytes())


def voiced(frame: bytes) -> bool:
    samples = np.frombuffer(ulaw_to_pcm16(frame), dtype="<i2").astype(np.float64)
    return float(np.sqrt(np.mean(samples**2))) > 300.0


class Line:
    """The caller's side of the line: a frame every 20 ms (of the caller's ``speed``), speech or silence."""

    def __init__(self, caller: SimulatedCaller) -> None:
        self.caller = caller
        self._speech = bytearray()
        self._spoken = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def __enter__(self) -> Line:
        self._task = asyncio.create_task(self._run())
        return self

    def __exit__(self, *_: Any) -> None:
        if self._task is not None:
            self._task.cancel()

    async def say(self, ulaw: bytes) -> float:
        """Say ``ulaw`` (whole frames); returns when the last frame went out (caller time)."""
        self._spoken.clear()
        self._speech += ulaw
        spoken = asyncio.ensure_future(self._spoken.wait())
        closed = asyncio.ensure_future(self.caller.closed.wait())
        await asyncio.wait({spoken, closed}, return_when=asyncio.FIRST_COMPLETED)
        for waiter in (spoken, closed):
            waiter.cancel()
        return self.caller.now()

    async def _run(self) -> None:
        started = time.monotonic()
        index = 0
        silence = b"\xff" * 160
        while not self.caller.closed.is_set():
            if self._speech:
                frame = bytes(self._speech[:160])
                del self._speech[:160]
                if not self._speech:
                    self._spoken.set()
            else:
                frame = silence
            try:
                await self.caller.media(frame)
            except Exception:  # noqa: BLE001 - the bot hung up
                return
            index += 1
            await asyncio.sleep(max(0.0, started + index * FRAME_SECONDS / self.caller.speed - time.monotonic()))


@dataclass
class CallerLog:
    said: list[tuple[Utterance, float, float]] = field(default_factory=list)
    """Each utterance with when it started and ended (caller time)."""
    unanswered: list[Utterance] = field(default_factory=list)
    hung_up_by_bot: bool = False


async def _until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def _bot_quiet(caller: SimulatedCaller, for_s: float = 0.3) -> bool:
    """Nothing queued to play and no bot speech heard for ``for_s`` (a model streaming at real time leaves
    the player's queue empty between chunks, so an empty queue alone does not mean the bot is done)."""
    if caller.playing:
        return False
    last = next((frame.at for frame in reversed(caller.heard[-100:]) if voiced(frame.payload)), None)
    return last is None or caller.now() - last >= for_s / caller.speed


def _bot_heard_since(caller: SimulatedCaller, since: float) -> bool:
    return any(frame.at > since and voiced(frame.payload) for frame in reversed(caller.heard[-200:]))


async def talk(
    caller: SimulatedCaller, plan: Plan, answer_timeout: float = 20.0, goodbye_after_s: float = 0.0
) -> CallerLog:
    """Follow ``plan`` on a live line; returns what was said when, and what went unanswered.

    ``goodbye_after_s``: the caller stays on the line (listening, silent) until then before saying goodbye.
    """
    log = CallerLog()
    with Line(caller) as line:
        await asyncio.sleep(0.3)
        for index, utterance in enumerate(plan.utterances):
            if caller.closed.is_set():
                log.unanswered.append(utterance)  # the bot hung up (or failed) before the caller was done
                continue
            if utterance.kind == "bye":
                await asyncio.sleep(max(0.0, goodbye_after_s - caller.now()))
            if utterance.kind == "barge":
                await _until(lambda: caller.playing, answer_timeout)
                await asyncio.sleep(0.6 / caller.speed)  # well into the long answer
            else:
                await _until(lambda: _bot_quiet(caller), answer_timeout)
                await asyncio.sleep(0.1 / caller.speed)
            start = caller.now()
            end = await line.say(tone_ulaw(utterance.hz, utterance.seconds))
            log.said.append((utterance, start, end))
            if utterance.kind == "bye":
                try:
                    await caller.wait_closed(answer_timeout + 5)
                    log.hung_up_by_bot = True
                except TimeoutError:
                    log.unanswered.append(utterance)
                break
            following = plan.utterances[index + 1] if index + 1 < len(plan.utterances) else None
            if not await _until(functools.partial(_bot_heard_since, caller, end), answer_timeout):
                log.unanswered.append(utterance)
                continue
            if following is None or following.kind != "barge":
                await _until(lambda: _bot_quiet(caller), answer_timeout)
                if utterance.kind == "tool":  # the answer comes in two parts around the tool call
                    await asyncio.sleep(LOOKUP_S + 0.5 / caller.speed)
                    await _until(lambda: _bot_quiet(caller), answer_timeout)
    return log

"""Replace a model's connection at a quiet moment, before strands' scheduled restart has to cut in.

strands replaces a connection ``restart_after_s`` after it opens (each model declares it: Nova Sonic 420 s of
its 8-minute cap, Gemini Live 540 s, OpenAI Realtime its timeout less a margin) and waits at most 10 s for a
turn boundary, which neither a caller in mid-sentence nor a tool call delays. :class:`QuietSwitchover`, mixed
into a model class, looks for a quiet moment in the last stretch before that deadline (the *window*: 15 % of
``restart_after_s``, at most 60 s): the caller silent, no answer owed or being generated, no tool running.
There it ends the connection by raising :class:`QuietSwitchTimeout` (a ``ConnectionTimeoutError``) from
``receive()``, so strands replaces it at once (its reactive path) and re-arms its own timer, which stays the
backstop when no quiet moment comes.
The bot's last answer may still be playing at the caller: that is the best moment, since the model is idle
and the caller is listening.

Pre-opening the next connection (as pipecat does for Nova) is not done: Nova takes the conversation history
only when a stream starts, so a stream opened ahead would miss whatever is said before the switch; and
strands' Nova ``start()`` returns at once (the CRT client opens the stream in the background), so the
swap itself blocks ``send()`` for tens of milliseconds, not for the set-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncGenerator
from typing import Any

import numpy as np
from strands.bidi.models import ConnectionTimeoutError
from strands.bidi.types import (
    AudioDelta,
    BidiAudioDeltaEvent,
    BidiBargeInEvent,
    BidiMessage,
    BidiResponseStartEvent,
    BidiResponseStopEvent,
    BidiToolUseBlocksEvent,
)
from strands.types.tools import ToolResultBlock

from telephony.codec import SPEECH_LEVEL_DBFS

log = logging.getLogger(__name__)

WINDOW_SHARE = 0.15
MAX_WINDOW_S = 60.0
QUIET_CALLER_S = 0.6
"""The caller has been silent this long (about a model's end-pointing pause)."""
QUIET_BOT_S = 0.3
"""The model has produced no audio for this long."""
OWED_FOR_S = 4.0
"""Caller speech (or a text, a tool's result) no answer followed for this long needs none (a cough, a result the
model stays quiet after): stop waiting on it."""
POLL_S = 0.05
SPEECH_RMS = 32768.0 * 10 ** (SPEECH_LEVEL_DBFS / 20)
"""The bridge's level for caller speech, as the RMS of 16-bit samples (about 328)."""
SWITCH_MESSAGE = "quiet switch-over: connection replaced at a quiet moment before its limit"


class QuietSwitchTimeout(ConnectionTimeoutError):
    """Not a real timeout: the connection is replaced at a quiet moment. strands restarts it as after a timeout;
    the bridge tells the two apart by this type."""

    def __init__(self, message: str = SWITCH_MESSAGE) -> None:
        super().__init__(message)


class QuietSwitchover:
    """Mixin for a ``BidiModel`` class: see the module docstring. Put it first in the bases."""

    quiet_window_share: float = WINDOW_SHARE
    """Share of ``restart_after_s``, before it, in which a quiet moment is looked for (at most 60 s)."""

    _quiet_switch: asyncio.Event
    _quiet_watch: asyncio.Task[None] | None
    _quiet_state: _QuietState

    async def start(self, *args: Any, **kwargs: Any) -> None:
        await self._stop_watching()  # a start without a stop (a failed one) must not leave the old watch running
        await super().start(*args, **kwargs)  # type: ignore[misc]
        self._quiet_switch = asyncio.Event()
        self._quiet_state = _QuietState(time.monotonic())
        self._quiet_watch = None
        deadline = _deadline(self)
        if deadline is not None:
            self._quiet_watch = asyncio.create_task(self._watch_for_quiet(deadline), name="quiet-switchover")

    async def stop(self) -> None:
        await self._stop_watching()
        await super().stop()  # type: ignore[misc]

    async def _stop_watching(self) -> None:
        watch = getattr(self, "_quiet_watch", None)
        self._quiet_watch = None
        if watch is not None:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)

    async def send(self, content: Any) -> None:
        state = getattr(self, "_quiet_state", None)
        if state is not None:
            state.sent(content)
        await super().send(content)  # type: ignore[misc]

    async def receive(self) -> AsyncGenerator[Any, None]:  # type: ignore[override]
        """The model's events; within the window, each read is raced against the switch-over.

        Before the window opens events pass straight through: racing a read costs a task and a wait per event
        (about 14 us), which every event of every call would pay for a switch that cannot happen yet. A read
        already waiting when the window opens is not raced: the next event ends it, and the reads after it are."""
        events = super().receive().__aiter__()  # type: ignore[misc]
        switch, state = self._quiet_switch, self._quiet_state
        switched: asyncio.Future[Any] | None = None
        next_event: asyncio.Future[Any] | None = None
        try:
            while True:
                if not state.in_window:
                    try:
                        event = await events.__anext__()
                    except StopAsyncIteration:
                        return
                else:
                    switched = switched or asyncio.ensure_future(switch.wait())
                    next_event = asyncio.ensure_future(events.__anext__())
                    await asyncio.wait({next_event, switched}, return_when=asyncio.FIRST_COMPLETED)
                    if not next_event.done():
                        next_event.cancel()
                        await asyncio.gather(next_event, return_exceptions=True)
                        raise QuietSwitchTimeout()
                    try:
                        event = next_event.result()
                    except StopAsyncIteration:
                        return
                state.received(event)
                yield event
        finally:
            if switched is not None:
                switched.cancel()
            if next_event is not None and not next_event.done():
                next_event.cancel()  # this generator was closed while waiting (strands stopped the reader)
                await asyncio.gather(next_event, return_exceptions=True)
            aclose = getattr(events, "aclose", None)
            if aclose is not None:  # now, not from the garbage collector while a read may still be running
                with contextlib.suppress(Exception):
                    await aclose()

    async def _watch_for_quiet(self, deadline_s: float) -> None:
        window = min(MAX_WINDOW_S, deadline_s * self.quiet_window_share)
        state = self._quiet_state
        await asyncio.sleep(max(0.0, state.opened_at + deadline_s - window - time.monotonic()))
        state.in_window = True  # from the next read on, receive() races each read against the switch
        while not state.quiet(time.monotonic()):
            await asyncio.sleep(POLL_S)
        log.debug("quiet moment %.1f s into the connection: replacing it now", time.monotonic() - state.opened_at)
        self._quiet_switch.set()


def _deadline(model: Any) -> float | None:
    config = model.get_connection_config() or {}
    if not config.get("auto_restart", True):
        return None
    after = config.get("restart_after_s")
    return float(after) if after and after > 0 else None


class _QuietState:
    """What one connection is doing, from what it is sent and what it yields."""

    def __init__(self, opened_at: float) -> None:
        self.opened_at = opened_at
        self.in_window = False
        """The quiet window has opened: a switch-over may come at any moment now."""
        self.caller_voiced_at = -math.inf
        self.bot_audio_at = -math.inf
        self.response_open = False
        self.owed = False
        """The caller spoke (or text or a tool's result was sent) since the last response began: an answer is on its
        way."""
        self.owed_at = -math.inf
        """When it was last owed (the caller's last loud audio, or the text or result sent)."""
        self.tools: set[str] = set()

    def sent(self, content: Any) -> None:
        if isinstance(content, AudioDelta):
            pcm = content.source.get("bytes") or b""
            samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float32)
            if samples.size and math.sqrt(float(samples @ samples) / samples.size) >= SPEECH_RMS:
                self.caller_voiced_at = self.owed_at = time.monotonic()
                self.owed = True
        elif isinstance(content, BidiMessage):
            for block in content.content:
                if isinstance(block, ToolResultBlock):
                    self.tools.discard(block.tool_use_id)
            self.owed, self.owed_at = True, time.monotonic()  # the model speaks next, to a text or a tool's result

    def received(self, event: Any) -> None:
        if isinstance(event, BidiResponseStartEvent):
            self.response_open, self.owed = True, False
        elif isinstance(event, (BidiResponseStopEvent, BidiBargeInEvent)):
            self.response_open = False
        elif isinstance(event, BidiAudioDeltaEvent):
            self.bot_audio_at = time.monotonic()
        elif isinstance(event, BidiToolUseBlocksEvent):
            self.tools.update(use["toolUseId"] for use in event.tool_uses)

    def quiet(self, now: float) -> bool:
        return (
            now - self.caller_voiced_at >= QUIET_CALLER_S
            and now - self.bot_audio_at >= QUIET_BOT_S
            and not self.response_open
            and not (self.owed and now - self.owed_at < OWED_FOR_S)
            and not self.tools
        )


def with_quiet_switchover(model_class: type) -> type:
    """``model_class`` with :class:`QuietSwitchover` mixed in, under the same name (type checks still see it)."""
    return type(model_class.__name__, (QuietSwitchover, model_class), {"__module__": model_class.__module__})


__all__ = ["QuietSwitchTimeout", "QuietSwitchover", "with_quiet_switchover"]

"""A call that outlives its model connections: the caller never notices that one was replaced.

strands' ``BidiAgent`` replaces the model's connection before the provider's limit (Nova Sonic: every
7 minutes, ``restart_after_s`` in the model's connection config) and after a timeout. Left alone, a
swap hurts the caller three ways; this module, driven by the agent's restart hooks (which fire at the
moment of the swap, unlike ``BidiConnectionRestartEvent``, which a timeout delivers only afterwards) and
by the events the session sees, prevents each:

- **Split utterances.** strands does not wait for a caller in mid-sentence: the old connection hears
  the start and is stopped, the new one hears the rest. :class:`UtteranceKeeper` keeps the caller audio
  the current connection has been given since the last utterance it turned into history (a user
  transcript); at the swap that audio goes to the new connection first, before anything held.
- **Lost audio.** ``agent.send()`` blocks while the new connection is set up; the inbound buffer is told
  to hold up to ``VOICEBOT_RESTART_HOLD_MS`` meanwhile, and delivers it in order afterwards.
- **Silent cuts.** An answer the model had not finished when its connection went is recorded as cut
  (a ``cut`` note: seconds heard, the words heard as far as the text tells), and the new connection is
  told where the caller stopped hearing it, so it picks up instead of leaving the caller in silence.

One more hazard is strands' own: a scheduled swap runs in a task the agent no longer holds, so
``agent.stop()`` does not stop it, and it would open the next connection after the call ended (and leave
its reader and timer running). :meth:`Continuity.abandon_swap` cancels that task when the call ends.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from strands.bidi import BidiAgent
from strands.bidi.hooks.events import BidiAfterConnectionRestartEvent, BidiBeforeConnectionRestartEvent
from strands.bidi.types import (
    AudioDelta,
    BidiAudioDeltaEvent,
    BidiAudioStopEvent,
    BidiBargeInEvent,
    BidiConnectionRestartEvent,
    BidiConnectionWarningEvent,
    BidiMessage,
    BidiResponseStartEvent,
    BidiResponseStopEvent,
    BidiToolUseBlocksEvent,
    BidiTranscriptBlockEvent,
    BidiTranscriptDeltaEvent,
    BidiTranscriptStartEvent,
)
from strands.types.content import TextBlock

from telephony.operations.logs import CallLog

log = logging.getLogger(__name__)

FRAME_S = 0.02
SPEECH_DBFS = -40.0
"""A 20 ms frame louder than this is caller speech (the bridge's watchdog uses the same level)."""
ONSET_FRAMES = 2
PREROLL_S = 0.3
"""Audio kept before an utterance's first loud frame, so its soft start is carried over too."""
ABANDON_SWAP_S = 3.0
"""How long a cancelled swap may take to unwind (the Nova adapter finishes a cancelled set-up, up to 2 s)."""
HANGOVER_S = 0.5
"""Quiet after the last loud frame that ends an utterance (models end-point after about 0.5-1 s)."""
UNHEARD_EXPIRY_S = 12.0
"""An ended utterance the model never transcribed for this long was not speech to it (a cough): let it go."""
MAX_KEPT_S = 30.0
"""The longest utterance in progress kept whole; a longer monologue is carried over by its last 30 s."""
CARRY_CHUNK_S = 0.1
"""Carried-over audio goes to the new connection in chunks this long."""
CHARS_PER_SECOND = 15.0
"""Speaking rate used to tell how far into an answer's text the caller heard (about 150 words a minute)."""
QUIET_SWITCH_PREFIX = "quiet switch-over"
"""How agent.quiet_switch words the timeout it raises to replace a connection at a quiet moment."""
RETRY_WINDOW_S = 2.0
"""A send that fails this soon after a swap is retried on the new connection instead of ending the call."""


# --- the utterance in progress ------------------------------------------------------------------------


@dataclass
class _Segment:
    """One stretch of caller speech, in bytes of audio given to the current connection."""

    start: int
    end: int | None = None
    """Just after its last loud frame, once it has ended (None while the caller is still speaking)."""
    ended_at: float | None = None
    preroll: bool = True


class UtteranceKeeper:
    """The caller audio the current connection has heard but not yet turned into history.

    Fed with every chunk once the connection has taken it (:meth:`sent`); told when the model turned
    speech into history (:meth:`heard`: a user transcript, or a response from a model that never
    transcribes). :meth:`unheard` is what a new connection must hear again: from just before the first
    utterance not yet heard to the end of what was sent. Speech is found by level on 20 ms frames.
    """

    def __init__(
        self,
        sample_rate: int,
        *,
        threshold_dbfs: float = SPEECH_DBFS,
        preroll_s: float = PREROLL_S,
        hangover_s: float = HANGOVER_S,
        expiry_s: float = UNHEARD_EXPIRY_S,
        max_s: float = MAX_KEPT_S,
    ) -> None:
        self.sample_rate = sample_rate
        self._frame_bytes = int(sample_rate * FRAME_S) * 2
        self._threshold = 32768.0 * 10 ** (threshold_dbfs / 20)
        self._preroll = int(preroll_s * sample_rate) * 2
        self._hangover_frames = max(1, round(hangover_s / FRAME_S))
        self._expiry_s = expiry_s
        self._max_bytes = int(max_s * sample_rate) * 2
        self._audio = bytearray()
        self._base = 0
        """Offset, in bytes sent to this connection, of ``_audio[0]``."""
        self._pending = b""
        self._segments: list[_Segment] = []
        self._loud_run = 0
        self._quiet_run = 0
        self._last_loud_end = 0
        self.trimmed_bytes = 0
        """Audio of over-long utterances that could not be kept (their start is not carried over)."""

    @property
    def _end(self) -> int:
        return self._base + len(self._audio)

    @property
    def speaking(self) -> bool:
        """The caller is in an utterance (or within its hangover)."""
        return bool(self._segments) and self._segments[-1].end is None

    def sent(self, pcm: bytes, now: float) -> None:
        """The current connection has taken ``pcm`` (PCM16 mono at ``sample_rate``)."""
        data = self._pending + pcm
        first = self._end - len(self._pending)
        self._audio += pcm
        usable = len(data) - len(data) % self._frame_bytes
        if usable:  # the level of every whole frame at once: this runs for each chunk of each call
            samples = np.frombuffer(data, dtype="<i2", count=usable // 2).astype(np.float32)
            power = np.mean(np.square(samples.reshape(-1, self._frame_bytes // 2)), axis=1)
            for index, loud in enumerate((power >= self._threshold**2).tolist()):
                self._frame(loud, first + index * self._frame_bytes, now)
        self._pending = data[usable:]
        self._trim(now)

    def heard(self, now: float) -> None:
        """The model turned caller speech into history: every utterance that has ended is heard.

        If none has ended, the model end-pointed sooner than we do: the utterance in progress is heard up
        to now, and whatever the caller says next is a new utterance (without pre-roll, which was heard).
        """
        ended = [segment for segment in self._segments if segment.end is not None]
        if ended:
            self._segments = [segment for segment in self._segments if segment.end is None]
        elif self._segments:
            self._segments[-1].start = self._end
            self._segments[-1].preroll = False
        self._trim(now)

    def unheard(self, now: float) -> bytes:
        """Audio a new connection must hear again (empty when the old one heard everything said)."""
        self._expire(now)
        if not self._segments:
            return b""
        first = self._segments[0]
        start = max(self._base, first.start - (self._preroll if first.preroll else 0))
        return bytes(self._audio[start - self._base :])

    def restart_with(self, carried: bytes, now: float) -> None:
        """A new connection was given ``carried`` first: keep counting from there."""
        self._audio = bytearray()
        self._base = 0
        self._pending = b""
        self._segments = []
        self._loud_run = self._quiet_run = 0
        self.sent(carried, now)

    def _frame(self, loud: bool, offset: int, now: float) -> None:
        current = self._segments[-1] if self._segments and self._segments[-1].end is None else None
        if current is None:
            self._loud_run = self._loud_run + 1 if loud else 0
            if self._loud_run >= ONSET_FRAMES:
                start = offset - (ONSET_FRAMES - 1) * self._frame_bytes
                self._segments.append(_Segment(start=start))
                self._quiet_run = 0
                self._last_loud_end = offset + self._frame_bytes
            return
        if loud:
            self._quiet_run = 0
            self._last_loud_end = offset + self._frame_bytes
            return
        self._quiet_run += 1
        if self._quiet_run >= self._hangover_frames:
            current.end, current.ended_at = self._last_loud_end, now
            self._loud_run = 0

    def _expire(self, now: float) -> None:
        self._segments = [
            segment for segment in self._segments if segment.ended_at is None or now - segment.ended_at < self._expiry_s
        ]

    def _trim(self, now: float) -> None:
        """Forget audio no new connection will need: all but the pre-roll when nobody is mid-utterance."""
        self._expire(now)
        if self._segments:
            first = self._segments[0]
            keep_from = max(self._base, first.start - (self._preroll if first.preroll else 0))
            keep_from = max(keep_from, self._end - self._max_bytes)
            if keep_from > first.start:
                self.trimmed_bytes += keep_from - max(self._base, first.start)
                for segment in self._segments:
                    segment.start = max(segment.start, keep_from)
                    segment.preroll = segment.preroll and segment.start > keep_from
        else:  # keep what the pre-roll of an utterance starting now (or in the frames not yet measured) needs
            earliest_start = self._end - len(self._pending) - (ONSET_FRAMES - 1) * self._frame_bytes
            keep_from = max(self._base, earliest_start - self._preroll)
        if keep_from > self._base:
            del self._audio[: keep_from - self._base]
            self._base = keep_from


# --- an answer cut by a swap ------------------------------------------------------------------------


@dataclass(frozen=True)
class CutAnswer:
    """An answer the model had not finished when its connection was replaced."""

    reason: str
    """Why the connection was replaced: ``timeout`` (reactive) or ``scheduled`` (proactive)."""
    text: str
    """What the model meant to say, as far as its transcript had come."""
    heard_s: float
    """Seconds of it the caller hears: all the audio that had arrived (it plays out; nothing clears it)."""
    heard_text: str
    """The words those seconds cover, as far as the text tells (estimated at ``CHARS_PER_SECOND``)."""
    tool_pending: bool
    """A tool was still running: its result, when it comes, makes the model speak again."""

    def note_detail(self) -> str:
        return json.dumps(
            {"reason": self.reason, "heard_s": round(self.heard_s, 2), "heard_text": self.heard_text, "text": self.text}
        )

    def message_for_agent(self) -> str:
        """What the new connection is told, so it can pick up where the caller stopped hearing."""
        prefix = (
            "Note for you, not from the caller and not to be read out: your connection was replaced while you were "
            "answering."
        )
        if self.heard_s <= 0.05 or not self.heard_text:
            return f"{prefix} The caller heard none of that answer. Give it now, briefly."
        if self.heard_text == self.text:
            return (
                f'{prefix} The caller heard your answer up to: "{self.heard_text}" but it had not finished. '
                "Finish it in a few words, without repeating it."
            )
        return (
            f"{prefix} The caller stopped hearing your answer after about {self.heard_s:.0f} seconds, at: "
            f'"{self.heard_text}". Continue from there, without starting over.'
        )


def decoded_length(base64_text: str) -> int:
    """Bytes that base64 text decodes to, without decoding it (the session decodes each chunk once already)."""
    return len(base64_text) * 3 // 4 - base64_text.count("=", -2)


def words_heard(text: str, seconds: float, chars_per_second: float = CHARS_PER_SECOND) -> str:
    """The start of ``text`` that ``seconds`` of speech covers, cut at a word boundary."""
    text = text.strip()
    budget = int(seconds * chars_per_second)
    if budget >= len(text):
        return text
    cut = text.rfind(" ", 0, budget + 1)
    if cut <= 0:  # inside the first word: count it heard once most of it was
        first = text.split(" ", 1)[0]
        return first.rstrip(",;:") if budget >= len(first) / 2 else ""
    return text[:cut].rstrip(" ,;:")


# --- the call's side of it ----------------------------------------------------------------------------


class CallSide(Protocol):
    """What continuity needs from the session (``CallSession`` implements it)."""

    def close_cut_answer(self, content_id: str | None) -> None:
        """The rest of this bot utterance will never come: close it (end mark, not responding)."""

    def goodbye_armed(self) -> bool:
        """The agent ended the call: a cut goodbye is not picked up again."""

    def note(self, kind: str, detail: str) -> None:
        """Tell the call's observers (the recorder) something happened."""


@dataclass
class ContinuityStats:
    """What the swaps of one call cost the caller, for the summary line and the benchmark."""

    restarts: int = 0
    failed: int = 0
    carried_s: list[float] = field(default_factory=list)
    """Seconds of unfinished caller utterance given again to each new connection."""
    held_s: list[float] = field(default_factory=list)
    """Seconds of caller audio held in the inbound buffer at the end of each swap."""
    swap_s: list[float] = field(default_factory=list)
    """How long each swap kept ``agent.send()`` blocked (the longest wait of held audio)."""
    cut_answers: int = 0
    resumed: int = 0
    retried_sends: int = 0


class Continuity:
    """One call's continuity across model connections. See the module docstring."""

    def __init__(
        self,
        agent: BidiAgent,
        inbound: Any,
        side: CallSide,
        call_log: CallLog,
        *,
        sample_rate: int,
        hold_bytes: int,
        held_bytes_per_s: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``hold_bytes`` and ``held_bytes_per_s`` are in the inbound buffer's units (the bridge queues
        μ-law); ``sample_rate`` is that of the PCM the model is sent."""
        self._agent = agent
        self._inbound = inbound
        self._side = side
        self._log = call_log
        self._hold_bytes = hold_bytes
        self._bytes_per_s = sample_rate * 2
        self._held_bytes_per_s = held_bytes_per_s or self._bytes_per_s
        self._clock = clock
        self.keeper = UtteranceKeeper(sample_rate)
        self.stats = ContinuityStats()
        self._swap_started: float | None = None
        self._swap_task: asyncio.Task[Any] | None = None
        """The task running the swap in flight (strands' restart timer, or the model reader on a timeout)."""
        self._abandoned = False
        self._last_swap_end = -math.inf
        self._idle = asyncio.Event()
        self._idle.set()
        self._cut: CutAnswer | None = None
        self._transcribes = False
        self._response_open = False
        self._audio_open: str | None = None
        self._audio_s = 0.0
        self._response_spoke = False
        self._response_used_tool = False
        self._barged: set[str] = set()
        self._answer: list[str] = []
        self._answer_block: str | None = None
        self._tools_pending: set[str] = set()

    def attach(self) -> None:
        """Register on the agent's restart hooks (they fire at the swap, before the gate reopens)."""
        self._agent.hooks.add_callback(BidiBeforeConnectionRestartEvent, self._before_restart)
        self._agent.hooks.add_callback(BidiAfterConnectionRestartEvent, self._after_restart)
        config = connection_config(self._agent)
        if config.get("restart_after_s"):
            self._log.info(
                "model connection | replaced every %ss (the model's declared limit); up to %.0f s of caller audio held",
                config["restart_after_s"],
                self._hold_bytes / self._held_bytes_per_s,
            )

    @property
    def swapping(self) -> bool:
        return not self._idle.is_set()

    def abandon_swap(self) -> None:
        """The call is ending: cancel a swap in flight, so no connection opens after it. Call first in teardown."""
        self._abandoned = True
        if (task := self._other_swap_task()) is not None:
            self._log.info("the call ended during a model connection swap: the swap is cancelled")
            task.cancel()

    async def swap_abandoned(self) -> None:
        """Wait (bounded) for a cancelled swap to unwind: before the agent stops, which would race it."""
        if (task := self._other_swap_task()) is None:
            return
        done, _ = await asyncio.wait({task}, timeout=ABANDON_SWAP_S)
        if not done:
            self._log.warning("the cancelled connection swap did not end within %.0f s", ABANDON_SWAP_S)

    def _other_swap_task(self) -> asyncio.Task[Any] | None:
        """The task of a swap still running, unless it is the caller's own (teardown started inside the swap)."""
        task = self._swap_task
        return None if task is None or task.done() or task is asyncio.current_task() else task

    # --- fed by the session --------------------------------------------------------------------------

    def audio_sent(self, pcm: bytes) -> None:
        """``agent.send()`` returned for this caller audio: the current connection has it."""
        self.keeper.sent(pcm, self._clock())

    def agent_event(self, event: Any) -> None:
        """Every event from ``agent.receive()``, in order (never awaits)."""
        if isinstance(event, BidiTranscriptStartEvent) and event.role == "user":
            self._transcribes = True
            self.keeper.heard(self._clock())
        elif isinstance(event, BidiResponseStartEvent):
            self._response_open, self._response_spoke, self._response_used_tool = True, False, False
            self._answer, self._answer_block = [], None
            if not self._transcribes:
                self.keeper.heard(self._clock())
        elif isinstance(event, BidiResponseStopEvent):
            self._response_open = False
        elif isinstance(event, BidiAudioDeltaEvent):
            self._on_audio(event)
        elif isinstance(event, BidiAudioStopEvent):
            if event.content_id == self._audio_open:
                self._audio_open = None
        elif isinstance(event, BidiBargeInEvent):
            if self._audio_open is not None:
                self._barged.add(self._audio_open)  # the caller cut it, not the swap
            self._response_open, self._audio_open = False, None
        elif isinstance(event, BidiTranscriptDeltaEvent) and event.role == "assistant":
            self._answer.append(event.delta)
        elif isinstance(event, BidiTranscriptBlockEvent) and event.role == "assistant":
            self._answer_block = event.transcript
        elif isinstance(event, BidiToolUseBlocksEvent):
            self._response_used_tool = True
            self._tools_pending.update(use["toolUseId"] for use in event.tool_uses)
        elif event.get("type") == "tool_result":
            self._tools_pending.discard(str((event.get("tool_result") or {}).get("toolUseId")))
        elif isinstance(event, BidiConnectionRestartEvent):
            self._log.debug("restart event delivered (%s, turn_interrupted=%s)", event.reason, event.turn_interrupted)
        elif isinstance(event, BidiConnectionWarningEvent):
            self._log.info("model connection will be replaced in about %.0f s", event.time_left_s)

    async def forgive_send_error(self, error: BaseException) -> bool:
        """A send failed: if it raced a swap, wait for the swap and say to retry (True)."""
        if not self.swapping and self._clock() - self._last_swap_end > RETRY_WINDOW_S:
            return False
        self._log.warning("caller audio send raced the connection swap (%r): retrying on the new connection", error)
        self.stats.retried_sends += 1
        await self._idle.wait()
        return True

    def _on_audio(self, event: BidiAudioDeltaEvent) -> None:
        if event.content_id in self._barged:
            return  # the rest of an utterance the caller talked over: never played
        self._response_spoke = True
        if event.content_id != self._audio_open:
            self._audio_open, self._audio_s = event.content_id, 0.0
        rate = event.sample_rate * event.channels
        self._audio_s += decoded_length(event.audio) / 2 / rate if rate else 0.0

    # --- the restart hooks -----------------------------------------------------------------------------

    async def _before_restart(self, event: BidiBeforeConnectionRestartEvent) -> None:
        now = self._clock()
        self._swap_started = now
        self._swap_task = asyncio.current_task()
        self._idle.clear()
        self.stats.restarts += 1
        self._inbound.hold(self._hold_bytes)
        why = "scheduled, before the provider's limit"
        if event.timeout_error is not None:
            quiet = str(event.timeout_error).startswith(QUIET_SWITCH_PREFIX)
            why = "at a quiet moment, before the provider's limit" if quiet else f"it timed out: {event.timeout_error}"
        self._log.warning(
            "model connection being replaced (#%d, %s): caller audio is held until the new one takes it",
            self.stats.restarts,
            why,
        )
        self._cut = self._take_cut(event.reason)

    def _take_cut(self, reason: str) -> CutAnswer | None:
        """An answer the old connection had not finished is cut here: record it and close it.

        Cut: speech still streaming, or a response begun that had said nothing yet. A response that called a
        tool is not (strands' Nova keeps a tool's response open until the next user content): a running tool's
        result makes the next connection speak, and a finished one (``end_conversation``) needs no more words.
        """
        unspoken = self._response_open and not self._response_spoke and not self._response_used_tool
        if self._audio_open is None and not unspoken:
            return None
        text = (self._answer_block if self._answer_block is not None else "".join(self._answer)).strip()
        heard_s = self._audio_s if self._audio_open is not None else 0.0
        cut = CutAnswer(reason, text, heard_s, words_heard(text, heard_s), bool(self._tools_pending))
        self.stats.cut_answers += 1
        self._side.close_cut_answer(self._audio_open)
        self._response_open, self._audio_open = False, None
        self._side.note("cut", cut.note_detail())
        self._log.warning(
            "the model's answer was cut by the swap after %.1f s of audio; the caller hears it up to: %r",
            heard_s,
            cut.heard_text,
        )
        return cut

    async def _after_restart(self, event: BidiAfterConnectionRestartEvent) -> None:
        now = self._clock()
        started = self._swap_started if self._swap_started is not None else now
        try:
            if self._abandoned:
                return  # the call is over: nothing to carry over or pick up
            if event.exception is not None:
                self.stats.failed += 1
                self._log.error("model connection could not be replaced: %r", event.exception)
                return
            await self._tell_about_cut()
            carried = await self._carry_over(now)
            self._report(now - started, carried)
        finally:
            self._inbound.release()
            self._swap_started = None
            self._swap_task = None
            self._cut = None
            self._last_swap_end = self._clock()
            self._idle.set()

    async def _tell_about_cut(self) -> None:
        cut = self._cut
        if cut is None:
            return
        if cut.tool_pending or self._side.goodbye_armed():
            why = "a tool result is on its way" if cut.tool_pending else "the call is ending"
            self._log.info("the cut answer is not picked up: %s", why)
            return
        try:
            await self._agent.model.send(BidiMessage(content=[TextBlock(text=cut.message_for_agent())]))
        except Exception as error:  # noqa: BLE001 - the call goes on; the caller may simply ask again
            self._log.warning("could not tell the new connection where the caller stopped hearing: %r", error)
            return
        self.stats.resumed += 1
        self._side.note("resume", cut.heard_text)

    async def _carry_over(self, now: float) -> bytes:
        """Give the new connection the utterance the old one had not finished hearing, first."""
        carried = self.keeper.unheard(now)
        step = max(2, int(CARRY_CHUNK_S * self._bytes_per_s) // 2 * 2)
        try:
            for offset in range(0, len(carried), step):
                chunk = carried[offset : offset + step]
                await self._agent.model.send(AudioDelta(format="pcm", source={"bytes": chunk}))
        except Exception as error:  # noqa: BLE001 - what was held still follows; log what was not carried
            self._log.warning("could not give the new connection the utterance in progress: %r", error)
            carried = b""
        self.keeper.restart_with(carried, now)
        return carried

    def _report(self, swap_s: float, carried: bytes) -> None:
        held_s = self._inbound.audio_bytes / self._held_bytes_per_s
        oldest = self._inbound.oldest_audio_at
        waited = self._clock() - oldest if oldest is not None else 0.0
        carried_s = len(carried) / self._bytes_per_s
        self.stats.swap_s.append(swap_s)
        self.stats.held_s.append(held_s)
        self.stats.carried_s.append(carried_s)
        self._log.info(
            "model connection replaced in %.2f s | caller audio held: %.2f s (the oldest waited %.2f s), delivered "
            "in order now | unfinished utterance given again: %.2f s",
            swap_s,
            held_s,
            waited,
            carried_s,
        )


def connection_config(agent: BidiAgent) -> dict[str, Any]:
    """The model's declared connection limits (empty when it declares none)."""
    get_config = getattr(agent.model, "get_connection_config", None)
    try:
        return dict(get_config() or {}) if get_config is not None else {}
    except Exception:  # noqa: BLE001 - a model without limits is fine
        return {}


__all__ = ["CallSide", "Continuity", "ContinuityStats", "CutAnswer", "UtteranceKeeper", "words_heard"]

"""A call that outlives its model connections: the caller never notices that one was replaced.

strands' ``BidiAgent`` replaces the model's connection before the provider's limit (Nova Sonic: every
7 minutes, ``restart_after_s`` in the model's connection config) and after a timeout. Left alone, a
swap hurts the caller three ways; this module, driven by the agent's restart hooks (which fire at the
moment of the swap, unlike ``BidiConnectionRestartEvent``, which a timeout delivers only afterwards) and
by the events the session sees, prevents each:

- **Split utterances.** strands does not wait for a caller in mid-sentence: the old connection hears
  the start and is stopped, the new one hears the rest. :class:`UtteranceKeeper` keeps the caller audio
  the current connection has been given since the last utterance it took (an answer started after it, or a
  user transcript before its answer: a model may transcribe early, at its answer, late or never); at the swap
  that audio goes to the new connection first, before anything held. Each utterance is given exactly once.
- **Lost audio.** ``agent.send()`` blocks while the new connection is set up; the inbound buffer is told
  to hold up to ``VOICEBOT_RESTART_HOLD_MS`` meanwhile, and delivers it in order afterwards.
- **Silent cuts.** An answer the model had not finished when its connection went is recorded as cut
  (a ``cut`` note: seconds heard, the words heard as far as the text tells), and the new connection is
  told where the caller stopped hearing it, so it picks up instead of leaving the caller in silence.
- **Turns in no history.** A turn the model took (it began a transcript or an answer) reaches the history only
  when its transcript ends, and a model may end it after its answer (OpenAI transcribes beside the model). Turns
  the old connection had neither transcribed nor answered in full (:class:`OpenQuestion`) are given to the new
  connection again, first; the question of a cut answer is among them, and is then answered afresh rather than
  picked up.

One more hazard is strands' own: a scheduled swap runs in a task the agent no longer holds, so
``agent.stop()`` does not stop it, and it would open the next connection after the call ended (and leave
its reader and timer running). :meth:`Continuity.abandon_swap` cancels that task when the call ends.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from strands.bidi import BidiAgent
from strands.bidi.hooks.events import BidiAfterConnectionRestartEvent, BidiBeforeConnectionRestartEvent
from strands.bidi.types import (
    AudioDelta,
    BidiConnectionRestartEvent,
    BidiConnectionWarningEvent,
    BidiMessage,
    BidiResponseStartEvent,
    BidiResponseStopEvent,
    BidiTranscriptStartEvent,
    BidiTranscriptStopEvent,
)
from strands.types.content import TextBlock

from agent.quiet_switch import QuietSwitchTimeout
from telephony.bridge.answer import AnswerState, decoded_length
from telephony.bridge.cut_answer import CutAnswer, OpenQuestion, words_heard
from telephony.bridge.model_guard import QuietModelRestart
from telephony.bridge.utterance_keeper import UtteranceKeeper
from telephony.operations.logs import CallLog

log = logging.getLogger(__name__)

ABANDON_SWAP_S = 3.0
"""How long a cancelled swap may take to unwind (the Nova adapter finishes a cancelled set-up, up to 2 s)."""
CARRY_CHUNK_S = 0.1
"""Carried-over audio goes to the new connection in chunks this long."""
RETRY_WINDOW_S = 2.0
"""A send that fails this soon after a swap is retried on the new connection instead of ending the call."""


class CallSide(Protocol):
    """What continuity needs from the call (the session's agent link implements it)."""

    def close_cut_answer(self, content_id: str | None) -> None:
        """The rest of this bot utterance will never come: what arrived plays out, then its end mark."""

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
        answer: AnswerState,
        sample_rate: int,
        hold_bytes: int,
        held_bytes_per_s: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``hold_bytes`` and ``held_bytes_per_s`` are in the inbound buffer's units (the bridge queues
        μ-law); ``sample_rate`` is that of the PCM the model is sent. ``answer`` is the call's answer state (the
        session feeds it; continuity reads it, and closes an answer a swap cut)."""
        self._agent = agent
        self._inbound = inbound
        self._side = side
        self._answer = answer
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
        self._answer_took_turn = False
        """The latest answer took a caller turn that no transcript had: that turn's transcript takes nothing more."""
        self._turn_transcribed = False
        """A user transcript came since the latest answer started: the next answer's turn was transcribed already."""
        self._question = OpenQuestion()
        self.swaps_done = 0
        """Swaps finished (the connection replaced, or the attempt failed)."""
        self.asked_again = False
        """The latest swap gave the new connection the caller's unanswered words, or the cut answer to pick up."""

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
        """Every event from ``agent.receive()``, in order, after the answer state has seen it (never awaits)."""
        if isinstance(event, BidiTranscriptStartEvent) and event.role == "user":
            if self._answer_took_turn:
                self._answer_took_turn = False  # the transcript of a turn its answer already took (at its start, late)
            else:
                if self.keeper.took(self._clock()):
                    self._question.took(self.keeper.last_taken)
                self._turn_transcribed = True
        elif isinstance(event, BidiTranscriptStopEvent) and event.role == "user":
            self._question.transcript_ended()
        elif isinstance(event, BidiResponseStopEvent):
            self._question.answer_done()
        elif isinstance(event, BidiResponseStartEvent):
            # The answer is proof the model heard: its transcript may come before, at its start, late, or never.
            took = self.keeper.took(self._clock())
            self._answer_took_turn = took and not self._turn_transcribed
            self._turn_transcribed = False
            if took:
                self._question.took(self.keeper.last_taken)
            self._question.answer_started()
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

    # --- the restart hooks -----------------------------------------------------------------------------

    async def _before_restart(self, event: BidiBeforeConnectionRestartEvent) -> None:
        now = self._clock()
        self._swap_started = now
        self._swap_task = asyncio.current_task()
        self._idle.clear()
        self.stats.restarts += 1
        self._inbound.hold(self._hold_bytes)
        why = "scheduled, before the provider's limit"
        if isinstance(event.timeout_error, QuietSwitchTimeout):
            why = "at a quiet moment, before the provider's limit"
        elif isinstance(event.timeout_error, QuietModelRestart):
            why = str(event.timeout_error)  # the dead-air guard's: the model went quiet while it owed an answer
        elif event.timeout_error is not None:
            why = f"it timed out: {event.timeout_error}"
        self._log.warning(
            "model connection being replaced (#%d, %s): caller audio is held until the new one takes it",
            self.stats.restarts,
            why,
        )
        self._side.note("swap", f"model connection being replaced (#{self.stats.restarts}): {why}")
        self._cut = self._take_cut(event.reason)
        if not (self._cut is not None and self._cut.tool_pending) and not self._side.goodbye_armed():
            self._question.swap_began()

    def _take_cut(self, reason: str) -> CutAnswer | None:
        """An answer the old connection had not finished is cut here: record it and close it.

        Cut: speech still streaming, or a response begun that had said nothing yet. A response that called a
        tool is not (strands' Nova keeps a tool's response open until the next user content): a running tool's
        result makes the next connection speak, and a finished one (``end_conversation``) needs no more words.
        """
        answer = self._answer
        unspoken = answer.responding and not answer.spoke and not answer.used_tool
        if answer.audio is None and not unspoken:
            return None
        text = answer.text
        heard_s = answer.audio_s if answer.audio is not None else 0.0
        cut = CutAnswer(reason, text, heard_s, words_heard(text, heard_s), bool(answer.tools_pending))
        self.stats.cut_answers += 1
        self._side.close_cut_answer(answer.close())  # over for the session and the ending too
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
        self.asked_again = False
        try:
            if self._abandoned:
                return  # the call is over: nothing to carry over or pick up
            if event.exception is not None:
                self.stats.failed += 1
                self._log.error("model connection could not be replaced: %r", event.exception)
                self._side.note("swap", f"model connection could not be replaced: {event.exception!r}")
                return
            self.asked_again = await self._tell_about_cut()
            carried = await self._carry_over(now)
            self.asked_again = self.asked_again or bool(carried)
            self._report(now - started, carried)
        finally:
            self._inbound.release()
            self._swap_started = None
            self._swap_task = None
            self._cut = None
            self._answer_took_turn = self._turn_transcribed = False  # the old connection's late transcript never comes
            self._question.swapped()
            self._last_swap_end = self._clock()
            self.swaps_done += 1
            self._idle.set()

    async def _tell_about_cut(self) -> bool:
        """True if the new connection was given something to answer: the question again, or where to pick up."""
        cut = self._cut
        if self._question.ask_again:
            self._log.info(
                "caller speech the old connection took is in no history yet (%.2f s): the new connection hears it "
                "again%s",
                len(self._question.ask_again) / self._bytes_per_s,
                ", instead of picking up the answer it cut" if cut is not None else "",
            )
            if cut is not None:
                self.stats.resumed += 1
                self._side.note("resume", cut.heard_text)
            return True
        if cut is None:
            return False
        if cut.tool_pending or self._side.goodbye_armed():
            why = "a tool result is on its way" if cut.tool_pending else "the call is ending"
            self._log.info("the cut answer is not picked up: %s", why)
            return False
        try:
            await self._agent.model.send(BidiMessage(content=[TextBlock(text=cut.message_for_agent())]))
        except Exception as error:  # noqa: BLE001 - the call goes on; the caller may simply ask again
            self._log.warning("could not tell the new connection where the caller stopped hearing: %r", error)
            return False
        self.stats.resumed += 1
        self._side.note("resume", cut.heard_text)
        return True

    async def _carry_over(self, now: float) -> bytes:
        """Give the new connection the utterance the old one had not finished hearing, first (after the question of
        a cut answer that is in no history)."""
        carried = self._question.ask_again + self.keeper.unheard(now)
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
        self._side.note("swap", f"model connection replaced in {swap_s:.2f} s; caller audio held {held_s:.2f} s")
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


__all__ = [
    "CallSide",
    "Continuity",
    "ContinuityStats",
    "CutAnswer",
    "UtteranceKeeper",
    "decoded_length",
    "words_heard",
]

"""No dead air: what the caller is owed, how long they wait for it, and what the bridge does when nothing comes.

The agent **owes** the caller an answer once the caller's turn has ended (a stretch of their speech the bridge
heard, not one they spoke over a bot that went on talking), once a tool's result has come back, once it was asked
to greet, check in or say goodbye, and while an answer it began is still streaming. A caller's own silence is owed
nothing, and speaking after it owes only an answer.

While an answer is owed and nothing is audible at the caller (the wait is timed from when the caller's silence
began: the end of their speech, or of the bot audio still playing then), the bridge steps in, each step once:

- after ``VOICEBOT_ANSWER_TIMEOUT`` the hold sound starts and the agent is *nudged* (a note it can act on);
- after twice that the model's connection is *replaced* (strands' restart, with the conversation so far and the
  caller's unanswered words: telephony.bridge.continuity) and the agent is asked again;
- after ``VOICEBOT_AGENT_SILENCE_TIMEOUT`` it *gives up*: the apology, heard in full, then the hang-up.

A tool that runs with nothing playing gets the hold sound after ``VOICEBOT_HOLD_SOUND_AFTER``. A caller who says
nothing after the bot's last words have been heard (every mark back) is **checked on** after
``VOICEBOT_CALLER_IDLE_TIMEOUT``, up to ``VOICEBOT_CALLER_IDLE_CHECKS`` times; then the agent says goodbye and the
call ends as the bot's hang-up. Speech or a keypress from the caller starts the count again.

**Dead air** is measured for every wait: from the moment the caller's silence began to the first audible bot audio
(the hold sound counts: it is what it is for), or to the caller speaking up. The call's longest goes into its
summary line, ``/metrics``, the recording and the console; each wait is an observer note ``dead_air``.

Pure bookkeeping plus the few actions above; fed by the agent link (never awaits) and woken by its own task.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agent.prompt import ASK_AGAIN_NOTE, CHECK_IN_NOTE, IDLE_GOODBYE_NOTE, NUDGE_NOTE
from telephony.bridge.answer import AnswerState
from telephony.bridge.caller_speech import TURN_GAP_S, CallerSpeech, SpeechSpan
from telephony.bridge.ending import CallEnding
from telephony.bridge.hold_sound import HoldSound
from telephony.bridge.model_guard import ModelGuard
from telephony.bridge.observer import Observers
from telephony.bridge.playback import Playback
from telephony.config import Settings
from telephony.operations.logs import CallLog

WAKE_S = 0.2
"""How often the guard looks (the waits themselves are timed from the events, not from these wake-ups)."""
MIN_TURN_S = 0.25
"""Caller speech shorter than this (a click, a cough) is no turn: it owes no answer."""
STALLED_ANSWER_S = 0.3
"""An answer whose audio has played out this long with its stream still open owes the rest (a model speaking at
about real time leaves gaps of a few milliseconds)."""
RESCUE_STEPS = ("nudge", "reconnect", "apology")
"""What the guard does for a quiet agent (``check_in``, ``idle_goodbye`` and ``idle_end`` are for a quiet caller)."""

WHY = {
    "caller": "the caller's turn",
    "tool": "a tool's result",
    "greeting": "the greeting instruction",
    "check_in": "a check-in",
    "goodbye": "the instruction to say goodbye",
    "answer": "the answer it had begun",
    "tool_run": "a tool starting",
}
"""What made the answer owed (or the wait begin), as the log lines and notes say it."""
ENDED_BY = {
    "audio": "the bot was heard",
    "hold": "the hold sound started",
    "caller": "the caller spoke up",
    "end": "the call ended",
}
"""What ended a wait (``Wait.ended_by``), as the log lines and the recording's readers say it."""


class Swaps(Protocol):
    """What the guard reads of the connection swaps (``Continuity``)."""

    @property
    def swapping(self) -> bool: ...

    @property
    def swaps_done(self) -> int:
        """Swaps finished so far (replaced or failed)."""

    @property
    def asked_again(self) -> bool:
        """The latest swap gave the new connection the caller's unanswered words or the cut answer to pick up."""


@dataclass
class Owed:
    """An answer the agent owes the caller."""

    why: str
    silent_from: float
    """When the caller's silence began (monotonic): the owing moment, or the end of the bot audio playing then."""
    step: int = 0
    """Rescue steps taken: 1 nudged, 2 reconnecting, 3 asked again, 4 given up."""
    swaps_before: int = 0


@dataclass(frozen=True)
class Wait:
    """One measured stretch of dead air."""

    why: str
    seconds: float
    ended_by: str
    """``audio`` (the bot was heard), ``hold`` (the hold sound), ``caller`` (the caller spoke up) or ``end``."""

    def note_detail(self) -> str:
        return json.dumps({"s": round(self.seconds, 3), "after": self.why, "ended_by": self.ended_by})


class DeadAir:
    """One call's dead-air guard. See the module docstring."""

    def __init__(
        self,
        settings: Settings,
        *,
        answer: AnswerState,
        speech: CallerSpeech,
        ending: CallEnding,
        playback: Callable[[], Playback | None],
        swaps: Callable[[], Swaps | None],
        guard: Callable[[], ModelGuard | None],
        tell_agent: Callable[[str], None],
        hold: HoldSound,
        observers: Observers,
        call_log: Callable[[], CallLog],
    ) -> None:
        self._answer_s = settings.answer_timeout_s
        self._give_up_s = settings.agent_silence_timeout_s
        self._hold_after_s = settings.hold_sound_after_s
        self._idle_s = settings.caller_idle_timeout_s
        self._idle_checks = settings.caller_idle_checks
        self.checks_in = True
        """Silent callers are checked on (not on a warm transfer's briefing leg: a person deciding to take a call)."""
        self._answer = answer
        self._speech = speech
        self._ending = ending
        self._playback = playback
        self._swaps = swaps
        self._guard = guard
        self._tell_agent = tell_agent
        self.hold = hold
        self._observers = observers
        self._log = call_log
        self.owed: Owed | None = None
        self._measure: tuple[float, str] | None = None
        """The stretch of dead air being timed: (since when, why)."""
        self.waits: list[Wait] = []
        self._tool_since: float | None = None
        self._bot_audio_at = 0.0
        self._heard_since: float | None = None
        """Since when the caller has heard everything and nothing is owed or under way (the check-in clock)."""
        self._present_at = 0.0
        self.checks = 0
        """Check-ins since the caller last spoke or pressed a key."""
        self._goodbye_asked = False
        self.model_answered = False
        """The model has answered at least once this call (else a failure is a failure to start)."""
        self.steps: dict[str, int] = {}
        """Rescue steps and check-ins taken this call, by name (for the summary and the benchmark)."""

    @property
    def longest_s(self) -> float:
        return max((wait.seconds for wait in self.waits), default=0.0)

    # --- fed by the agent link (never awaits) --------------------------------------------------------

    def caller_turn(self, span: SpeechSpan) -> None:
        """A stretch of caller speech ended: the agent owes an answer, unless it was a backchannel over the bot."""
        if span.end_s - span.start_s < MIN_TURN_S:
            return
        self.checks, self._goodbye_asked = 0, False
        playback = self._playback()
        if playback is not None and playback.unheard_seconds > 0:
            return  # the bot talked on over it (no barge-in): nothing more is owed than what is playing
        self._owe("caller", span.ended_at)

    def caller_spoke(self) -> None:
        """A voiced caller frame while the hold sound plays: it stops at once (the caller holds the floor)."""
        if self.hold.stop(self._playback()):
            self._note("hold_sound", "stopped: the caller spoke")

    def prompted(self, why: str) -> None:
        """The agent was asked to speak (the greeting): it owes an answer from now."""
        self._owe(why, time.monotonic())

    def keypress(self) -> None:
        """A keypad press: the caller is there (the check-ins count again)."""
        self._present_at = time.monotonic()
        self.checks, self._goodbye_asked = 0, False

    def model_event(self) -> None:
        """The model produced something of an answer (a response, a transcript, audio or a tool call)."""
        self.model_answered = True

    def bot_audio(self) -> None:
        """The agent's audio is about to be played: the hold sound stops first, and the answer is no longer owed."""
        self.model_answered = True
        self._bot_audio_at = time.monotonic()
        playback = self._playback()
        if self.hold.stop(playback):
            self._note("hold_sound", "stopped: the agent speaks")
        owed = self.owed
        if owed is not None:
            if owed.step:
                self._log().info("the agent answered (%s) after %s", WHY[owed.why], _step_name(owed.step))
                self._note("rescue", f"the agent answered after {_step_name(owed.step)}")
            self.owed = None

    def tool_started(self) -> None:
        """The model called a tool: its answer so far is that call; the wait is now the tool's."""
        now = time.monotonic()
        self.model_answered = True
        self.owed = None
        self._tool_since = now
        playback = self._playback()
        self._start_measure(max(now, playback.playout_end if playback is not None else now), "tool_run")

    def tool_finished(self) -> None:
        """Every tool called has its result: the model speaks next (unless the tool ended or handed off the call)."""
        self._tool_since = None
        self._owe("tool", time.monotonic())

    # --- the guard's task ----------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            await asyncio.sleep(WAKE_S)
            self.tick(time.monotonic())

    def tick(self, now: float) -> None:
        playback = self._playback()
        if playback is None:
            return
        self._time_the_wait(playback, now)  # first: the apology, too, ends a wait
        if self._ending.failing or self._ending.hanging_up:
            self.owed = None
            self.hold.stop(None)  # no clear of our own: the apology cuts it off (and must not be cleared itself)
            return
        if self._ending.goodbye_armed:
            if self.hold.stop(playback):
                self._note("hold_sound", "stopped: the call is ending")
            self.owed, self._measure = None, None  # the agent ended the call (or handed it off): nothing is owed
            return
        self._cover_tool(playback, now)
        self._watch_answer(playback, now)
        if self.owed is not None:
            self._rescue(self.owed, playback, now)
        self._check_on_caller(playback, now)
        self.hold.feed(playback)

    def finish(self, now: float) -> None:
        """The call is over: a wait still running counts up to now (the caller may have hung up on the silence)."""
        if self._measure is not None:
            since, why = self._measure
            self._measure = None
            if now > since:
                self._record(Wait(why, now - since, "end"))

    # --- measuring -----------------------------------------------------------------------------------

    def _owe(self, why: str, at: float) -> None:
        playback = self._playback()
        silent_from = max(at, playback.playout_end) if playback is not None else at
        self.owed = Owed(why, silent_from, swaps_before=self._swaps_done())
        self._start_measure(silent_from, why, restart=why == "caller")

    def _start_measure(self, since: float, why: str, restart: bool = False) -> None:
        if self._measure is None or restart:
            self._measure = (since, why)

    def _time_the_wait(self, playback: Playback, now: float) -> None:
        """End the stretch being timed when something became audible after it began, or the caller spoke up."""
        if self._measure is None:
            return
        since, why = self._measure
        if playback.playout_end > since + 1e-3 and playback.audible_since > 0:
            heard_at = max(playback.audible_since, since)
            self._measure = None
            self._record(Wait(why, heard_at - since, "hold" if self.hold.playing else "audio"))
            return
        voiced = self._speech.last_voiced_at
        if voiced is not None and voiced > since and now - voiced < TURN_GAP_S:
            onset = self._speech.onset_at
            spoke_at = onset if onset is not None and onset > since else voiced
            self._measure = None
            self._record(Wait(why, spoke_at - since, "caller"))

    def _record(self, wait: Wait) -> None:
        self.waits.append(wait)
        self._observers.notify("note", "dead_air", wait.note_detail())
        if wait.seconds >= self._answer_s:
            self._log().warning(
                "dead air: %.1f s after %s before %s", wait.seconds, WHY[wait.why], ENDED_BY[wait.ended_by]
            )

    # --- covering a tool -----------------------------------------------------------------------------

    def _cover_tool(self, playback: Playback, now: float) -> None:
        if self._tool_since is None or self.hold.playing or not self._answer.tools_pending:
            return
        if now - self._tool_since < self._hold_after_s or playback.quiet_for(now) < self._hold_after_s:
            return
        if self._caller_speaking(now):
            return
        if self.hold.start(playback):
            self._note("hold_sound", f"started: a tool has run {now - self._tool_since:.1f} s")

    # --- rescuing a quiet agent ----------------------------------------------------------------------

    def _watch_answer(self, playback: Playback, now: float) -> None:
        """An answer whose audio stream is still open but has played out: the rest of it is owed."""
        answer = self._answer
        if self.owed is not None or not answer.responding or answer.audio is None:
            return
        if playback.quiet_for(now) >= STALLED_ANSWER_S and now - self._bot_audio_at >= STALLED_ANSWER_S:
            self._owe("answer", max(playback.playout_end, self._bot_audio_at))

    def _rescue(self, owed: Owed, playback: Playback, now: float) -> None:
        swaps = self._swaps()
        if self._caller_speaking(now) or (owed.step != 2 and swaps is not None and swaps.swapping):
            return  # the caller holds the floor, or a connection swap is under way (it asks again itself)
        if owed.step != 2 and swaps is not None and swaps.swaps_done > owed.swaps_before:
            # A swap the guard did not ask for (a scheduled one) asked again itself: the new connection gets its time.
            owed.swaps_before, owed.silent_from = swaps.swaps_done, max(owed.silent_from, now)
        silent = now - owed.silent_from
        if owed.step == 2 and swaps is not None and swaps.swaps_done > owed.swaps_before and not swaps.swapping:
            owed.step, owed.swaps_before = 3, swaps.swaps_done  # our own swap: the wait goes on from where it was
            if not swaps.asked_again:
                self._tell_agent(ASK_AGAIN_NOTE)
        if owed.step == 0 and silent >= self._answer_s:
            owed.step = 1
            if self.hold.start(playback):
                self._note("hold_sound", "started: the agent owes an answer")
            if owed.why == "goodbye":
                self._end_quietly("the agent did not say goodbye to a silent caller")
                return
            self._step("nudge", f"nothing audible {silent:.1f} s after {WHY[owed.why]}: the agent is nudged")
            self._tell_agent(NUDGE_NOTE)
        elif owed.step == 1 and silent >= 2 * self._answer_s:
            owed.step = 2
            guard = self._guard()
            owed.swaps_before = self._swaps_done()
            if guard is not None and guard.reconnect(f"nothing audible {silent:.1f} s after {WHY[owed.why]}"):
                self._step("reconnect", f"still nothing {silent:.1f} s after {WHY[owed.why]}: new model connection")
        if 1 <= owed.step < 4 and silent >= self._give_up_s:
            owed.step = 4
            self._give_up(owed, silent)

    def _give_up(self, owed: Owed, silent: float) -> None:
        self.hold.stop(None)  # the apology cuts it off
        self._step("apology", f"nothing audible {silent:.1f} s after {WHY[owed.why]}, after a nudge and a reconnect")
        if self.model_answered:
            reason = f"agent unresponsive: nothing audible {silent:.0f} s after {WHY[owed.why]}"
            self._ending.fail(reason, kind="agent_unresponsive")
        else:
            reason = f"agent failed to start: its model never answered ({silent:.0f} s after {WHY[owed.why]})"
            self._ending.fail(reason, kind="agent_start")

    def _end_quietly(self, reason: str) -> None:
        self.owed = None
        self._step("idle_end", reason)
        self._ending.arm_goodbye(reason)

    # --- checking on a silent caller -----------------------------------------------------------------

    def _check_on_caller(self, playback: Playback, now: float) -> None:
        if not self._idle_s or not self.checks_in:
            return
        swaps = self._swaps()
        busy = (
            self.owed is not None
            or self.hold.playing
            or self._answer.responding
            or bool(self._answer.tools_pending)
            or not playback.idle
            or (swaps is not None and swaps.swapping)
            or self._caller_speaking(now)
        )
        if busy:
            self._heard_since = None
            return
        if self._goodbye_asked:
            self._end_quietly(f"the caller said nothing after {self.checks} check-ins")
            return
        self._heard_since = self._heard_since or now
        quiet_from = max(self._heard_since, self._speech.last_voiced_at or 0.0, self._present_at)
        quiet = now - quiet_from
        if quiet < self._idle_s:
            return
        self._heard_since = None
        if self.checks < self._idle_checks:
            self.checks += 1
            self._step("check_in", f"the caller said nothing for {quiet:.0f} s: check-in {self.checks}")
            self._tell_agent(CHECK_IN_NOTE.format(seconds=quiet))
            self._owe("check_in", now)
        else:
            self._goodbye_asked = True
            self._step("idle_goodbye", f"the caller said nothing after {self.checks} check-ins: goodbye")
            self._tell_agent(IDLE_GOODBYE_NOTE.format(checks=self.checks))
            self._owe("goodbye", now)

    # --- helpers -------------------------------------------------------------------------------------

    def _swaps_done(self) -> int:
        swaps = self._swaps()
        return swaps.swaps_done if swaps is not None else 0

    def _caller_speaking(self, now: float) -> bool:
        voiced = self._speech.last_voiced_at
        return voiced is not None and now - voiced < TURN_GAP_S

    def _step(self, name: str, detail: str) -> None:
        """A rescue step or a check-in: counted, logged (rescues as warnings) and noted for the recording."""
        self.steps[name] = self.steps.get(name, 0) + 1
        rescue = name in RESCUE_STEPS
        self._log().log(logging.WARNING if rescue else logging.INFO, "%s: %s", name.replace("_", " "), detail)
        self._observers.notify("note", "rescue" if rescue else "check_in", detail)

    def _note(self, kind: str, detail: str) -> None:
        self._observers.notify("note", kind, detail)


def _step_name(step: int) -> str:
    return {1: "a nudge", 2: "a new model connection", 3: "a new model connection"}.get(step, "the apology")


__all__ = ["ENDED_BY", "MIN_TURN_S", "RESCUE_STEPS", "WAKE_S", "WHY", "DeadAir", "Owed", "Swaps", "Wait"]

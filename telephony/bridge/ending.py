"""How a call ends: after the bot's last words are heard, by a hand-off, or with the apology.

The session decides *that* a call ends (a tool asked, a limit was reached, the agent failed); this module
decides *how*, so that a caller never loses the end of a sentence and never sits in silence:

- a **goodbye** waits until the bot's last words have played (the goodbye mark echoed, then
  ``VOICEBOT_HANGUP_GRACE`` of quiet; ``VOICEBOT_HANGUP_MARK_TIMEOUT`` caps the wait if marks never
  return), and a caller talking over it keeps the call going;
- a **hand-off** (a transfer) runs its action at that same moment;
- a **failing agent** gets the spoken apology, heard in full, before the hang-up (or, with a person to take the
  call, ``VOICEBOT_TRANSFER_TO``, before a transfer to them);
- the **hang-up** goes over Twilio's REST API with retries, then the session closes the socket.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Protocol

from telephony.bridge.failure import operator_notes
from telephony.bridge.observer import Observers
from telephony.bridge.playback import Playback
from telephony.bridge.transfer import HandOffAction
from telephony.call_info import CallInfo
from telephony.codec import ULAW_SILENCE, load_sound_file
from telephony.config import Settings
from telephony.operations.logs import CallLog
from telephony.twilio.calls_api import CallsApi, hang_up_with_retries

APOLOGY_CLIP = Path(__file__).parent / "assets" / "apology.ulaw"


class EndingSide(Protocol):
    """What the ending needs from its call (``CallSession`` implements it)."""

    call: CallInfo | None

    @property
    def playback(self) -> Playback | None:
        """What we send to Twilio (None until the stream has started)."""

    @property
    def log(self) -> CallLog:
        """The call's log (it learns the call SID once Twilio's ``start`` arrives)."""

    @property
    def responding(self) -> bool:
        """The model is still producing an answer (telephony.bridge.answer): the goodbye waits for it."""

    @property
    def ended(self) -> bool: ...

    def spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Run a task the call owns (cancelled when it ends)."""

    def finish(self, reason: str, by: str) -> None:
        """The call is over: the session tears down."""

    def count_error(self, kind: str) -> None: ...

    def cut_off(self) -> int:
        """Silence the bot mid-sentence, its reply over for everyone (``responding`` too); the frames dropped."""


class CallEnding:
    """One call's ending: at most one goodbye armed, one apology, one hang-up."""

    def __init__(
        self,
        side: EndingSide,
        settings: Settings,
        observers: Observers,
        call_control: CallsApi | None,
        apology: bytes,
    ) -> None:
        self._side = side
        self._settings = settings
        self._observers = observers
        self._rest = call_control
        self._apology = apology
        self._goodbye: asyncio.Task[None] | None = None
        self.failure: tuple[str, str] | None = None
        """The agent failed (its error kind and what the operator is told): the call's outcome says so."""
        self.to_a_person: HandOffAction | None = None
        """Where a caller goes after the apology instead of being hung up on (the session sets it when
        ``VOICEBOT_TRANSFER_TO`` names a person): the caller still gets help when the agent cannot give it."""
        self.hanging_up = False

    @property
    def failing(self) -> bool:
        """The agent failed: its audio is no longer played, and the apology is on its way."""
        return self.failure is not None

    @property
    def goodbye_armed(self) -> bool:
        """The call is ending for the agent (a goodbye or hand-off waiting to be heard, or the hang-up)."""
        return self._goodbye is not None or self.hanging_up

    def arm_goodbye(self, reason: str, action: HandOffAction | None = None, now: bool = False) -> None:
        """Hang up (or hand off) once the last words have been heard (their mark echoed), not before."""
        playback = self._side.playback
        if self._goodbye is not None or self._side.ended or self.failing or playback is None:
            return
        what = "hand-off" if action else "hang-up"
        self._side.log.info("%s requested (%s): waiting for the bot's last words to play", what, reason)
        if now:
            self._side.log.info("cutting the bot off first: %d queued frames dropped", self._side.cut_off())
        playback.mark("goodbye")
        self._goodbye = self._side.spawn(self._goodbye_watch(playback, reason, action), "goodbye")

    def cancel_goodbye(self) -> bool:
        """The caller spoke over the goodbye: the call goes on. True if one was armed."""
        if self._goodbye is None:
            return False
        self._goodbye.cancel()
        self._goodbye = None
        return True

    async def _goodbye_watch(self, playback: Playback, reason: str, action: HandOffAction | None) -> None:
        """Act after ``hangup_grace_s`` of idle playback, or at the cap if marks never return."""
        grace, cap = self._settings.hangup_grace_s, self._settings.hangup_mark_timeout_s
        if not await playback.settled(grace, cap, busy=lambda: self._side.responding):
            self._side.log.warning("goodbye marks did not come back in time: hanging up anyway")
        self._goodbye = None
        if action is None:
            await self.hang_up(f"agent ended the call ({reason})", by="agent")
            return
        outcome = await action()
        if outcome is not None and outcome.hang_up:
            await self.hang_up(outcome.reason, by="agent")
        elif outcome is not None:
            self._side.finish(outcome.reason, by="agent")

    def fail(self, reason: str, error: BaseException | None = None, kind: str = "agent") -> None:
        """The agent is gone: apologise to the caller, then hang up. Idempotent."""
        if self.failing or self._side.ended:
            return
        notes = operator_notes(error)
        self.failure = (kind, " | ".join([reason, *notes]))
        self._side.count_error(kind)
        self._side.log.error(
            "%s%s",
            reason,
            "".join(f" | {note}" for note in notes),
            exc_info=error if self._side.log.isEnabledFor(logging.DEBUG) else None,
        )
        self._observers.notify("note", "error", self.failure[1])
        self.cancel_goodbye()
        self._side.spawn(self._apologise(reason), "apology")

    async def _apologise(self, reason: str) -> None:
        playback = self._side.playback
        assert playback is not None
        if not playback.idle:
            playback.interrupt()  # cut off whatever the bot was saying; nothing to clear if it was quiet
        playback.play(self._apology)
        name = playback.mark("apology")
        cap = len(self._apology) / 8000 + self._settings.hangup_mark_timeout_s
        if not await playback.heard(name, cap):
            self._side.log.warning("apology mark did not come back within %.1fs", cap)
        if self.to_a_person is not None:
            outcome = await self.to_a_person()
            if outcome is not None and not outcome.hang_up:
                self._side.finish(f"{reason}; {outcome.reason}", by="server")
                return
        await self.hang_up(reason, by="server")

    async def hang_up(self, reason: str, by: str) -> None:
        """REST hang-up when configured (an already-ended call is fine), then the session closes the socket."""
        if self.hanging_up:
            return
        self.hanging_up = True
        self._side.log.info("hanging up: %s", reason)
        self._observers.notify("note", "hangup", reason)
        call = self._side.call
        if self._rest is not None and call is not None:
            if not await hang_up_with_retries(self._rest, call.call_sid, self._side.log):
                self._side.count_error("rest_hangup")
        self._side.finish(reason, by=by)


@functools.cache
def load_apology() -> bytes:
    """The spoken apology shipped with the package (raw μ-law 8 kHz), trimmed to whole frames.

    Read once per process: sessions must not touch the disk on the event loop."""
    return load_sound_file(APOLOGY_CLIP) if APOLOGY_CLIP.is_file() else bytes([ULAW_SILENCE]) * 8000


__all__ = ["CallEnding", "EndingSide", "load_apology"]

"""The caller talking over the bot: one ``clear`` per interruption, on the model's earliest sign of it.

Models generate speech faster than it plays, so when the caller talks over the bot its answer is often
already generated in full and sits unheard in Twilio's buffer. The model then has nothing to cancel, and
may report no barge-in at all: OpenAI Realtime says only ``input_audio_buffer.speech_started``, which strands
turns into a user transcript opening. So the bridge clears on whichever comes first: a user transcript
opening (OpenAI's ``speech_started``, Gemini's input transcription, Nova's USER text) or the model's own
``BidiBargeInEvent``; what comes after the clear, before any new bot audio, is the same interruption and
only a note.

The trigger is always one of the model's speech signals (its VAD), never our level meter, so noise on the
line clears nothing. The meter only dates the caller's speech: a transcript opening counts only for speech
that began while unheard bot audio was queued or playing, so late text of the question the bot is answering
(Gemini transcribes late) never cuts that answer. A model that keeps the cut answer in its conversation
(``agent.heard.HeardAudio``) is told, once per cut answer, how much of it the caller heard.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from agent.heard import HeardAudio
from telephony.bridge.answer import AnswerState
from telephony.bridge.caller_speech import CallerSpeech
from telephony.bridge.cut_answer import words_heard
from telephony.bridge.ending import CallEnding
from telephony.bridge.observer import Observers
from telephony.bridge.playback import Playback, Stamp
from telephony.bridge.stats import CallStats
from telephony.operations.latency import LatencySamples
from telephony.operations.logs import CallLog

HEARD_TIMEOUT_S = 5.0
"""Longest the model may take to take note of what was heard (it runs in its own task; the call goes on)."""


class BargeInHost(Protocol):
    """What the barge-in handling needs from its call (``CallSession`` implements it)."""

    ending: CallEnding
    stats: CallStats
    latency: LatencySamples
    observers: Observers

    @property
    def log(self) -> CallLog: ...

    @property
    def playback(self) -> Playback | None: ...

    def spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]: ...


class BargeIns:
    """One call's interruptions. Fed by the agent side's single reader of the model's events; never awaits."""

    def __init__(
        self,
        host: BargeInHost,
        answer: AnswerState,
        speech: CallerSpeech,
        cut_off: Callable[[tuple[Stamp, ...]], int],
        drop_reply: Callable[[], None],
        model: Callable[[], Any],
    ) -> None:
        self._host = host
        self._answer = answer
        self._speech = speech
        self._cut_off = cut_off
        """Clear Twilio's buffer and drop the rest of the reply (the link's ``cut_off``); frames dropped."""
        self._drop_reply = drop_reply
        """Drop the rest of the reply without a clear (nothing of it was left to hear)."""
        self._model = model
        self._playing_since = 0.0
        """Monotonic time bot audio began to play after the caller had heard everything (or been cleared)."""
        self._cleared = False
        """A clear was sent and no bot audio has been played since: the same interruption goes on."""
        self._early_clear_at: float | None = None
        """When the latest clear came on a user transcript, before the model's own barge-in."""
        self._told: set[str] = set()
        self._heard_s: float | None = None
        """How much of the reply being cut the caller had heard (asked just before the clear)."""

    def audio_played(self, now: float) -> None:
        """Bot audio (of a reply not cut) is about to be played: a later signal is a new interruption."""
        playback = self._host.playback
        if self._cleared or (playback is not None and playback.unheard_seconds == 0):
            self._playing_since = now
        self._cleared, self._early_clear_at = False, None

    def caller_transcript(self) -> None:
        """The model opened a user transcript: the caller speaks, by its VAD. A barge-in if that speech began
        over bot audio the caller has not heard yet; otherwise an ordinary turn (nothing to do)."""
        host = self._host
        playback = host.playback
        if playback is None or host.ending.failing or self._cleared:
            return
        onset = self._onset_over_the_bot()
        unheard = playback.unheard_seconds
        if onset is None or unheard == 0:
            return
        received = time.monotonic()
        host.stats.barge_ins += 1
        host.stats.early_barge_ins += 1
        self._early_clear_at = received
        dropped = self._clear((("speech_signal_to_clear", received), ("caller_onset_to_clear", onset)))
        host.log.info(
            "barge-in on the caller's speech (before the model's own): clear sent %.0f ms after the caller began, "
            "about %.2f s of bot audio unheard (%d frames unsent)",
            (received - onset) * 1000,
            unheard,
            dropped,
        )
        host.observers.notify("note", "barge_in", f"{self._lost(unheard)}; cleared on the caller's speech")
        self._goodbye_goes_on()

    def model_barge_in(self) -> None:
        """The model reports the caller talking over it (the answer state has cut the reply already).

        Only a barge-in if the caller lost bot audio (some was playing or queued); after the bot has been
        heard in full, or after this interruption's clear, it is a note and nothing is cleared."""
        host = self._host
        assert host.playback is not None
        if host.ending.failing:
            return
        if self._cleared:
            self._drop_reply()
            if self._early_clear_at is not None:
                after_ms = (time.monotonic() - self._early_clear_at) * 1000
                self._early_clear_at = None
                host.log.info("the model's barge-in came %.0f ms after the clear on the caller's speech", after_ms)
                host.observers.notify("note", "barge_in_confirmed", f"the model's barge-in, {after_ms:.0f} ms later")
            return
        unheard = host.playback.unheard_seconds
        if unheard == 0:
            self._drop_reply()
            host.log.info("the model reported a barge-in with nothing playing: nothing to clear")
            host.observers.notify("note", "caller_spoke", "the model reported a barge-in; nothing was playing")
            return
        host.stats.barge_ins += 1
        stamps: tuple[Stamp, ...] = (("barge_in_to_clear", time.monotonic()),)
        if (onset := self._onset_over_the_bot()) is not None:
            stamps += (("caller_onset_to_clear", onset),)
        dropped = self._clear(stamps)
        host.log.info("barge-in: clear sent, about %.2f s of bot audio unheard (%d frames unsent)", unheard, dropped)
        host.observers.notify("note", "barge_in", self._lost(unheard))
        self._goodbye_goes_on()

    def _onset_over_the_bot(self) -> float | None:
        """When the caller's latest speech began, if that was while bot audio was unheard."""
        onset = self._speech.onset_at
        return onset if onset is not None and onset >= self._playing_since else None

    def _clear(self, stamps: tuple[Stamp, ...]) -> int:
        """Tell the model what was heard of the reply being cut, then clear; frames dropped."""
        playback = self._host.playback
        assert playback is not None
        content_id = self._answer.last_audio
        self._heard_s = playback.heard_of(content_id) if content_id is not None else None
        if content_id is not None and content_id not in self._told and self._heard_s is not None:
            self._tell_heard(content_id, self._heard_s)
        self._cleared = True
        return self._cut_off(stamps)

    def _lost(self, unheard_s: float) -> str:
        """The barge-in note: the audio Twilio and we still held, and, where the answer's text is known, how much of
        it the caller heard (a model that streams its reply as it speaks has sent only the start of it)."""
        lost = f"about {unheard_s:.2f} s of bot audio unheard"
        text, heard_s = self._answer.text, self._heard_s
        if not text or heard_s is None:
            return lost
        total, heard = len(text.split()), len(words_heard(text, heard_s).split())
        return f"{lost}; {heard} of the answer's {total} words heard"

    def _tell_heard(self, content_id: str, heard_s: float) -> None:
        model = self._model()
        if not isinstance(model, HeardAudio):
            return
        self._told.add(content_id)
        heard_ms = round(heard_s * 1000)
        self._host.spawn(self._heard(model, content_id, heard_ms), "audio-heard")

    async def _heard(self, model: HeardAudio, content_id: str, heard_ms: int) -> None:
        """In its own task: the model may talk to its service, and the event reader must not wait on it."""
        log = self._host.log
        try:
            async with asyncio.timeout(HEARD_TIMEOUT_S):
                await model.audio_heard(content_id, heard_ms)
        except Exception as error:  # noqa: BLE001 - the call goes on; the model only keeps a longer answer
            log.warning("could not tell the model what the caller heard of %s: %r", content_id, error)
            return
        log.info("told the model the caller heard %d ms of %s", heard_ms, content_id)

    def _goodbye_goes_on(self) -> None:
        if self._host.ending.cancel_goodbye():
            self._host.log.info("caller spoke over the goodbye: the call goes on")


__all__ = ["HEARD_TIMEOUT_S", "BargeInHost", "BargeIns"]

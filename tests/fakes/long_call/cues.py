"""Restarts on cue: a local server's newest connection ended, its provider's way, at chosen moments of a call.

- ``utterance``: the connection has received 0.4 s of one caller utterance (the caller is mid-sentence);
- ``answer``: just after the conversation answered a caller turn with a second or more of speech, while the
  answer's audio is still being made (the answer is cut, and the new connection must pick it up);
- ``after answer``: a set time after the conversation answered a caller turn (the order in which the bot once
  answered twice: a model that answers, then loses its connection before the bridge has seen the turn end).

Seeded times hit these moments only by chance; a cue hits them every time. The cue reads what the server
records (each connection's caller audio, as it arrives) and the brain's answer times, so a server needs nothing
but a way to end a connection now: local OpenAI's ``expire_session``, local Gemini's ``go_away``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tests.fakes.long_call.conversation import SPEECH_RMS, ToneConversation

__all__ = ["CUE_MOMENTS", "RestartCues"]

CUE_MOMENTS = ("utterance", "answer", "after answer")
MID_UTTERANCE_S = 0.4
MID_ANSWER_S = 0.08
"""Well inside the making of a second of speech, even at four times real time (0.25 s)..."""
MID_ANSWER_LATEST_S = 0.2
"""...and at the latest this long after the answer (a late look waits for the next answer)."""
REARM_QUIET_S = 0.3
"""After a cue mid-utterance, the next waits for this much quiet: the new connection first hears the rest of
the same utterance (carried over), which is not a new one."""
FRAME_S = 0.02
POLL_S = 0.01


class RestartCues:
    """Ends connections at the ``moments`` given (each entry once, in whatever order they come).

    ``records``: the server's connection records, newest last (each with ``index`` and ``caller_audio``);
    ``rate_of``: a record's caller audio rate (None until known); ``end``: ends connection ``index`` now, False
    if it is not open. ``answer`` and ``after answer`` count from the ``after_answer_n``-th answer, one cue per
    answer, and the next cue skips an answer; ``answer`` is missed on an answer too short to be cut while it is
    made, and waits for the next.
    """

    def __init__(
        self,
        records: Sequence[Any],
        rate_of: Callable[[Any], int | None],
        end: Callable[[int], bool],
        brain: ToneConversation,
        moments: Sequence[str],
        *,
        after_answer_s: float = 1.0,
        after_answer_n: int = 1,
    ) -> None:
        unknown = set(moments) - set(CUE_MOMENTS)
        if unknown:
            raise ValueError(f"no such cue: {sorted(unknown)} (choose from {', '.join(CUE_MOMENTS)})")
        self._records = records
        self._rate_of = rate_of
        self._end = end
        self._brain = brain
        self.remaining = list(moments)
        self.fired: list[tuple[str, int]] = []
        """Each cue that ended a connection, with that connection's index."""
        self._after_answer_s = after_answer_s
        self._next_answer = max(0, after_answer_n - 1)
        self._record: Any = None
        self._offset = 0
        self._loud_s = 0.0
        self._quiet_s = 0.0
        self._armed = True

    async def run(self) -> None:
        """Watch until every cue has fired (cancel it to stop sooner)."""
        while self.remaining:
            self._poll()
            await asyncio.sleep(POLL_S)

    def _poll(self) -> None:
        record = self._records[-1] if self._records else None
        if record is None:
            return
        if record is not self._record:
            self._record, self._offset = record, 0
        self._listen(record)
        if "utterance" in self.remaining and self._armed and self._loud_s >= MID_UTTERANCE_S:
            if self._fire("utterance", record.index):
                self._armed = False
        answers = self._brain.answered
        if len(answers) <= self._next_answer:
            return
        now = time.monotonic()
        answered_at, audio_s = answers[-1]
        if "answer" in self.remaining and audio_s >= 1.0 and MID_ANSWER_S <= now - answered_at < MID_ANSWER_LATEST_S:
            if self._fire("answer", record.index):
                self._next_answer = len(answers) + 1
                return
        if "after answer" in self.remaining and now >= answers[self._next_answer][0] + self._after_answer_s:
            if self._fire("after answer", record.index):
                self._next_answer = len(answers) + 1

    def _listen(self, record: Any) -> None:
        """Follow the newest connection's caller audio, 20 ms at a time: how long the caller has been loud."""
        rate = self._rate_of(record)
        if not rate:
            return
        frame = int(rate * FRAME_S) * 2
        audio = record.caller_audio
        while self._offset + frame <= len(audio):
            samples = np.frombuffer(bytes(audio[self._offset : self._offset + frame]), dtype="<i2").astype(np.float64)
            self._offset += frame
            if float(np.sqrt(np.mean(samples * samples))) >= SPEECH_RMS:
                self._loud_s, self._quiet_s = self._loud_s + FRAME_S, 0.0
                continue
            self._quiet_s += FRAME_S
            if self._quiet_s >= REARM_QUIET_S - 1e-9:
                self._loud_s, self._armed = 0.0, True

    def _fire(self, moment: str, index: int) -> bool:
        if not self._end(index):
            return False  # that connection is not open (yet, or any more): try again on the next look
        self.remaining.remove(moment)
        self.fired.append((moment, index))
        return True

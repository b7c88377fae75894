"""The caller audio a model connection has heard but not yet turned into history.

When strands replaces a model's connection, a caller in mid-sentence has been heard in part by the old one:
:class:`UtteranceKeeper` keeps what the current connection was given since the last utterance it turned into
history, so that audio goes to the new connection first (telephony.bridge.continuity).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from telephony.codec import FRAME_SECONDS as FRAME_S
from telephony.codec import SPEECH_LEVEL_DBFS

ONSET_FRAMES = 2
PREROLL_S = 0.3
"""Audio kept before an utterance's first loud frame, so its soft start is carried over too."""
HANGOVER_S = 0.5
"""Quiet after the last loud frame that ends an utterance (models end-point after about 0.5-1 s)."""
UNHEARD_EXPIRY_S = 12.0
"""An ended utterance the model never transcribed for this long was not speech to it (a cough): let it go."""
MAX_KEPT_S = 30.0
"""The longest utterance in progress kept whole; a longer monologue is carried over by its last 30 s."""
ENDPOINT_MIN_S = 0.1
"""Quiet a model needs at least before it can end-point the caller: an answer starting sooner is not to them."""


@dataclass
class _Segment:
    """One stretch of caller speech, in bytes of audio given to the current connection."""

    start: int
    end: int | None = None
    """Just after its last loud frame, once it has ended (None while the caller is still speaking)."""
    ended_at: float | None = None
    preroll: bool = True
    key: int = field(default_factory=itertools.count().__next__)
    """Which utterance it is: the parts of one utterance taken at different moments share it."""


class UtteranceKeeper:
    """The caller audio the current connection has heard but not yet turned into history.

    Fed with every chunk once the connection has taken it (:meth:`sent`); told when the model took the
    caller's turn (:meth:`took`: an answer, or a transcript before it, in whatever order and at whatever
    moment they come; :meth:`heard` is the plain form, for a transcript alone). :meth:`unheard` is what a
    new connection must hear again: from just before the first utterance not yet heard to the end of what
    was sent. Speech is found by level on 20 ms frames.
    """

    def __init__(
        self,
        sample_rate: int,
        *,
        threshold_dbfs: float = SPEECH_LEVEL_DBFS,
        preroll_s: float = PREROLL_S,
        hangover_s: float = HANGOVER_S,
        expiry_s: float = UNHEARD_EXPIRY_S,
        max_s: float = MAX_KEPT_S,
    ) -> None:
        self.sample_rate = sample_rate
        self._frame_bytes = int(sample_rate * FRAME_S) * 2
        threshold = 32768.0 * 10 ** (threshold_dbfs / 20)
        self._loud_energy = threshold**2 * (self._frame_bytes // 2)
        """A frame's sum of squared samples at the threshold's RMS."""
        self._preroll = int(preroll_s * sample_rate) * 2
        self._hangover_frames = max(1, round(hangover_s / FRAME_S))
        self._hangover_bytes = self._hangover_frames * self._frame_bytes
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
        self.last_taken: list[tuple[int, bytes]] = []
        """What the latest :meth:`took` took, utterance by utterance (each with its key and its pre-roll): a model
        that lost its connection before it transcribed one or answered it in full never put it in the history, and a
        new connection must hear it again."""

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
            samples = np.frombuffer(data, dtype="<i2", count=usable // 2).astype(np.float64)
            frames = samples.reshape(-1, self._frame_bytes // 2)
            energy = np.vecdot(frames, frames)  # each frame's sum of squares in one call (exact; einsum costs 5x)
            louds = (energy >= self._loud_energy).tolist()
            if any(louds):
                for index, loud in enumerate(louds):
                    self._frame(loud, first + index * self._frame_bytes, now)
            else:
                self._quiet_frames(len(louds), now)  # most chunks of a call: no frame-by-frame walk
        self._pending = data[usable:]
        self._trim(now)

    def heard(self, now: float) -> None:
        """The model turned caller speech into history: every utterance that has ended is heard.

        If none has ended, the model end-pointed sooner than we do: the utterance in progress is heard up
        to now, and whatever the caller says next is a new utterance (without pre-roll, which was heard).
        """
        self._drop_heard()
        ended = [segment for segment in self._segments if segment.end is not None]
        if ended:
            self._segments = [segment for segment in self._segments if segment.end is None]
        elif self._segments:
            self._segments[-1].start = self._end
            self._segments[-1].preroll = False
        self._trim(now)

    def took(self, now: float) -> bool:
        """The model took the caller's turn (it started an answer, or a transcript): every utterance that has
        ended is heard, transcribed or not. Returns whether anything was taken.

        If none has ended, the utterance in progress is taken up to now if the caller has been quiet long enough
        for a model to end-point it (a model that end-points sooner than we do). While the caller is loud the answer
        is to something else (an earlier utterance, a tool result, a text, or a transcript streaming as the caller
        speaks), and the utterance stays whole.
        """
        self._drop_heard()
        ended = [segment for segment in self._segments if segment.end is not None]
        self._segments = [segment for segment in self._segments if segment.end is None]
        # each with the quiet that ended it, so utterances given again stay apart (up to the next one's pre-roll)
        tails = [self._start_of(following) for following in ended[1:]] + [self._end] if ended else []
        self.last_taken = [
            (segment.key, self._audio_of(segment, min((segment.end or 0) + self._hangover_bytes, tail)))
            for segment, tail in zip(ended, tails, strict=True)
        ]
        if not ended and self._segments and self._quiet_run * FRAME_S >= ENDPOINT_MIN_S:
            current = self._segments[-1]
            if current.start < self._end:
                self.last_taken = [(current.key, self._audio_of(current, self._end))]
            current.start, current.preroll = self._end, False
        self._trim(now)
        return bool(self.last_taken)

    def _start_of(self, segment: _Segment) -> int:
        """Where ``segment``'s audio begins: its pre-roll, as far as it is still kept."""
        return max(self._base, segment.start - (self._preroll if segment.preroll else 0))

    def _audio_of(self, segment: _Segment, end: int) -> bytes:
        """Audio from ``segment``'s start (with its pre-roll) to ``end``."""
        return bytes(self._audio[self._start_of(segment) - self._base : end - self._base])

    def unheard(self, now: float) -> bytes:
        """Audio a new connection must hear again (empty when the old one heard everything said)."""
        self._expire(now)
        if not self._segments:
            if not self._loud_run:
                return b""  # nobody is speaking; else an utterance is starting: its first frames and pre-roll
            onset = self._end - len(self._pending) - self._loud_run * self._frame_bytes
            return bytes(self._audio[max(self._base, onset - self._preroll) - self._base :])
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
        self.last_taken = []
        self.sent(carried, now)

    def _frame(self, loud: bool, offset: int, now: float) -> None:
        if not loud:
            self._quiet_frames(1, now)
            return
        current = self._segments[-1] if self._segments and self._segments[-1].end is None else None
        if current is None:
            self._loud_run += 1
            if self._loud_run >= ONSET_FRAMES:
                start = offset - (ONSET_FRAMES - 1) * self._frame_bytes
                self._segments.append(_Segment(start=start))
                self._quiet_run = 0
                self._last_loud_end = offset + self._frame_bytes
            return
        self._quiet_run = 0
        self._last_loud_end = offset + self._frame_bytes

    def _quiet_frames(self, count: int, now: float) -> None:
        """``count`` quiet frames in a row, in one step (a whole quiet chunk, or one quiet frame)."""
        current = self._segments[-1] if self._segments and self._segments[-1].end is None else None
        if current is None:
            self._loud_run = 0
            return
        self._quiet_run += count
        if self._quiet_run >= self._hangover_frames:
            self._quiet_run = self._hangover_frames  # where the frame that ended it left the count
            current.end, current.ended_at = self._last_loud_end, now
            self._loud_run = 0

    def _drop_heard(self) -> None:
        """Forget utterances heard to their end: what is left of one after a model end-pointed it sooner than we
        did is the quiet that followed (kept, it would make the next transcript look like that utterance's)."""
        self._segments = [segment for segment in self._segments if segment.end is None or segment.end > segment.start]

    def _expire(self, now: float) -> None:
        self._drop_heard()
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


__all__ = ["UtteranceKeeper"]

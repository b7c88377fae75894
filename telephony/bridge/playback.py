"""What we send to Twilio, in order, and what the caller has really heard.

Twilio buffers every frame we send and plays it in real time, so "sent" is not "heard". Marks
tell the difference: Twilio echoes a mark once the audio before it has played. But ``clear``
echoes every pending mark at once, so marks are flagged as cleared *before* the clear is queued,
and an echo of a cleared mark means nothing was heard.

One writer task drains :meth:`Playback.next_message`; everything else only appends, without
awaiting, so the agent's event stream never waits on the network. Frames queued back to back leave as
one ``media`` message (up to :data:`MAX_FRAMES_PER_MESSAGE`; Twilio takes any whole number of frames):
each message costs a JSON encoding, a WebSocket frame and a system call, whatever it carries. While Twilio still
has more than :data:`GATHER_AHEAD_S` of audio to play, the writer waits for a whole message's worth of frames
before sending (the model speaks faster than real time, a few frames at a time): the caller hears the same audio
at the same moment, in fewer messages. A reply's first audio, marks and ``clear`` never wait.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from telephony.codec import FRAME_BYTES, FRAME_SECONDS
from telephony.twilio.media_streams import clear_message, mark_message, media_message

POLL_S = 0.05
"""How often the waits below look at the marks."""
MAX_FRAMES_PER_MESSAGE = 10
"""Most 20 ms frames joined into one ``media`` message (200 ms): marks and ``clear`` still go between."""
GATHER_AHEAD_S = 0.3
"""Twilio's unplayed audio above which frames wait to fill a message (the network's jitter is far below it)."""


class MarkState(Enum):
    PENDING = "pending"
    PLAYED = "played"
    CLEARED = "cleared"


@dataclass(slots=True)
class MarkRecord:
    name: str
    utterance: str | None
    heard_seconds: float
    """Audio of ``utterance`` that has played once this mark echoes."""
    final: bool
    state: MarkState = MarkState.PENDING


Stamp = tuple[str, float]
"""A latency measure that ends when this message is written: (measure name, monotonic start time)."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """The next message for the socket, and the latency measures its writing completes."""

    text: str
    stamps: tuple[Stamp, ...] = ()
    frames: int = 0
    """20 ms audio frames the message carries (0: a mark or a clear)."""


@dataclass(frozen=True, slots=True)
class _Frame:
    """A queued 20 ms frame of μ-law, not yet a message (it may leave joined with the frames after it)."""

    ulaw: bytes
    stamps: tuple[Stamp, ...]


@dataclass(slots=True)
class Utterance:
    """One stream of bot audio (one model ``content_id``)."""

    id: str
    queued_seconds: float = 0.0
    heard_seconds: float = 0.0
    finished: bool = False
    heard_in_full: bool = False
    interrupted: bool = False


class Playback:
    """Outbound message queue for one stream, with mark bookkeeping."""

    def __init__(
        self,
        stream_sid: str,
        mark_interval_s: float = 0.5,
        max_queued_frames: int = 30_000,
        pace_lead_s: float | None = None,
        gather_ahead_s: float | None = GATHER_AHEAD_S,
    ) -> None:
        self.stream_sid = stream_sid
        # None: hand frames to the socket as fast as they come (Twilio buffers them). A number: keep at most
        # this much audio ahead of real time in Twilio's buffer (benchmarks/pacing.py: why it is off by default).
        self._pace_lead_s = pace_lead_s
        self._gather_ahead_s = None if pace_lead_s is not None else gather_ahead_s
        """None: every frame leaves as soon as the writer can send it (pacing sends a frame at a time anyway)."""
        self._gathering = False
        """The writer waits for a message's worth of frames: new frames wake it only once there are enough."""
        self._queue: deque[Outgoing | _Frame] = deque()
        self._ready = asyncio.Event()
        self._marks: dict[str, MarkRecord] = {}
        self._names = itertools.count(1)
        self._mark_interval_s = mark_interval_s
        self._max_queued_frames = max_queued_frames
        self._queued_frames = 0
        self._unmarked_frames = 0
        self._since_mark_s = 0.0
        self.utterances: dict[str, Utterance] = {}
        self.playout_end = 0.0
        """Monotonic time at which Twilio should finish playing what has been written."""
        self.audible_since = 0.0
        """Monotonic time the audio playing now (or last) began, after the caller had heard all before it: when the
        latest stretch of silence at the caller ended."""
        self.frames_sent = 0
        self.frames_dropped = 0
        self.clears = 0

    # --- producers (never await) ---------------------------------------------------------------

    def play(self, ulaw: bytes, utterance: str | None = None, stamps: tuple[Stamp, ...] = ()) -> int:
        """Queue whole 160-byte frames; a progress mark follows every ``mark_interval_s`` of audio.

        ``stamps`` are latency measures that end when the first of these frames is written.
        """
        record = self._utterance(utterance)
        frames = 0
        for offset in range(0, len(ulaw) - len(ulaw) % FRAME_BYTES, FRAME_BYTES):
            if self._queued_frames >= self._max_queued_frames:
                self.frames_dropped += 1
                continue
            self._queue.append(_Frame(ulaw[offset : offset + FRAME_BYTES], stamps if frames == 0 else ()))
            self._queued_frames += 1
            self._unmarked_frames += 1
            frames += 1
            if record is not None:
                record.queued_seconds += FRAME_SECONDS
                self._since_mark_s += FRAME_SECONDS
                if self._since_mark_s >= self._mark_interval_s - 1e-9:
                    self._add_mark(record, final=False)
        if frames and (not self._gathering or self._queued_frames >= MAX_FRAMES_PER_MESSAGE):
            self._ready.set()
        return frames

    def end_utterance(self, utterance: str) -> str | None:
        """Mark the end of an utterance: its echo means the caller heard all of it."""
        record = self.utterances.get(utterance)
        if record is None or record.interrupted:
            return None
        record.finished = True
        return self._add_mark(record, final=True)

    def mark(self, label: str) -> str:
        """A named checkpoint (e.g. after the apology clip): echoes once everything before it played."""
        name = f"{label}-{next(self._names)}"
        self._enqueue_mark(MarkRecord(name=name, utterance=None, heard_seconds=0.0, final=True))
        return name

    def interrupt(self, stamps: tuple[Stamp, ...] = ()) -> int:
        """Barge-in: flag pending marks cleared, drop queued audio, and put ``clear`` first in line.

        Returns the number of queued frames dropped; ``stamps`` end when the clear is written.
        """
        dropped = self._queued_frames
        for record in self._marks.values():
            if record.state is MarkState.PENDING:
                record.state = MarkState.CLEARED
        for utterance in self.utterances.values():
            if not utterance.heard_in_full:
                utterance.interrupted = True
        self._queue.clear()
        self._queue.append(Outgoing(clear_message(self.stream_sid), stamps))
        self._queued_frames = 0
        self._unmarked_frames = 0
        self._since_mark_s = 0.0
        self.playout_end = time.monotonic()
        self.clears += 1
        self._ready.set()
        return dropped

    # --- consumer (the writer task) ------------------------------------------------------------

    async def next_message(self) -> Outgoing:
        while True:
            while not self._queue:
                self._ready.clear()
                await self._ready.wait()
            hold = max(self._pace_hold(), self._gather_hold())
            if hold <= 0:
                break
            self._ready.clear()  # woken early by a clear (barge-in), a mark or new audio; then look again
            self._gathering = self._gather_ahead_s is not None
            try:
                await asyncio.wait_for(self._ready.wait(), hold)
            except TimeoutError:
                pass
            finally:
                self._gathering = False
        head = self._queue.popleft()
        if isinstance(head, Outgoing):
            return head
        return self._media(head)

    def _media(self, first: _Frame) -> Outgoing:
        """``first`` and the frames queued right behind it (one at a time when pacing), as one message."""
        frames, stamps = [first.ulaw], first.stamps
        limit = 1 if self._pace_lead_s is not None else MAX_FRAMES_PER_MESSAGE
        queue = self._queue
        while queue and len(frames) < limit and isinstance(frame := queue[0], _Frame):
            queue.popleft()
            frames.append(frame.ulaw)
            stamps += frame.stamps
        count = len(frames)
        self._queued_frames -= count
        self.frames_sent += count
        now = time.monotonic()
        if self.playout_end < now:
            self.audible_since = now
        self.playout_end = max(self.playout_end, now) + count * FRAME_SECONDS
        return Outgoing(media_message(self.stream_sid, b"".join(frames)), stamps, count)

    def _gather_hold(self) -> float:
        """Seconds the frames at the head may wait for more while Twilio has plenty to play; 0: send now."""
        if self._gather_ahead_s is None or not isinstance(self._queue[0], _Frame):
            return 0.0
        if self._queued_frames >= MAX_FRAMES_PER_MESSAGE or len(self._queue) > self._queued_frames:
            return 0.0  # a whole message, or a mark (an utterance's end) behind the frames: nothing to wait for
        return self.playout_end - self._gather_ahead_s - time.monotonic()

    def _pace_hold(self) -> float:
        """Seconds to wait before the next frame when pacing; 0 for anything but media."""
        if self._pace_lead_s is None or not isinstance(self._queue[0], _Frame):
            return 0.0
        return self.playout_end - self._pace_lead_s - time.monotonic()

    # --- echoes from Twilio ----------------------------------------------------------------------

    def on_echo(self, name: str) -> MarkRecord | None:
        """Record a mark echo; returns the mark (its state says whether the audio was heard)."""
        record = self._marks.pop(name, None)
        if record is None or record.state is MarkState.CLEARED:
            return record
        record.state = MarkState.PLAYED
        utterance = self.utterances.get(record.utterance) if record.utterance else None
        if utterance is not None:
            utterance.heard_seconds = max(utterance.heard_seconds, record.heard_seconds)
            utterance.heard_in_full = record.final
        return record

    @property
    def idle(self) -> bool:
        """Nothing queued, nothing unmarked sent, and every mark echoed: the caller heard it all."""
        return not self._queue and self._unmarked_frames == 0 and not self.pending_marks

    @property
    def unheard_seconds(self) -> float:
        """About how much bot audio the caller has not heard yet: queued here, or sent and still playing.

        0 when everything sent has played (every mark has come back): talking then costs the caller nothing,
        so it is no barge-in. Otherwise frames still queued here plus Twilio's estimated playout (at least
        one frame: the marks say something is still playing even if the estimate has run out).
        """
        if self.idle:
            return 0.0
        playing = max(self.playout_end - time.monotonic(), FRAME_SECONDS)
        return self._queued_frames * FRAME_SECONDS + playing

    def quiet_for(self, now: float) -> float:
        """Seconds since the caller's ear last had bot audio, by Twilio's estimated playout: 0 while any is queued
        here or still playing there. Unlike :attr:`idle` it needs no mark back (an utterance cut off before its first
        mark leaves one pending for ever)."""
        return 0.0 if self._queued_frames else max(0.0, now - self.playout_end)

    def heard_of(self, utterance: str) -> float:
        """About how many seconds of ``utterance`` the caller has heard by now (ask before a clear).

        At least what its echoed marks confirm, at most what was queued of it; in between, what was queued
        less what is still unheard, as the newest utterance is the one that plays last.
        """
        record = self.utterances.get(utterance)
        if record is None:
            return 0.0
        if record.heard_in_full:
            return record.queued_seconds
        estimate = record.queued_seconds - self.unheard_seconds
        return min(max(estimate, record.heard_seconds), record.queued_seconds)

    def is_pending(self, name: str) -> bool:
        record = self._marks.get(name)
        return record is not None and record.state is MarkState.PENDING

    @property
    def pending_marks(self) -> int:
        return sum(1 for record in self._marks.values() if record.state is MarkState.PENDING)

    # --- waiting for the caller to hear ----------------------------------------------------------

    async def heard(self, name: str, timeout_s: float) -> bool:
        """Wait for mark ``name`` to come back (or be cleared); False if it has not within ``timeout_s``."""
        try:
            async with asyncio.timeout(timeout_s):
                while self.is_pending(name):
                    await asyncio.sleep(POLL_S)
        except TimeoutError:
            return False
        return True

    async def settled(self, grace_s: float, timeout_s: float, busy: Callable[[], bool]) -> bool:
        """Wait until the caller has heard everything and nothing more has come for ``grace_s``.

        ``busy()`` says more is on its way (the model is still answering). False if marks still had not
        come back ``timeout_s`` after playout should have ended: Twilio lost them, act anyway.
        """
        started = time.monotonic()
        quiet_since: float | None = None
        while True:
            now = time.monotonic()
            if self.idle and not busy():
                quiet_since = quiet_since or now
                if now - quiet_since >= grace_s:
                    return True
            else:
                quiet_since = None
            if now >= max(started, self.playout_end) + timeout_s:
                return False
            await asyncio.sleep(POLL_S)

    # --- internals -------------------------------------------------------------------------------

    def _utterance(self, utterance: str | None) -> Utterance | None:
        if utterance is None:
            return None
        record = self.utterances.get(utterance)
        if record is None:
            record = self.utterances[utterance] = Utterance(id=utterance)
        return record

    def _add_mark(self, utterance: Utterance, final: bool) -> str:
        name = f"{'end' if final else 'at'}-{next(self._names)}"
        self._enqueue_mark(
            MarkRecord(name=name, utterance=utterance.id, heard_seconds=utterance.queued_seconds, final=final)
        )
        return name

    def _enqueue_mark(self, record: MarkRecord) -> None:
        self._marks[record.name] = record
        self._queue.append(Outgoing(mark_message(self.stream_sid, record.name)))
        self._unmarked_frames = 0
        self._since_mark_s = 0.0
        self._ready.set()

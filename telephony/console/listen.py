"""Listening in on a live call from the calls page: both sides' audio, read-only, for the operator.

:class:`ListenTaps` is an ObserverFactory: every call (a console call or a real Twilio one) gets a
:class:`CallTap`, which sees each Twilio message the bridge receives (the caller's μ-law frames) and
sends (the bot's frames and ``clear``). While nobody listens a tap does nothing but one length check;
while someone does, it copies each frame's payload into every listener's bounded queue. A listener too
slow to keep up loses its oldest frames (counted), never delays the call: the hooks run on the audio
path and never wait.

The page reads a listener as one long HTTP response (``fetch`` with the console's Basic credentials,
inside ``connect-src 'self'``) of records: one byte of kind (:data:`CALLER`, :data:`BOT`, :data:`CLEAR`,
:data:`KEEPALIVE`), two bytes of length (big-endian), then the 8 kHz μ-law payload. Nothing the listener
sends reaches the call: the route takes no body and the tap has no way back into the bridge.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections import OrderedDict, deque
from collections.abc import AsyncIterator

from telephony.bridge.observer import QuietObserver
from telephony.call_info import CallInfo
from telephony.twilio.media_streams import split_frames

CALLER = 1
BOT = 2
CLEAR = 3
KEEPALIVE = 0
QUEUE_FRAMES = 500
"""Records a listener may fall behind by (10 s of both sides at 20 ms frames) before its oldest are dropped."""
MAX_LISTENERS = 4
"""Listeners on one call at once (each copy costs the audio path a little)."""
MAX_TAPS = 64
"""Taps of recent calls kept, so a listener arriving just after the end is told it ended, not 'unknown'."""
KEEPALIVE_S = 5.0
"""Quiet seconds between keepalive records (how soon a closed tab is noticed)."""
MAX_PAYLOAD = 4096
"""The largest media payload copied: Twilio's are 160 bytes, the bridge's at most 10 frames (1,600); anything
bigger is not audio we understand."""


class ListenerLimit(Exception):
    """The call already has :data:`MAX_LISTENERS` listeners."""


def record(kind: int, payload: bytes = b"") -> bytes:
    """One record of the listen stream."""
    return bytes([kind]) + len(payload).to_bytes(2, "big") + payload


class Listener:
    """One operator's copy of a call's audio: a bounded queue read at the listener's pace."""

    def __init__(self, size: int = QUEUE_FRAMES) -> None:
        self._queue: deque[bytes] = deque(maxlen=size)
        self._changed = asyncio.Event()
        self.dropped = 0
        self.closed = False

    def put(self, item: bytes) -> None:
        """Never blocks: a full queue loses its oldest record."""
        if len(self._queue) == self._queue.maxlen:
            self.dropped += 1
        self._queue.append(item)
        self._changed.set()

    def close(self) -> None:
        self.closed = True
        self._changed.set()

    async def records(self, keepalive_s: float = KEEPALIVE_S) -> AsyncIterator[bytes]:
        """Records as they come, a keepalive after ``keepalive_s`` of quiet, until the call ends."""
        while True:
            while self._queue:
                yield self._queue.popleft()
            if self.closed:
                return
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), keepalive_s)
            except TimeoutError:
                yield record(KEEPALIVE)


class CallTap(QuietObserver):
    """One call's tap: a CallObserver that copies its audio to whoever listens."""

    def __init__(self, call_sid: str) -> None:
        self.call_sid = call_sid
        self.listeners: list[Listener] = []
        self.ended = False
        self.frames = {CALLER: 0, BOT: 0}

    def listen(self) -> Listener:
        if len(self.listeners) >= MAX_LISTENERS:
            raise ListenerLimit(f"{MAX_LISTENERS} people are listening to this call already")
        listener = Listener()
        if self.ended:
            listener.close()
        else:
            self.listeners.append(listener)
        return listener

    def leave(self, listener: Listener) -> None:
        if listener in self.listeners:
            self.listeners.remove(listener)

    # --- CallObserver hooks (on the audio path) ---------------------------------------------------

    def twilio_received(self, text: str) -> None:
        if self.listeners:
            self._copy(text, CALLER)

    def twilio_sent(self, text: str) -> None:
        if self.listeners:
            self._copy(text, BOT)

    async def call_ended(self, reason: str, ended_by: str) -> None:
        self.ended = True
        for listener in self.listeners:
            listener.close()
        self.listeners.clear()

    def _copy(self, text: str, side: int) -> None:
        """A media message's audio, 20 ms frame by 20 ms frame (the bridge joins the bot's), or the bot's
        ``clear``, to every listener; anything else is ignored."""
        try:
            message = json.loads(text)
            event = message.get("event")
            if event == "clear" and side == BOT:
                items = [record(CLEAR)]
            elif event == "media":
                payload = base64.b64decode(message["media"]["payload"], validate=True)
                if not payload or len(payload) > MAX_PAYLOAD:
                    return
                items = [record(side, frame) for frame in split_frames(payload)]
            else:
                return
        except (ValueError, KeyError, TypeError, AttributeError, binascii.Error):
            return  # a malformed frame is the bridge's business, not the listener's
        self.frames[side] += len(items)
        for listener in self.listeners:
            for item in items:
                listener.put(item)


class ListenTaps:
    """The taps of recent calls by call SID; :meth:`observer` is the ObserverFactory the app installs."""

    def __init__(self, max_taps: int = MAX_TAPS) -> None:
        self._taps: OrderedDict[str, CallTap] = OrderedDict()
        self._max_taps = max_taps

    def observer(self, call: CallInfo) -> CallTap | None:
        """A tap for a call that has started (None for a second stream with the SID of a call still going)."""
        existing = self._taps.get(call.call_sid)
        if existing is not None and not existing.ended:
            return None  # its listeners stay on the first stream
        tap = self._taps[call.call_sid] = CallTap(call.call_sid)
        while len(self._taps) > self._max_taps:
            ended = next((sid for sid, old in self._taps.items() if old.ended), None)
            if ended is None:
                break  # every kept call is still going: keep them all (each is bounded by MAX_LISTENERS)
            del self._taps[ended]
        return tap

    def tap(self, call_sid: str) -> CallTap | None:
        return self._taps.get(call_sid)

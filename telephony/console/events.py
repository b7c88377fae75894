"""The console's side channel: what happens on a console call, as small JSON events for the page.

Twilio's protocol carries audio only; the page also shows the live transcript, barge-ins, tool calls
and the hang-up. :class:`CallFeed` is a :class:`~telephony.bridge.observer.CallObserver` that turns the
session's hooks into such events; :class:`ConsoleEvents` keeps one feed per console call (opened when
the ticket is issued, so the page can subscribe before its stream starts) and hands it to subscribers.

The hooks run on the call's audio path: they only append to a bounded backlog and wake subscribers,
who read it at their own pace (nothing on the call ever waits for a browser).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from typing import Any

from telephony.call_info import CallInfo

BACKLOG = 2000
"""Events a feed keeps for late (or reconnecting) subscribers."""
MAX_FEEDS = 64
"""Feeds kept in memory, newest first; older ones (long-ended calls) are forgotten."""
NEVER_STARTED_S = 75.0
"""A feed whose call has not started this long after its ticket ends (the ticket's tokens expire after 60 s)."""

Event = dict[str, Any]


class CallFeed:
    """One console call's events: a CallObserver on one side, any number of subscribers on the other."""

    def __init__(self, call_sid: str, clock: Any = time.monotonic) -> None:
        self.call_sid = call_sid
        self._clock = clock
        self.opened_at = clock()
        self.started_at: float | None = None
        self.ended = False
        self._backlog: deque[Event] = deque(maxlen=BACKLOG)
        self._changed = asyncio.Event()
        self._transcripts: dict[str, str] = {}
        self._sequence = 0

    # --- publishing -------------------------------------------------------------------------------

    def publish(self, event_type: str, /, **fields: Any) -> None:
        """Record an event and wake every subscriber (they read the backlog at their own pace)."""
        origin = self.started_at if self.started_at is not None else self.opened_at
        self._sequence += 1
        event: Event = {"seq": self._sequence, "type": event_type, "t": round(self._clock() - origin, 3), **fields}
        self._backlog.append(event)
        self._changed.set()
        self._changed = asyncio.Event()

    def start(self, call: CallInfo) -> CallFeed:
        self.started_at = self._clock()
        self.publish("call_started", call_sid=call.call_sid, stream_sid=call.stream_sid)
        return self

    # --- CallObserver hooks (on the audio path: no work for audio) --------------------------------

    def model_audio(self, input_rate: int, output_rate: int) -> None:
        self.publish("model_audio", input_rate=input_rate, output_rate=output_rate)

    def twilio_received(self, text: str) -> None:
        """Caller audio and marks: the page knows them already."""

    def twilio_sent(self, text: str) -> None:
        """Bot audio: the page plays it already."""

    def agent_input(self, item: bytes | str) -> None:
        if isinstance(item, str):
            self.publish("agent_text", text=item)

    def agent_event(self, event: Any) -> None:
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "bidi_transcript_delta":
            self._transcript(event, str(event.get("delta", "")), final=False)
        elif kind == "bidi_transcript_block":
            self._transcript(event, str(event.get("transcript", "")), final=True)
        elif kind == "bidi_tool_use_blocks":
            for use in event.get("tool_uses") or []:
                self.publish("tool_use", id=str(use.get("toolUseId")), name=use.get("name"), input=use.get("input"))
        elif kind == "tool_result":
            result = event.get("tool_result") or {}
            self.publish("tool_result", id=str(result.get("toolUseId")), status=result.get("status"))
        elif kind in ("bidi_response_start", "bidi_response_stop"):
            self.publish("response", active=kind == "bidi_response_start")
        elif kind in ("bidi_connection_restart", "bidi_connection_stop"):
            self.publish("note", kind="model", detail=f"{kind.removeprefix('bidi_')}: {event.get('reason', '')}")

    def note(self, kind: str, detail: str) -> None:
        if kind == "barge_in":
            self.publish("barge_in", detail=detail)
        elif kind == "hangup":
            self.publish("hangup", reason=detail)
        else:
            self.publish("note", kind=kind, detail=detail)

    async def call_ended(self, reason: str, ended_by: str) -> None:
        self.finish(reason, ended_by)

    def finish(self, reason: str, ended_by: str) -> None:
        if not self.ended:
            self.publish("ended", reason=reason, by=ended_by)
            self.ended = True

    def _transcript(self, event: dict[str, Any], text: str, final: bool) -> None:
        content_id = str(event.get("content_id", ""))
        role = "caller" if event.get("role") == "user" else "bot"
        if final:
            self._transcripts.pop(content_id, None)
        else:
            text = self._transcripts.get(content_id, "") + text
            self._transcripts[content_id] = text
        if text.strip():
            self.publish("transcript", id=content_id, role=role, text=text.strip(), final=final)

    # --- subscribing ------------------------------------------------------------------------------

    async def follow(self, after: int = 0, keepalive_s: float = 15.0) -> AsyncIterator[Event | None]:
        """Events numbered above ``after``, then live ones until the call ends; ``None`` after ``keepalive_s`` of quiet.

        ``after`` is the last ``seq`` a reconnecting subscriber saw (SSE's ``Last-Event-ID``). A subscriber
        slower than the feed only falls behind in the backlog; the call never waits for it.
        """
        position = after
        while True:
            changed = self._changed
            pending = [event for event in self._backlog if event["seq"] > position]
            for event in pending:
                position = event["seq"]
                yield event
            if pending:
                continue  # more may have come while the subscriber was reading
            if self.ended:
                return
            try:
                await asyncio.wait_for(changed.wait(), keepalive_s)
            except TimeoutError:
                if self.started_at is None and self._clock() - self.opened_at > NEVER_STARTED_S:
                    self.finish("the call never started", "unknown")
                    continue
                yield None


class ConsoleEvents:
    """The feeds of recent console calls, by call SID; its :meth:`observer` is an ObserverFactory."""

    def __init__(self, max_feeds: int = MAX_FEEDS) -> None:
        self._feeds: OrderedDict[str, CallFeed] = OrderedDict()
        self._max_feeds = max_feeds

    def open(self, call_sid: str) -> CallFeed:
        """A feed for a console call about to start (its ticket was just issued)."""
        feed = self._feeds[call_sid] = CallFeed(call_sid)
        while len(self._feeds) > self._max_feeds:
            _, oldest = self._feeds.popitem(last=False)
            oldest.finish("forgotten: too many console calls since", "unknown")
        return feed

    def feed(self, call_sid: str) -> CallFeed | None:
        return self._feeds.get(call_sid)

    def observer(self, call: CallInfo) -> CallFeed | None:
        """ObserverFactory: the feed of a console call (Twilio calls have none)."""
        feed = self._feeds.get(call.call_sid)
        if feed is None or feed.started_at is not None or feed.ended:
            return None
        return feed.start(call)

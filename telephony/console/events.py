"""The console's side channel: what happens on a console call, as small JSON events for the page.

Twilio's protocol carries audio only; the page also shows the live transcript, barge-ins, tool calls
and the hang-up. :class:`CallFeed` is a :class:`~telephony.bridge.observer.CallObserver` that turns the
session's hooks into such events; :class:`ConsoleEvents` keeps one feed per call (a console call's is
opened when its ticket is issued, so the page can subscribe before its stream starts; a Twilio call's
when its stream starts) and hands it to subscribers: the softphone, and the calls page's live rows.

The hooks run on the call's audio path: they only append to a bounded backlog and wake subscribers,
who read it at their own pace (nothing on the call ever waits for a browser).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from telephony.bridge.caller_speech import SpeechSpan
from telephony.call_info import CallInfo
from telephony.call_outcome import CallOutcome, parse_note, row_fields

BACKLOG = 2000
"""Events a feed keeps for late (or reconnecting) subscribers."""
MAX_FEEDS = 64
"""Feeds kept in memory, newest first; older ones (long-ended calls) are forgotten."""
NEVER_STARTED_S = 75.0
"""A feed whose call has not started this long after its ticket ends (the ticket's tokens expire after 60 s)."""

Event = dict[str, Any]


class CallFeed:
    """One console call's events: a CallObserver on one side, any number of subscribers on the other."""

    def __init__(self, call_sid: str, clock: Any = time.monotonic, console: bool = True) -> None:
        self.call_sid = call_sid
        self.console = console
        self._clock = clock
        self.opened_at = clock()
        self.started_at: float | None = None
        self.started_wall: str | None = None
        self.ended = False
        self.call: CallInfo | None = None
        self.agent: dict[str, str] = {}
        self.counts = {"turns": 0, "tool_calls": 0, "barge_ins": 0}
        self.end: dict[str, str] | None = None
        self.outcome: CallOutcome | None = None
        """How the call ended (the session's ``outcome`` note, just before the end)."""
        self._backlog: deque[Event] = deque(maxlen=BACKLOG)
        self._changed = asyncio.Event()
        self._transcripts: dict[str, str] = {}
        self._sequence = 0
        self._responses = 0
        self._counted_response = -1
        """The bot response whose turn was counted last: its several transcript blocks count once."""

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
        self.started_wall = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self.call = call
        self.publish(
            "call_started",
            call_sid=call.call_sid,
            stream_sid=call.stream_sid,
            from_number=call.from_number,
            to_number=call.to_number,
        )
        return self

    def summary(self) -> dict[str, Any]:
        """A row of the calls page for this call while it lasts (and a little after)."""
        call = self.call
        return {
            "call_sid": self.call_sid,
            "started_at": self.started_wall,
            "elapsed_s": round(self._clock() - self.started_at, 1) if self.started_at is not None else 0.0,
            "from_number": call.from_number if call else None,
            "to_number": call.to_number if call else None,
            "console": self.console,
            "agent": self.agent.get("name"),
            "model": self.agent.get("model_id") or self.agent.get("model"),
            "live": not self.ended,
            "ended_by": (self.end or {}).get("by"),
            "end_reason": (self.end or {}).get("reason"),
            **self._outcome_fields(),
            **self.counts,
        }

    def _outcome_fields(self) -> dict[str, str | None]:
        return row_fields(self.outcome if self.ended else None)

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

    def agent_info(self, info: dict[str, str]) -> None:
        self.agent = dict(info)
        self.publish("agent", **self.agent)

    def caller_speech(self, span: SpeechSpan) -> None:
        """Placed on this feed's clock by when its last frame arrived (the page shows feed times)."""
        origin = self.started_at if self.started_at is not None else self.opened_at
        end = span.ended_at + 0.02 - origin
        self.publish("caller_speech", start=round(end - (span.end_s - span.start_s), 3), end=round(end, 3))

    def response_latency(self, seconds: float) -> None:
        self.publish("latency", seconds=round(seconds, 3))

    def agent_event(self, event: Any) -> None:
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "bidi_transcript_delta":
            self._transcript(event, str(event.get("delta", "")), final=False)
        elif kind == "bidi_transcript_block":
            self._transcript(event, str(event.get("transcript", "")), final=True)
        elif kind == "bidi_tool_use_blocks":
            for use in event.get("tool_uses") or []:
                self.counts["tool_calls"] += 1
                self.publish("tool_use", id=str(use.get("toolUseId")), name=use.get("name"), input=use.get("input"))
        elif kind == "tool_result":
            result = event.get("tool_result") or {}
            self.publish("tool_result", id=str(result.get("toolUseId")), status=result.get("status"))
        elif kind in ("bidi_response_start", "bidi_response_stop"):
            self._responses += kind == "bidi_response_start"
            self.publish("response", active=kind == "bidi_response_start")
        elif kind in ("bidi_connection_restart", "bidi_connection_stop"):
            self.publish("note", kind="model", detail=f"{kind.removeprefix('bidi_')}: {event.get('reason', '')}")

    def note(self, kind: str, detail: str) -> None:
        if kind == "outcome":
            self.outcome = parse_note(detail)
        elif kind == "barge_in":
            self.counts["barge_ins"] += 1
            self.publish("barge_in", detail=detail)
        elif kind == "hangup":
            self.publish("hangup", reason=detail)
        else:
            self.publish("note", kind=kind, detail=detail)

    async def call_ended(self, reason: str, ended_by: str) -> None:
        self.finish(reason, ended_by)

    def finish(self, reason: str, ended_by: str) -> None:
        if not self.ended:
            self.end = {"reason": reason, "by": ended_by}
            self.ended = True
            self.publish("ended", reason=reason, by=ended_by, **self._outcome_fields())

    def _transcript(self, event: dict[str, Any], text: str, final: bool) -> None:
        content_id = str(event.get("content_id", ""))
        role = "caller" if event.get("role") == "user" else "bot"
        if final:
            self._transcripts.pop(content_id, None)
            self._count_turn(role)
        else:
            text = self._transcripts.get(content_id, "") + text
            self._transcripts[content_id] = text
        if text.strip():
            self.publish("transcript", id=content_id, role=role, text=text.strip(), final=final)

    def _count_turn(self, role: str) -> None:
        """Count turns as the recording does: each caller transcript, and one bot turn per response (not per block)."""
        if role == "bot":
            if self._counted_response == self._responses:
                return
            self._counted_response = self._responses
        self.counts["turns"] += 1

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

    def open(self, call_sid: str, console: bool = True) -> CallFeed:
        """A feed for a call about to start (a console call's ticket was just issued, or a stream started)."""
        feed = self._feeds[call_sid] = CallFeed(call_sid, console=console)
        while len(self._feeds) > self._max_feeds:
            ended = next((sid for sid, old in self._feeds.items() if old.ended), None)
            oldest = self._feeds.pop(ended) if ended is not None else self._feeds.popitem(last=False)[1]
            oldest.finish("forgotten: too many calls since", "unknown")
        return feed

    def recent(self) -> list[CallFeed]:
        """Feeds of calls that have started, newest first."""
        return [feed for feed in reversed(self._feeds.values()) if feed.started_at is not None]

    def feed(self, call_sid: str) -> CallFeed | None:
        return self._feeds.get(call_sid)

    def observer(self, call: CallInfo) -> CallFeed | None:
        """ObserverFactory: the feed of a console call, or a new one for a Twilio call (the calls page lists it)."""
        feed = self._feeds.get(call.call_sid)
        if feed is None:
            feed = self.open(call.call_sid, console=False)
        elif feed.started_at is not None or feed.ended:
            return None  # a second stream for the same call SID: its ticket (or feed) was used already
        return feed.start(call)

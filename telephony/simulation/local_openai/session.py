"""One Realtime WebSocket session: check each client event, record it, answer, enforce the session limit.

Client events are handled in the order they arrive, synchronously, so the checks see exactly what the client
sent; server events go through a queue drained by one writer task, so the responder never waits on the network.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from telephony.simulation.local_nova import Pacing
from telephony.simulation.local_nova.replies import Brain

from .conversation import Conversation, Trigger
from .faults import ERROR_MESSAGES, Fault, MidAnswer, error_event
from .protocol import ProtocolError, check_item, check_session, decode_audio
from .responses import RATE, Responder

__all__ = ["OpenAISession", "SessionRecord"]

log = logging.getLogger(__name__)


@dataclass
class SessionRecord:
    """What one session received and how it ended: for assertions in tests."""

    index: int
    model_id: str
    events: list[dict[str, Any]] = field(default_factory=list)
    session: dict[str, Any] = field(default_factory=dict)
    caller_audio: bytearray = field(default_factory=bytearray)
    history: list[tuple[str, str]] = field(default_factory=list)
    text_inputs: list[str] = field(default_factory=list)
    tool_results: list[tuple[str, str]] = field(default_factory=list)
    truncations: list[tuple[str, int, int]] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    barge_ins: int = 0
    cancelled: int = 0
    ended_by: str | None = None

    def event_types(self) -> list[str]:
        return [event.get("type", "?") for event in self.events]

    @property
    def system_prompt(self) -> str:
        """The instructions of the latest ``session.update`` (sent before anything else)."""
        return str(self.session.get("instructions", ""))


@dataclass(frozen=True)
class _Close:
    """In the outbox after the last event a mid-answer close lets through: the close (1011), once they are sent."""


class OpenAISession:
    """Drives one connection; ``run()`` returns when either side closes it."""

    def __init__(
        self,
        connection: ServerConnection,
        record: SessionRecord,
        brain: Brain,
        *,
        pacing: Pacing,
        session_limit_s: float,
        fault: Fault | None,
        late_transcripts: bool = False,
    ) -> None:
        self._connection = connection
        self.record = record
        self._brain = brain
        self._session_limit_s = session_limit_s
        self._fault = fault if fault is None or fault.at != "answer" else None
        self._mid_answer = (fault, MidAnswer(fault.answer, fault.audio_s)) if fault and fault.at == "answer" else None
        self._stalled = False
        """A ``stall`` or ``close`` fault struck: no server event is sent any more (input is still read)."""
        self._outbox: asyncio.Queue[dict[str, Any] | _Close | None] = asyncio.Queue()
        self._conversation = Conversation()
        self._responder = Responder(
            brain,
            self._emit,
            self._conversation,
            pacing=pacing,
            before_response=self._response_allowed,
            late_transcripts=late_transcripts,
        )
        self._configured = False
        self._limit: asyncio.Timeout | None = None

    def expire(self) -> None:
        """The session reaches its limit now: ``session_expired``, then the close (a no-op once it is over)."""
        if self._limit is not None and not self._limit.expired():
            self.record.ended_by = self.record.ended_by or "expired early"
            self._limit.reschedule(asyncio.get_running_loop().time())

    async def run(self) -> None:
        writer = asyncio.create_task(self._write(), name="local-openai-writer")
        self._emit(
            {
                "type": "session.created",
                "session": {
                    "object": "realtime.session",
                    "id": _id("sess"),
                    "type": "realtime",
                    "model": self.record.model_id,
                },
            }
        )
        try:
            if self._fault is not None and self._fault.at == "connect":
                self._emit(self._fault.event(_id("event")))
                self.record.ended_by = f"fault: {self._fault.code}"
                return
            limit_s = self._session_limit_s
            if self._fault is not None and self._fault.at == "time":
                limit_s = min(limit_s, self._fault.after_s)
            async with asyncio.timeout(limit_s) as self._limit:
                await self._read()
        except TimeoutError:
            self.record.ended_by = self.record.ended_by or "session limit"
            self._emit(error_event(_id("event"), "session_expired", ERROR_MESSAGES["session_expired"]))
        finally:
            await self._responder.close()
            self.record.barge_ins = self._responder.barge_ins
            self.record.cancelled = self._responder.cancelled
            self._outbox.put_nowait(None)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer, 2.0)
            writer.cancel()
            await self._connection.close()

    async def _read(self) -> None:
        try:
            async for message in self._connection:
                self._handle(message)
        except ConnectionClosed:
            pass
        self.record.ended_by = self.record.ended_by or "client closed"

    async def _write(self) -> None:
        while (event := await self._outbox.get()) is not None:
            if isinstance(event, _Close):
                await self._connection.close(1011)
                return
            self.record.sent.append(event["type"])
            try:
                await self._connection.send(json.dumps(event))
            except ConnectionClosed:
                return

    def _emit(self, event: dict[str, Any]) -> None:
        if self._stalled:
            return
        kind = event["type"]
        if self._mid_answer is not None and kind in ("response.output_audio.done", "response.done"):
            if self._mid_answer[1].ends():
                self._strike_mid_answer()
                return
        self._outbox.put_nowait({"event_id": _id("event"), **event} if "event_id" not in event else event)
        if self._mid_answer is not None and kind == "response.output_audio.delta":
            if self._mid_answer[1].audio(len(base64.b64decode(event["delta"])) / 2 / RATE):
                self._strike_mid_answer()

    def _strike_mid_answer(self) -> None:
        """Nothing after what is queued; a ``close`` fault closes with 1011 behind it (no ``error`` event)."""
        assert self._mid_answer is not None
        fault, self._mid_answer = self._mid_answer[0], None
        self._stalled = True
        self.record.ended_by = f"fault: {fault.code} mid-answer"
        if fault.code == "close":
            self._outbox.put_nowait(_Close())

    # -- client events ---------------------------------------------------------------------------

    def _handle(self, message: str | bytes) -> None:
        try:
            event = json.loads(message)
        except (ValueError, UnicodeDecodeError):
            self._violation(None, ProtocolError("the message is not JSON"))
            return
        if not isinstance(event, dict):
            self._violation(None, ProtocolError("a client event must be a JSON object"))
            return
        kind = event.get("type")
        if kind != "input_audio_buffer.append":
            self.record.events.append(event)
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        try:
            if handler is None:
                raise ProtocolError(f"unknown client event type {kind!r}", "type")
            if kind != "session.update" and not self._configured:
                raise ProtocolError(f"{kind} before session.update")
            handler(self, event)
        except ProtocolError as error:
            self._violation(event, error)

    def _violation(self, event: dict[str, Any] | None, error: ProtocolError) -> None:
        kind = event.get("type") if event else None
        self.record.violations.append(f"{kind or 'message'}: {error}")
        client_id = event.get("event_id") if event else None
        self._emit(error_event(_id("event"), "invalid_value", str(error), error.param, client_id))
        log.warning("local openai: protocol violation: %s: %s", kind, error)

    def _session_update(self, event: dict[str, Any]) -> None:
        session = event.get("session")
        check_session(session)
        assert isinstance(session, dict)
        self._configured = True
        self.record.session = session
        silence_ms = session["audio"]["input"]["turn_detection"].get("silence_duration_ms")
        if isinstance(silence_ms, int | float) and silence_ms > 0:
            self._responder.end_turns_after(silence_ms / 1000)
        self._emit({"type": "session.updated", "session": {**session, "model": self.record.model_id}})
        if self._fault is not None and self._fault.at == "set_up":
            self._fault, self._stalled = None, True
            self.record.ended_by = "fault: never answers"

    def _append(self, event: dict[str, Any]) -> None:
        pcm = decode_audio(event.get("audio"))
        self.record.caller_audio.extend(pcm)
        self._responder.caller_audio(pcm)
        self.record.barge_ins, self.record.cancelled = self._responder.barge_ins, self._responder.cancelled

    def _item_create(self, event: dict[str, Any]) -> None:
        item = event.get("item")
        check_item(item, self._conversation.ids(), set(self._conversation.calls))
        assert isinstance(item, dict)
        previous = self._conversation.last_id()
        item = {"id": item.get("id") or _id("item"), "status": "completed", **item}
        self._conversation.client_item(item)
        self._note_item(item)
        self._emit({"type": "conversation.item.added", "previous_item_id": previous, "item": item})
        self._emit({"type": "conversation.item.done", "previous_item_id": previous, "item": item})

    def _note_item(self, item: dict[str, Any]) -> None:
        if item["type"] == "message":
            text = " ".join(part.get("text", "") for part in item["content"])
            self.record.history.append((item["role"], text))
        elif item["type"] == "function_call_output":
            self.record.tool_results.append((item["call_id"], item["output"]))

    def _response_create(self, event: dict[str, Any]) -> None:
        if self._responder.active:
            self._emit(
                error_event(
                    _id("event"),
                    "conversation_already_has_active_response",
                    "Conversation already has an active response in progress.",
                    client_event_id=event.get("event_id"),
                )
            )
            return
        triggers = self._conversation.take_triggers()
        self.record.text_inputs.extend(trigger.text for trigger in triggers if trigger.call_id is None)
        self._responder.respond(lambda: self._decide(triggers))

    async def _decide(self, triggers: list[Trigger]) -> Any:
        reply = None
        for trigger in triggers:
            if trigger.call_id is not None:
                answer = await self._brain.on_tool_result(trigger.call_id, trigger.name, _json(trigger.output))
            else:
                answer = await self._brain.on_text(trigger.text)
            reply = reply or answer
        return reply

    def _truncate(self, event: dict[str, Any]) -> None:
        item_id, index, end_ms = event.get("item_id"), event.get("content_index"), event.get("audio_end_ms")
        self._conversation.truncate(item_id, index, end_ms)
        self.record.truncations.append((str(item_id), int(index or 0), int(end_ms or 0)))
        self._emit(
            {"type": "conversation.item.truncated", "item_id": item_id, "content_index": index, "audio_end_ms": end_ms}
        )

    def _response_allowed(self) -> bool:
        """A queued fault answers the next response request instead of a response."""
        if self._fault is not None and self._fault.at == "response":
            fault, self._fault = self._fault, None
            self._emit(fault.event(_id("event")))
            return False
        return True


_HANDLERS = {
    "session.update": OpenAISession._session_update,
    "input_audio_buffer.append": OpenAISession._append,
    "conversation.item.create": OpenAISession._item_create,
    "response.create": OpenAISession._response_create,
    "conversation.item.truncate": OpenAISession._truncate,
}


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text

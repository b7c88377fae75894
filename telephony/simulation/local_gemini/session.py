"""One Live API connection: check what arrives, record it, answer, enforce the connection limit.

Input is handled in the order it is read, so checks see messages exactly as the client sent them; output goes
through a queue drained by one writer task, so the turn engine never waits on the network.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from telephony.simulation.local_nova.replies import Brain

from .faults import Fault, MidAnswer, TimeLimits
from .protocol import ProtocolError, SetupInfo, audio_of, check_message, check_setup, normalise
from .turns import OUTPUT_RATE, GeminiTurns, Pacing

__all__ = ["GeminiSession", "SessionRecord"]

log = logging.getLogger(__name__)

SETUP_TIMEOUT_S = 10.0


@dataclass
class SessionRecord:
    """What one connection received and how it ended: for assertions in tests."""

    index: int
    path: str = ""
    api_key: str = ""
    setup: dict[str, Any] = field(default_factory=dict)
    info: SetupInfo | None = None
    conversation: int = -1
    resumed_handle: str | None = None
    kinds: list[str] = field(default_factory=list)
    snake_keys: set[str] = field(default_factory=set)
    caller_audio: bytearray = field(default_factory=bytearray)
    caller_sample_rate: int | None = None
    urlsafe_audio: bool | None = None
    history: list[tuple[str, str]] = field(default_factory=list)
    text_inputs: list[str] = field(default_factory=list)
    tool_results: list[tuple[str, str, Any]] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    handles: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    interrupted_at: list[float] = field(default_factory=list)
    """When each ``interrupted`` was queued for the client (monotonic)."""
    ended_by: str | None = None

    @property
    def system_prompt(self) -> str:
        """The setup's system instruction (the setup comes first)."""
        return self.info.system_prompt if self.info is not None else ""

    @property
    def barge_ins(self) -> int:
        return len(self.interrupted_at)

    @property
    def model_id(self) -> str:
        """The model the setup named (without ``models/``)."""
        return self.info.model if self.info is not None else ""


@dataclass(frozen=True)
class SessionParts:
    """What a connection shares with its server."""

    brain: Brain
    limits: TimeLimits
    pacing: Pacing
    fault: Callable[[bool], Fault | None]
    conversation_of: Callable[[str | None], int | None]
    """The conversation a resumption handle belongs to (None: unknown handle); with None, a new conversation."""
    issue_handle: Callable[[int], str]
    accepts: Callable[[SessionRecord], tuple[int, str] | None]
    """Whether the key and model are accepted: None, or the close code and reason."""
    setup_delay: Callable[[], float] = lambda: 0.0
    """How long the next accepted connection takes to be set up (real seconds) before ``setupComplete``."""


@dataclass(frozen=True)
class _Close:
    """In the outbox after the last message a mid-answer close lets through: the close, once they are sent."""

    code: int
    reason: str


class GeminiSession:
    """Drives one accepted WebSocket until either side ends it."""

    def __init__(self, websocket: ServerConnection, record: SessionRecord, parts: SessionParts) -> None:
        self._ws = websocket
        self.record = record
        self._parts = parts
        self._outbox: asyncio.Queue[dict[str, Any] | _Close | None] = asyncio.Queue()
        self._turns = GeminiTurns(parts.brain, self._emit, parts.pacing, self._resumable_point, record.interrupted_at)
        self._info: SetupInfo | None = None
        self._history_open = False
        self._closing: tuple[int, str] | None = None
        self._extra: list[asyncio.Task[None]] = []
        self._go_away_now = asyncio.Event()
        self._go_away_after: float | None = None
        self._mid_answer: tuple[Fault, MidAnswer] | None = None
        self._stalled = False
        """A ``stall`` fault struck (or a mid-answer ``close``): no server message is sent any more."""

    def go_away(self) -> None:
        """Send ``goAway`` now, as before the limit; the connection closes when the notice runs out."""
        self._go_away_now.set()

    async def run(self) -> None:
        try:
            if await self._set_up():
                await self._converse()
        except ConnectionClosed:
            pass
        except TimeoutError:
            await self._close(1008, "no setup received", ended_by="no setup")
        finally:
            await self._turns.close()
            self.record.ended_by = self.record.ended_by or "client closed"

    async def _set_up(self) -> bool:
        async with asyncio.timeout(SETUP_TIMEOUT_S):
            raw = await self._ws.recv()
        try:
            message = normalise(json.loads(raw), self.record.snake_keys)
            self.record.setup = message.get("setup", {}) if isinstance(message, dict) else {}
            self._info = info = check_setup(message)
        except (ProtocolError, json.JSONDecodeError) as error:
            await self._violation(str(error))
            return False
        self.record.info = info
        refusal = self._parts.accepts(self.record)
        fault = self._parts.fault(info.resume_handle is not None)
        if refusal is None and fault is not None and fault.kind in ("reject", "refuse_resume"):
            refusal = (fault.code, fault.reason)
        conversation = self._parts.conversation_of(info.resume_handle)
        if refusal is None and conversation is None:
            refusal = (1008, "Session not found or expired.")  # an unknown resumption handle
        if refusal is not None:
            await self._close(*refusal, ended_by=f"refused: {refusal[1]}")
            return False
        self.record.conversation = conversation if conversation is not None else -1
        self.record.resumed_handle = info.resume_handle
        self._history_open = info.history_in_client_content
        delay = self._parts.setup_delay()
        if delay > 0:
            await asyncio.sleep(delay)  # a slow set-up: the client's connect() waits for setupComplete
        await self._ws.send(json.dumps({"setupComplete": {}}))
        self.record.sent.append("setupComplete")
        if fault is not None and fault.answer:
            self._mid_answer = (fault, MidAnswer(fault.answer, fault.audio_s))
        elif fault is not None and fault.kind == "close":
            self._parts_task(self._close_after(fault))
        elif fault is not None and fault.kind == "go_away":
            self._go_away_after = fault.after_s
        self._resumable_point()
        if fault is not None and fault.kind == "stall" and not fault.answer:
            self._stalled = True
            self.record.ended_by = "fault: never answers"
        return True

    async def _converse(self) -> None:
        writer = asyncio.create_task(self._write(), name="local-gemini-writer")
        timer = asyncio.create_task(self._watch_time(), name="local-gemini-limit")
        try:
            async for raw in self._ws:
                if not self._received(raw):
                    break
        finally:
            for task in (writer, timer, *self._extra):
                task.cancel()
            await asyncio.gather(writer, timer, *self._extra, return_exceptions=True)
        if self._closing is not None:
            await self._close(*self._closing, ended_by=self.record.ended_by or self._closing[1])

    def _parts_task(self, coroutine: Any) -> None:
        self._extra.append(asyncio.create_task(coroutine))

    def _received(self, raw: str | bytes) -> bool:
        """Handle one client message; False once the connection must close."""
        try:
            kind, body = check_message(normalise(json.loads(raw), self.record.snake_keys))
            self.record.kinds.append(kind)
            getattr(self, f"_on_{kind}")(body)
        except (ProtocolError, json.JSONDecodeError) as error:
            self.record.violations.append(str(error))
            log.warning("local gemini: protocol violation: %s", error)
            self._closing = (1007, str(error))
            return False
        return True

    def _on_realtimeInput(self, body: dict[str, Any]) -> None:
        if "audio" in body:
            chunk = audio_of(body["audio"])
            if self.record.caller_sample_rate not in (None, chunk.sample_rate):
                raise ProtocolError("the input audio rate changed mid-connection")
            self.record.caller_sample_rate = chunk.sample_rate
            self.record.urlsafe_audio = bool(self.record.urlsafe_audio) or chunk.urlsafe
            self.record.caller_audio.extend(chunk.pcm)
            self._history_open = False
            self._turns.caller_audio(chunk.pcm, chunk.sample_rate)
        elif "text" in body:
            self.record.text_inputs.append(str(body["text"]))
            self._turns.text_input(str(body["text"]))

    def _on_clientContent(self, body: dict[str, Any]) -> None:
        turns = [
            (turn["role"], "".join(str(part.get("text", "")) for part in turn["parts"]))
            for turn in body.get("turns", [])
        ]
        if self._history_open:  # initial history: remembered, not answered
            self.record.history.extend(turns)
            self._history_open = False
            return
        text = "".join(text for role, text in turns if role == "user")
        self.record.text_inputs.append(text)
        if body.get("turnComplete"):
            self._turns.text_input(text)

    def _on_toolResponse(self, body: dict[str, Any]) -> None:
        for response in body["functionResponses"]:
            call_id, name = response["id"], response["name"]
            if self._turns.tool_calls.get(call_id) != name:
                raise ProtocolError(f"function response {call_id!r} ({name}) answers no open function call")
            self.record.tool_results.append((call_id, name, response["response"]))
            self._turns.tool_result(call_id, name, response["response"])

    def _emit(self, message: dict[str, Any]) -> None:
        if self._stalled:
            return
        content = message.get("serverContent", {})
        if self._mid_answer is not None and {"generationComplete", "interrupted", "turnComplete"} & content.keys():
            if self._mid_answer[1].ends():
                self._strike_mid_answer()
                return
        self.record.sent.append(next(iter(message)))
        self._outbox.put_nowait(message)
        if self._mid_answer is not None and "modelTurn" in content:
            parts = content["modelTurn"]["parts"]
            pcm = sum(len(base64.b64decode(part["inlineData"]["data"])) for part in parts if "inlineData" in part)
            if self._mid_answer[1].audio(pcm / 2 / OUTPUT_RATE):
                self._strike_mid_answer()

    def _strike_mid_answer(self) -> None:
        """Nothing after what is queued; a ``close`` fault closes behind it."""
        assert self._mid_answer is not None
        fault, self._mid_answer = self._mid_answer[0], None
        self._stalled = True
        self.record.ended_by = f"fault: {fault.kind} mid-answer"
        if fault.kind == "close":
            self._outbox.put_nowait(_Close(fault.code, fault.reason))

    def _resumable_point(self) -> None:
        """Between turns the session can be resumed: hand the client a fresh handle, as Gemini does."""
        if self._info is None or not self._info.resumption:
            return
        handle = self._parts.issue_handle(self.record.conversation)
        self.record.handles.append(handle)
        self._emit({"sessionResumptionUpdate": {"newHandle": handle, "resumable": True}})

    async def _write(self) -> None:
        while (message := await self._outbox.get()) is not None:
            if isinstance(message, _Close):
                await self._drain_then_close(message.code, message.reason)
                return
            await self._ws.send(json.dumps(message))

    async def _watch_time(self) -> None:
        """``goAway`` before the limit (or sooner: a fault, or :meth:`go_away`), then the close when time is up."""
        limits = self._parts.limits
        opened = time.monotonic()
        notice_at = min(limits.go_away_at, self._go_away_after if self._go_away_after is not None else math.inf)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._go_away_now.wait(), notice_at)
        notice = limits.go_away_notice_s * limits.time_scale
        left = max(0.0, min(notice, limits.connection_limit - (time.monotonic() - opened)))
        self._emit({"goAway": {"timeLeft": f"{left / limits.time_scale:.3f}s"}})
        await asyncio.sleep(left)
        self.record.ended_by = self.record.ended_by or "connection limit"
        await self._drain_then_close(1000, "connection limit")

    async def _close_after(self, fault: Fault) -> None:
        await asyncio.sleep(fault.after_s)
        self.record.ended_by = f"fault: close {fault.code}"
        await self._drain_then_close(fault.code, fault.reason)

    async def _drain_then_close(self, code: int, reason: str) -> None:
        await self._ws.close(code, reason[:120])

    async def _violation(self, message: str) -> None:
        self.record.violations.append(message)
        log.warning("local gemini: protocol violation: %s", message)
        await self._close(1007, message, ended_by="protocol violation")

    async def _close(self, code: int, reason: str, ended_by: str) -> None:
        self.record.ended_by = self.record.ended_by or ended_by
        with contextlib.suppress(Exception):
            await self._ws.close(code, reason.encode()[:120].decode(errors="ignore"))


def new_handle() -> str:
    return f"local-gemini-{uuid.uuid4().hex}"

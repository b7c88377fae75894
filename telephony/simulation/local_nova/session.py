"""One ``invoke-with-bidirectional-stream`` call: check what arrives, record it, answer, enforce limits.

A session sits between the HTTP/2 stream (bytes in, bytes out) and the turn engine (Nova events).
Input is handled synchronously as it is read, so checks see events in exactly the order the client
sent them; output goes through a queue drained by one writer task, so the engine never waits on the
network and a cancelled reply never leaves half a message on the wire.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .faults import Fault, MidAnswer, TimeLimits
from .framing import EndOfInput, EnvelopeReader, FramingError, NovaEvent, encode_event, encode_exception
from .protocol import ContentInfo, Limits, ProtocolChecker
from .replies import Brain
from .turns import Pacing, TurnEngine

__all__ = ["NovaSession", "SessionRecord"]

log = logging.getLogger(__name__)


@dataclass
class SessionRecord:
    """What one stream received and how it ended: for assertions in tests."""

    index: int
    model_id: str
    events: list[NovaEvent] = field(default_factory=list)
    caller_audio: bytearray = field(default_factory=bytearray)
    caller_sample_rate: int | None = None
    system_prompts: list[str] = field(default_factory=list)
    history: list[tuple[str, str]] = field(default_factory=list)
    text_inputs: list[str] = field(default_factory=list)
    tool_results: list[tuple[str, Any]] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    barge_ins: int = 0
    ended_by: str | None = None
    audio_arrivals: list[tuple[float, int]] = field(default_factory=list)
    """(monotonic arrival, bytes of caller audio received so far) per ``audioInput``: when caller audio got here."""

    def event_names(self) -> list[str]:
        return [event.name for event in self.events]

    @property
    def system_prompt(self) -> str:
        """The SYSTEM text so far (it comes before any interactive content)."""
        return "\n".join(self.system_prompts)


class _Reset:
    """In the outbox after the last event a mid-answer reset lets through: ``RST_STREAM`` once they are written."""


class NovaSession:
    """Drives one stream. ``write`` sends bytes (None ends the stream); ``reset`` sends RST_STREAM."""

    def __init__(
        self,
        record: SessionRecord,
        brain: Brain,
        *,
        write: Callable[[bytes | None], Awaitable[None]],
        reset: Callable[[], None],
        limits: TimeLimits,
        protocol_limits: Limits,
        pacing: Pacing,
        fault: Fault | None,
        reject_violations: bool,
    ) -> None:
        self.record = record
        self._brain = brain
        self._write = write
        self._reset = reset
        self._limits = limits
        self._pacing = pacing
        self._fault = fault if fault is None or not fault.answer else None
        self._mid_answer = (fault, MidAnswer(fault.answer, fault.audio_s)) if fault and fault.answer else None
        self._reject_violations = reject_violations
        self._reader = EnvelopeReader()
        self._checker = ProtocolChecker(limits=protocol_limits, violations=record.violations)
        self._engine: TurnEngine | None = None
        self._session_id = str(uuid.uuid4())
        self._texts: dict[str, list[str]] = {}
        self._outbox: asyncio.Queue[bytes | _Reset | None] = asyncio.Queue()
        self._started = time.monotonic()
        self._closing = False
        self._stalled = False
        self._done = asyncio.Event()
        self._tasks = [
            asyncio.create_task(self._drain_outbox(), name=f"local-nova-writer-{record.index}"),
            asyncio.create_task(self._watch_time(), name=f"local-nova-timers-{record.index}"),
        ]

    # -- from the transport ------------------------------------------------------------------------

    def received(self, data: bytes) -> None:
        """Bytes of the request body, in order, as they arrive."""
        if self._closing:
            return
        try:
            items = self._reader.feed(data)
        except FramingError as error:
            self._violation(f"framing: {error}")
            return
        for item in items:
            if self._closing:
                return
            if isinstance(item, EndOfInput):
                self._input_ended()
            else:
                self._event(item)

    def request_ended(self) -> None:
        """The client closed its side of the HTTP/2 stream."""
        if not self._closing and not self._stalled:
            if self._reader.pending:
                self._violation(f"request ended inside a message ({self._reader.pending} bytes pending)")
            self._input_ended()

    async def aclose(self, reason: str = "server closed") -> None:
        """Stop everything this session runs (the transport is going away)."""
        if self.record.ended_by is None:
            self.record.ended_by = reason
        self._closing = True
        if self._engine is not None:
            await self._engine.close()
            self.record.barge_ins = self._engine.barge_ins
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._done.set()

    async def wait_closed(self) -> None:
        await self._done.wait()

    # -- input -------------------------------------------------------------------------------------

    def _event(self, event: NovaEvent) -> None:
        self.record.events.append(event)
        before = len(self.record.violations)
        content = self._checker.check(event)
        if len(self.record.violations) > before:
            self._after_violation(self.record.violations[before])
            return
        if self._stalled:
            return
        handler = getattr(self, f"_on_{event.name}", None)
        if handler is not None:
            handler(event.body, content)

    def _on_promptStart(self, body: dict[str, Any], _: ContentInfo | None) -> None:
        self._engine = TurnEngine(
            self._brain,
            self._emit,
            session_id=self._session_id,
            prompt_name=body["promptName"],
            output_rate=self._checker.output_sample_rate or 16000,
            pacing=self._pacing,
            on_tool_use=self._checker.tool_use_issued,
        )

    def _on_audioInput(self, body: dict[str, Any], content: ContentInfo | None) -> None:
        if content is None or content.sample_rate is None or self._engine is None:
            return
        with contextlib.suppress(binascii.Error, ValueError):
            pcm = base64.b64decode(body["content"], validate=True)
            self.record.caller_audio += pcm
            self.record.audio_arrivals.append((time.monotonic(), len(self.record.caller_audio)))
            self.record.caller_sample_rate = content.sample_rate
            self._engine.caller_audio(pcm, content.sample_rate)

    def _on_textInput(self, body: dict[str, Any], content: ContentInfo | None) -> None:
        if content is not None:
            self._texts.setdefault(content.name, []).append(body.get("content", ""))

    def _on_toolResult(self, body: dict[str, Any], content: ContentInfo | None) -> None:
        if content is not None:
            self._texts.setdefault(content.name, []).append(body.get("content", ""))

    def _on_contentEnd(self, body: dict[str, Any], content: ContentInfo | None) -> None:
        if content is None or self._engine is None:
            return
        text = "".join(self._texts.pop(content.name, []))
        if content.type == "AUDIO":
            self._engine.audio_ended()
        elif content.type == "TOOL" and content.tool_use_id is not None:
            result = json.loads(text)
            self.record.tool_results.append((content.tool_use_id, result))
            self._engine.tool_result(content.tool_use_id, result)
        elif content.role == "SYSTEM":
            self.record.system_prompts.append(text)
        elif not content.interactive:
            self.record.history.append((content.role, text))
        elif content.role == "USER":
            self.record.text_inputs.append(text)
            self._engine.text_input(text)

    def _on_promptEnd(self, body: dict[str, Any], _: ContentInfo | None) -> None:
        if self._engine is not None:
            self._engine.finish()

    def _input_ended(self) -> None:
        self._checker.end_of_input()
        if self._stalled:
            return
        self._finish("client ended the stream")

    # -- output ------------------------------------------------------------------------------------

    def _emit(self, name: str, body: dict[str, Any]) -> None:
        if self._closing or self._stalled:
            return
        if self._mid_answer is not None and name == "contentEnd" and body.get("type") == "AUDIO":
            if self._mid_answer[1].ends():
                self._strike_mid_answer()
                return
        self.record.sent.append(name)
        self._outbox.put_nowait(encode_event(name, body))
        if self._mid_answer is not None and name == "audioOutput":
            seconds = len(base64.b64decode(body["content"])) / 2 / (self._checker.output_sample_rate or 16000)
            if self._mid_answer[1].audio(seconds):
                self._strike_mid_answer()

    def _strike_mid_answer(self) -> None:
        """A mid-answer fault: nothing after what is queued; a reset goes out behind it, not ahead of it."""
        assert self._mid_answer is not None
        fault, self._mid_answer = self._mid_answer[0], None
        if fault.kind == "stall":
            self._apply(fault)
            return
        self.record.ended_by = "fault: reset"
        self._closing = True
        self._outbox.put_nowait(_Reset())
        if self._engine is not None:
            self._tasks.append(asyncio.create_task(self._engine.close()))

    def _fail(self, exception_type: str, message: str, reason: str) -> None:
        """End the stream with a modelled exception, as Nova does."""
        if self._closing:
            return
        self.record.sent.append(exception_type)
        self._outbox.put_nowait(encode_exception(exception_type, message))
        self._finish(reason)

    def _finish(self, reason: str) -> None:
        if self._closing:
            return
        self._closing = True
        self.record.ended_by = self.record.ended_by or reason
        self._outbox.put_nowait(None)
        if self._engine is not None:
            engine = self._engine
            self._tasks.append(asyncio.create_task(engine.close()))

    def _violation(self, message: str) -> None:
        self.record.violations.append(message)
        self._after_violation(message)

    def _after_violation(self, first: str) -> None:
        """Real Nova answers a malformed input with validationException and ends the stream; so do we."""
        log.warning("local nova stream %d: %s", self.record.index, first)
        if self._reject_violations:
            self._fail("validationException", first, "protocol violation")

    async def _drain_outbox(self) -> None:
        while True:
            data = await self._outbox.get()
            if isinstance(data, _Reset):
                self._reset()
                self._done.set()
                return
            try:
                await self._write(data)
            except Exception as error:  # noqa: BLE001 - the stream or connection is gone, whatever the cause
                log.debug("local nova stream %d: write failed: %s", self.record.index, error)
                self._closing = True
                return
            if data is None:
                if self._engine is not None:
                    self.record.barge_ins = self._engine.barge_ins
                self._done.set()
                return

    async def _watch_time(self) -> None:
        """Connection cap, silence timeout and timed faults."""
        limits = self._limits
        while not self._closing and not self._stalled:
            now = time.monotonic()
            if self._fault is not None and now >= self._started + self._fault.after_s:
                fault, self._fault = self._fault, None
                self._apply(fault)
                continue
            if now >= self._started + limits.connection_limit:
                self._fail(
                    "modelTimeoutException", "Model has timed out in processing the request.", "connection limit"
                )
                return
            last = self._engine.last_activity if self._engine is not None else self._started
            if now >= last + limits.silence_timeout:
                message = "Timed out waiting for input events. InternalErrorCode=531"
                self._fail(limits.silence_exception, message, "silence timeout")
                return
            deadlines = [self._started + limits.connection_limit, last + limits.silence_timeout]
            if self._fault is not None:
                deadlines.append(self._started + self._fault.after_s)
            await asyncio.sleep(min(0.25, max(0.005, min(deadlines) - now)))

    def _apply(self, fault: Fault) -> None:
        if fault.kind == "exception":
            self._fail(fault.error_type, fault.message, f"fault: {fault.error_type}")
        elif fault.kind == "reset":
            self.record.ended_by = "fault: reset"
            self._closing = True
            self._reset()
            self._done.set()
        elif fault.kind == "stall":
            self.record.ended_by = "fault: stall"
            self._stalled = True
            if self._engine is not None:
                self._tasks.append(asyncio.create_task(self._engine.close()))

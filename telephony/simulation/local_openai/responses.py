"""The local OpenAI's turns: server VAD on the caller's audio, responses streamed faster than real time, barge-in.

Caller speech is found by level (local Nova's ``LevelDetector``), as the service's server VAD does, ending after
the session's ``silence_duration_ms`` of quiet, and answered through the same brains. Responses stream as
OpenAI's do: ``response.created``, the assistant item, its audio as ``response.output_audio.delta`` chunks sent
``Pacing.speedup`` times faster than they play, the transcript beside it, function calls, then ``response.done``.
So, as with the real service, a reply is usually done generating long before the caller has heard it: a caller
who talks over it then gets only ``input_audio_buffer.speech_started`` (there is nothing to cancel). A caller who
talks while a response is still being generated cancels it: ``response.done`` with ``status: cancelled``,
``reason: turn_detected``.

Events go to ``emit`` synchronously; the only suspension points in a response are the brain and the pauses
between audio chunks, so a cancelled response never leaves an item half-described.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from telephony.simulation.local_nova import CallerTurn, Pacing, Reply
from telephony.simulation.local_nova.replies import Brain, render_audio
from telephony.simulation.local_nova.turns import LevelDetector, SpeechStarted

from .conversation import Conversation

__all__ = ["Responder"]

log = logging.getLogger(__name__)

RATE = 24000
Emit = Callable[[dict[str, Any]], None]


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


@dataclass
class _Response:
    """A response being generated: its task and what it has said so far."""

    response_id: str
    task: asyncio.Task[None] | None = None
    output: list[dict[str, Any]] = field(default_factory=list)
    decision: asyncio.Future[Reply | None] | None = None
    """The brain's reply, decided apart from the response: a cancelled response still has its turn transcribed."""
    transcribe: str | None = None
    """The caller item the response answers."""


class Responder:
    """One session's turns. Feed it the client's audio and response requests; it emits server events."""

    def __init__(
        self,
        brain: Brain,
        emit: Emit,
        conversation: Conversation,
        *,
        pacing: Pacing,
        before_response: Callable[[], bool],
        detector_options: dict[str, Any] | None = None,
        late_transcripts: bool = False,
    ) -> None:
        """``before_response``: asked before each response; False when a fault answered instead.
        ``late_transcripts``: the caller's transcript comes after the answer's audio, not before the response
        (the service transcribes beside the model, so either order happens)."""
        self._brain = brain
        self._emit = emit
        self._conversation = conversation
        self._pacing = pacing
        self._before_response = before_response
        self._late_transcripts = late_transcripts
        self._detector_options = detector_options or {}
        self._detector = LevelDetector(RATE, **self._detector_options)
        self._active: _Response | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._decisions: set[asyncio.Future[Reply | None]] = set()
        self._audio_ms = 0.0
        self._speech_item: str | None = None
        self._audible_until = 0.0
        self.barge_ins = 0
        """Caller speech while bot audio was still playing at the caller's end."""
        self.cancelled = 0
        """Responses cancelled because the caller talked while they were being generated."""

    @property
    def active(self) -> bool:
        return self._active is not None

    # -- caller input ----------------------------------------------------------------------------

    def end_turns_after(self, silence_s: float) -> None:
        """The session's ``silence_duration_ms``: how much quiet ends a caller turn (a turn in progress starts over)."""
        self._detector = LevelDetector(RATE, **{**self._detector_options, "hangover_s": silence_s})

    def caller_audio(self, pcm: bytes) -> None:
        """An ``input_audio_buffer.append``: server VAD may start or end a caller turn."""
        for event in self._detector.feed(pcm):
            if isinstance(event, SpeechStarted):
                self._speech_started()
            else:
                self._speech_stopped(event.pcm)
        self._audio_ms += len(pcm) / 2 / RATE * 1000

    def _speech_started(self) -> None:
        self._speech_item = new_id("item")
        self._emit(
            {
                "type": "input_audio_buffer.speech_started",
                "audio_start_ms": int(self._audio_ms),
                "item_id": self._speech_item,
            }
        )
        if time.monotonic() < self._audible_until:
            self.barge_ins += 1
        self._audible_until = 0.0
        if self._active is not None and self._active.task is not None:
            self._cancel(self._active)

    def _speech_stopped(self, pcm: bytes) -> None:
        item_id = self._speech_item or new_id("item")
        self._speech_item = None
        self._emit(
            {"type": "input_audio_buffer.speech_stopped", "audio_end_ms": int(self._audio_ms), "item_id": item_id}
        )
        previous = self._conversation.last_id()
        self._emit({"type": "input_audio_buffer.committed", "previous_item_id": previous, "item_id": item_id})
        item = {
            "id": item_id,
            "type": "message",
            "role": "user",
            "status": "completed",
            "content": [{"type": "input_audio", "transcript": None}],
        }
        self._conversation.add(item)
        self._emit({"type": "conversation.item.added", "previous_item_id": previous, "item": item})
        self._emit({"type": "conversation.item.done", "previous_item_id": previous, "item": item})
        turn = CallerTurn(pcm, RATE)
        self._conversation.take_triggers()  # whatever came before the caller spoke is in this turn's context
        self.respond(lambda: self._brain.on_caller_turn(turn), transcribe=item_id)

    # -- responses -------------------------------------------------------------------------------

    def respond(self, decide: Callable[[], Awaitable[Reply | None]], transcribe: str | None = None) -> None:
        """Generate a response with what ``decide`` says (``transcribe``: the caller item it answers)."""
        if not self._before_response():
            return
        decision = asyncio.ensure_future(decide())
        self._decisions.add(decision)
        decision.add_done_callback(self._decisions.discard)
        response = _Response(new_id("resp"), decision=decision, transcribe=transcribe)
        self._active = response
        task = asyncio.create_task(self._generate(response))
        response.task = task
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("local openai response failed", exc_info=task.exception())

    async def _generate(self, response: _Response) -> None:
        assert response.decision is not None
        transcribe = response.transcribe
        self._emit({"type": "response.created", "response": self._response_body(response, "in_progress")})
        try:
            reply = await asyncio.shield(response.decision)
        except Exception:  # a broken brain: the response fails, as the service's do, and the session goes on
            self._active = None
            self._emit({"type": "response.done", "response": self._response_body(response, "failed")})
            raise
        heard = reply.heard if reply is not None and reply.heard is not None else ""
        if transcribe is not None and not self._late_transcripts:
            self._transcript(transcribe, heard)
        try:
            if reply is not None and reply.speaks:
                await self._speak(response, reply)
        finally:  # the service transcribes beside the response: a caller who cuts it off is transcribed all the same
            if transcribe is not None and self._late_transcripts:
                self._transcript(transcribe, heard)
        if reply is not None:
            for request in reply.tool_uses:
                self._function_call(response, request.name, request.input, request.tool_use_id)
        self._active = None
        self._emit({"type": "response.done", "response": self._response_body(response, "completed", reply)})

    def _transcript(self, item_id: str, text: str) -> None:
        if item_id in self._conversation.transcripts:
            return  # transcribed already (a response cut off after it had transcribed its turn)
        base = {"item_id": item_id, "content_index": 0}
        if text:
            self._emit({"type": "conversation.item.input_audio_transcription.delta", **base, "delta": text})
        self._emit({"type": "conversation.item.input_audio_transcription.completed", **base, "transcript": text})
        self._conversation.transcribed(item_id, text)

    async def _speak(self, response: _Response, reply: Reply) -> None:
        item: dict[str, Any] = {
            "id": new_id("item"),
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        ids = {"response_id": response.response_id, "item_id": item["id"], "output_index": len(response.output)}
        response.output.append(item)
        previous = self._conversation.last_id()
        self._conversation.add(item)
        self._emit(
            {
                "type": "response.output_item.added",
                "response_id": response.response_id,
                "output_index": ids["output_index"],
                "item": item,
            }
        )
        self._emit({"type": "conversation.item.added", "previous_item_id": previous, "item": item})
        part = {"type": "audio", "transcript": ""}
        self._emit({"type": "response.content_part.added", **ids, "content_index": 0, "part": part})
        item["content"] = [{"type": "output_audio", "transcript": ""}]
        pcm = render_audio(reply.audio, reply.text, RATE)
        if reply.text:
            self._emit(
                {"type": "response.output_audio_transcript.delta", **ids, "content_index": 0, "delta": reply.text}
            )
        await self._stream_audio(pcm, item["id"], ids)
        self._emit({"type": "response.output_audio.done", **ids, "content_index": 0})
        self._emit(
            {"type": "response.output_audio_transcript.done", **ids, "content_index": 0, "transcript": reply.text}
        )
        item["content"] = [{"type": "output_audio", "transcript": reply.text}]
        item["status"] = "completed"
        self._emit(
            {
                "type": "response.content_part.done",
                **ids,
                "content_index": 0,
                "part": {"type": "audio", "transcript": reply.text},
            }
        )
        self._emit(
            {
                "type": "response.output_item.done",
                "response_id": response.response_id,
                "output_index": ids["output_index"],
                "item": item,
            }
        )
        self._emit({"type": "conversation.item.done", "previous_item_id": previous, "item": item})

    async def _stream_audio(self, pcm: bytes, item_id: str, ids: dict[str, Any]) -> None:
        chunk_bytes = max(2, int(self._pacing.chunk_s * RATE) * 2)
        started, sent_s = time.monotonic(), 0.0
        for offset in range(0, len(pcm), chunk_bytes):
            chunk = pcm[offset : offset + chunk_bytes]
            seconds = len(chunk) / 2 / RATE
            self._audible_until = max(self._audible_until, time.monotonic()) + seconds
            self._conversation.audio_generated(item_id, seconds * 1000)
            delta = base64.b64encode(chunk).decode("ascii")
            self._emit({"type": "response.output_audio.delta", **ids, "content_index": 0, "delta": delta})
            sent_s += seconds
            delay = started + sent_s / self._pacing.speedup - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)

    def _function_call(self, response: _Response, name: str, arguments: dict[str, Any], call_id: str | None) -> None:
        call_id = call_id or new_id("call")[:32]
        text = json.dumps(arguments)
        item = {
            "id": new_id("item"),
            "type": "function_call",
            "status": "in_progress",
            "call_id": call_id,
            "name": name,
            "arguments": "",
        }
        index = len(response.output)
        response.output.append(item)
        self._conversation.add(item)
        ids = {"response_id": response.response_id, "item_id": item["id"], "output_index": index, "call_id": call_id}
        self._emit(
            {
                "type": "response.output_item.added",
                "response_id": response.response_id,
                "output_index": index,
                "item": dict(item),
            }
        )
        self._emit({"type": "response.function_call_arguments.delta", **ids, "delta": text})
        self._emit({"type": "response.function_call_arguments.done", **ids, "name": name, "arguments": text})
        item.update(status="completed", arguments=text)
        self._emit(
            {
                "type": "response.output_item.done",
                "response_id": response.response_id,
                "output_index": index,
                "item": item,
            }
        )

    def _cancel(self, response: _Response) -> None:
        """The caller talks while ``response`` is still being generated: stop it and say so, as the service does."""
        assert response.task is not None
        response.task.cancel()
        if response.transcribe is not None and response.decision is not None:
            response.decision.add_done_callback(functools.partial(self._transcribe_cut_off, response.transcribe))
        self._active = None
        self.cancelled += 1
        for index, item in enumerate(response.output):
            if item["status"] == "in_progress":
                item["status"] = "incomplete"
                self._emit(
                    {
                        "type": "response.output_item.done",
                        "response_id": response.response_id,
                        "output_index": index,
                        "item": item,
                    }
                )
        body = self._response_body(response, "cancelled")
        body["status_details"] = {"type": "cancelled", "reason": "turn_detected"}
        self._emit({"type": "response.done", "response": body})

    def _transcribe_cut_off(self, item_id: str, decision: asyncio.Future[Reply | None]) -> None:
        """The service transcribes beside its responses: a turn whose response the caller cut off (even before it
        was decided) is transcribed all the same, once the brain has heard it."""
        if decision.cancelled() or decision.exception() is not None:
            return
        reply = decision.result()
        self._transcript(item_id, reply.heard if reply is not None and reply.heard is not None else "")

    def _response_body(self, response: _Response, status: str, reply: Reply | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "object": "realtime.response",
            "id": response.response_id,
            "status": status,
            "status_details": None,
            "output": list(response.output),
        }
        if status != "in_progress":
            out_tokens = len(reply.text) // 4 if reply is not None else 0
            body["usage"] = {
                "total_tokens": out_tokens + 10,
                "input_tokens": 10,
                "output_tokens": out_tokens,
                "input_token_details": {"text_tokens": 10, "audio_tokens": 0},
                "output_token_details": {"text_tokens": out_tokens, "audio_tokens": 0},
            }
        return body

    async def close(self) -> None:
        """Cancel every response in flight."""
        tasks: list[asyncio.Future[Any]] = [*self._tasks, *self._decisions]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._active = None

"""Long calls without waiting for them: a conversation in tones, a model whose connections run out, a caller.

- :class:`ToneConversation` is the model's side of the conversation. Each caller utterance is a tone whose
  pitch names it; the conversation answers with what it heard (``tone 523 Hz 1.20 s``: pitch and voiced
  length) as the user transcript, so a test can tell whether every utterance reached the answering
  connection whole and once. It is a local Nova ``Brain`` (the real Nova client against the emulator)
  and the brain of :class:`LimitedModel`; one instance is shared by every connection of a call, as a
  real model's conversation is carried over in history.
- :class:`LimitedModel` is a ``BidiModel`` with short, seeded connection limits: it declares
  ``restart_after_s`` (strands replaces it proactively) and/or times out (``ConnectionTimeoutError``:
  strands replaces it reactively), and each new connection takes a seeded set-up time.
- :func:`talk` is the caller: it follows a :class:`Plan` (questions, a tool question, a long answer it
  talks over, goodbye) on a continuous line, as a phone streams silence between words.
- :func:`score` turns what the bridge saw into the figures of the issue: utterances heard whole once,
  audio lost, longest silence the caller heard, answers cut and resumed.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import math
import random
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from strands import tool
from strands.bidi.models import BidiModel, ConnectionTimeoutError
from strands.bidi.models.configs import AudioConfig, AudioStreamConfig
from strands.bidi.types import (
    AudioDelta,
    BidiAudioDeltaEvent,
    BidiAudioStartEvent,
    BidiAudioStopEvent,
    BidiBargeInEvent,
    BidiConnectionStartEvent,
    BidiMessage,
    BidiResponseStartEvent,
    BidiResponseStopEvent,
    BidiToolUseBlocksEvent,
    BidiTranscriptDeltaEvent,
    BidiTranscriptStartEvent,
    BidiTranscriptStopEvent,
)
from strands.types.content import TextBlock
from strands.types.tools import ToolResultBlock

from telephony.bridge.observer import QuietObserver
from telephony.codec import ulaw_to_pcm16
from telephony.simulation.caller.simulated_caller import FRAME_SECONDS, SimulatedCaller
from telephony.simulation.local_nova.replies import CallerTurn, Reply, Tone, ToolRequest, render_audio
from telephony.simulation.local_nova.turns import LevelDetector, SpeechEnded, SpeechStarted

RATE = 16000
SPEECH_RMS = 300.0
LOOKUP_S = 1.0
ANSWER_HZ = 1200.0
LONG_ANSWER_HZ = 1400.0
RESUME_HZ = 900.0
GOODBYE_HZ = 1600.0
TOOL_ANSWER_HZ = 1100.0
HEARD = re.compile(r"tone (?P<hz>[0-9.]+) Hz (?P<seconds>[0-9.]+) s")


# --- the conversation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Utterance:
    """One thing the caller says: a tone of ``hz`` for ``seconds``; ``kind`` says what the bot does with it."""

    hz: float
    seconds: float
    kind: str
    """``ask`` (short answer), ``long`` (a 4 s answer), ``tool`` (answer after a tool), ``barge`` (said over
    the previous long answer), ``bye`` (goodbye and hang-up)."""


@dataclass
class Plan:
    utterances: list[Utterance]

    def kind_of(self, hz: float) -> str | None:
        utterance = self.match(hz)
        return utterance.kind if utterance else None

    def match(self, hz: float) -> Utterance | None:
        best = min(self.utterances, key=lambda u: abs(u.hz - hz), default=None)
        return best if best is not None and abs(best.hz - hz) <= 8 else None


def make_plan(seed: int, turns: int) -> Plan:
    """``turns`` utterances of distinct pitch (250-850 Hz), every kind represented, goodbye last."""
    rng = random.Random(seed)
    pitches = rng.sample(range(250, 850, 24), turns)
    kinds: list[str] = ["long", "barge", "tool"][: max(0, turns - 1)]
    while len(kinds) < turns - 1:
        kind = rng.choice(["ask", "ask", "long", "tool"])
        if kind == "long":
            kinds += ["long", "barge"] if len(kinds) <= turns - 3 else ["ask"]
        else:
            kinds.append(kind)
    rng.shuffle(pairs := _pairs(kinds))
    kinds = [kind for pair in pairs for kind in pair]
    kinds.append("bye")
    return Plan(
        [Utterance(float(hz), round(rng.uniform(0.6, 1.6), 2), kind) for hz, kind in zip(pitches, kinds, strict=True)]
    )


def _pairs(kinds: list[str]) -> list[tuple[str, ...]]:
    """Group a long answer with the barge-in that follows it, so shuffling keeps them together."""
    pairs: list[tuple[str, ...]] = []
    for kind in kinds:
        if kind == "barge" and pairs and pairs[-1] == ("long",):
            pairs[-1] = ("long", "barge")
        else:
            pairs.append((kind,))
    return pairs


def analyse(pcm: bytes, rate: int) -> tuple[float, float]:
    """(pitch, voiced seconds) of a caller turn: what the 'recogniser' heard."""
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    frame = int(rate * 0.02)
    frames = samples[: len(samples) // frame * frame].reshape(-1, frame)
    loud = np.sqrt(np.mean(frames**2, axis=1)) >= SPEECH_RMS
    voiced = frames[loud].ravel()
    if not voiced.size:
        return 0.0, 0.0
    spectrum = np.abs(np.fft.rfft(voiced * np.hanning(voiced.size)))
    spectrum[0] = 0
    return float(np.argmax(spectrum) * rate / voiced.size), float(loud.sum()) * 0.02


class ToneConversation:
    """The bot's half of a tone conversation (a local Nova ``Brain``; also :class:`LimitedModel`'s)."""

    def __init__(self, plan: Plan, answer_s: float = 1.2, long_answer_s: float = 4.0) -> None:
        self.plan = plan
        self.answer_s = answer_s
        self.long_answer_s = long_answer_s
        self.turns = 0
        self.resumes = 0
        self.last_reply: Reply | None = None
        self._tool_asks: dict[str, float] = {}
        self._goodbye = Reply(
            text="Goodbye, thanks for calling.",
            audio=Tone(1.0, GOODBYE_HZ),
            tool_uses=(ToolRequest("end_conversation", {"reason": "the caller said goodbye"}),),
        )

    async def on_caller_turn(self, turn: CallerTurn) -> Reply | None:
        self.last_reply = self._answer(turn)
        return self.last_reply

    def _answer(self, turn: CallerTurn) -> Reply | None:
        hz, seconds = analyse(turn.pcm, turn.sample_rate)
        if seconds < 0.1:
            return None
        self.turns += 1
        heard = f"tone {hz:.0f} Hz {seconds:.2f} s"
        kind = self.plan.kind_of(hz)
        if kind == "bye":
            return Reply(self._goodbye.text, self._goodbye.audio, heard, self._goodbye.tool_uses)
        if kind == "tool":
            tool_use_id = f"tooluse_{uuid.uuid4().hex[:16]}"
            self._tool_asks[tool_use_id] = hz
            request = ToolRequest("lookup", {"query": f"{hz:.0f}"}, tool_use_id)
            return Reply(
                text="Let me look that up.", audio=Tone(0.6, TOOL_ANSWER_HZ), heard=heard, tool_uses=(request,)
            )
        if kind == "long":
            return Reply(text="Here is a long answer " * 6, audio=Tone(self.long_answer_s, LONG_ANSWER_HZ), heard=heard)
        return Reply(text=f"You said {hz:.0f}.", audio=Tone(self.answer_s, ANSWER_HZ), heard=heard)

    async def on_text(self, text: str) -> Reply | None:
        if "connection was replaced" in text:
            self.resumes += 1
            if self.last_reply is not None and self.last_reply.tool_uses == self._goodbye.tool_uses:
                return self._goodbye  # its history says the cut answer was the goodbye: say it again, and hang up
            return Reply(text="As I was saying.", audio=Tone(0.8, RESUME_HZ))
        if "tool call finished" in text.lower():  # Nova gives a result from before a restart as text
            return Reply(text="I found it.", audio=Tone(0.8, TOOL_ANSWER_HZ))
        return None

    async def on_tool_result(self, tool_use_id: str, name: str, result: Any) -> Reply | None:
        if tool_use_id not in self._tool_asks:
            return None  # end_conversation's result: nothing more to say
        return Reply(text="I found it.", audio=Tone(0.8, TOOL_ANSWER_HZ))


@tool
async def lookup(query: str) -> str:
    """Look something up for the caller (takes a moment)."""
    await asyncio.sleep(LOOKUP_S)
    return f"found {query}"


# --- a model whose connections run out ------------------------------------------------------------


Seconds = float | Callable[[], float] | None


def _draw(value: Seconds) -> float | None:
    return value() if callable(value) else value


class _Connection:
    """One connection of :class:`LimitedModel`: its own event outbox, hearing and replies."""

    def __init__(self, model: LimitedModel, index: int) -> None:
        self.model = model
        self.index = index
        self.outbox: asyncio.Queue[Any] = asyncio.Queue()
        self.detector = LevelDetector(model.rate, threshold_rms=SPEECH_RMS)
        self.replies: list[asyncio.Task[None]] = []
        self.playing: asyncio.Task[None] | None = None
        self.audible_until = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.closed = False
        self.speech_bytes = 0
        self.barged = False
        self._ids = itertools.count(1)

    def trigger(self, moment: str) -> None:
        """Time out here if the test asked for a restart at this moment (once per moment per model)."""
        model = self.model
        if moment in model.cut_at and moment not in model.cuts_done and not self.closed:
            model.cuts_done.append(moment)
            self.emit(ConnectionTimeoutError(f"connection {self.index} timed out during {moment}"))

    def emit(self, event: Any) -> None:
        if not self.closed:
            self.outbox.put_nowait(event)

    def hear(self, pcm: bytes) -> None:
        for event in self.detector.feed(pcm):
            if isinstance(event, SpeechStarted):
                self.speech_bytes = 0
                if time.monotonic() < self.audible_until:
                    self._barge_in()
            elif isinstance(event, SpeechEnded):
                self.barged = False
                turn = CallerTurn(event.pcm, self.model.rate)
                self.respond(lambda turn=turn: self.model.brain.on_caller_turn(turn))
        if self.detector.in_speech:
            self.speech_bytes += len(pcm)
            if self.speech_bytes >= 0.4 * self.model.rate * 2:
                self.trigger("barge-in" if self.barged else "utterance")

    def respond(self, decide: Callable[[], Any]) -> None:
        previous = self.replies[-1] if self.replies else None
        task = asyncio.create_task(self._reply(decide, previous))
        self.replies.append(task)

    async def _reply(self, decide: Callable[[], Any], previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        reply: Reply | None = await decide()
        if reply is None or self.closed:
            return
        self.playing = asyncio.current_task()
        try:
            await self._speak(reply)
        finally:
            self.playing = None

    async def _speak(self, reply: Reply) -> None:
        response_id = f"response-{self.index}-{next(self._ids)}"
        self.emit(BidiResponseStartEvent(response_id=response_id))
        if reply.heard is not None:
            self._transcript(reply.heard, "user")
        if reply.speaks:
            self._transcript(reply.text, "assistant")
            content_id = f"audio-{self.index}-{next(self._ids)}"
            self.emit(BidiAudioStartEvent(content_id=content_id))
            goodbye = any(request.name == "end_conversation" for request in reply.tool_uses)
            pcm = render_audio(reply.audio, reply.text, self.model.rate)
            await self._audio(content_id, pcm, "goodbye" if goodbye else "answer")
            self.emit(BidiAudioStopEvent(content_id=content_id))
        for request in reply.tool_uses:
            use = {"toolUseId": request.tool_use_id or f"tooluse_{uuid.uuid4().hex[:16]}", "name": request.name}
            self.emit(BidiToolUseBlocksEvent(tool_uses=[{**use, "input": request.input}]))  # type: ignore[list-item]
            if request.name == "lookup":
                self.trigger("tool call")
        self.emit(BidiResponseStopEvent(response_id=response_id))

    async def _audio(self, content_id: str, pcm: bytes, moment: str) -> None:
        rate, speedup = self.model.rate, self.model.speedup
        chunk = int(0.04 * rate) * 2
        started = time.monotonic()
        for offset in range(0, len(pcm), chunk):
            if offset >= len(pcm) // 3:
                self.trigger(moment)
            piece = pcm[offset : offset + chunk]
            self.audible_until = max(self.audible_until, time.monotonic()) + len(piece) / 2 / rate
            self.emit(
                BidiAudioDeltaEvent(
                    audio=base64.b64encode(piece).decode(),
                    format="pcm",
                    sample_rate=rate,  # type: ignore[arg-type]
                    channels=1,
                    content_id=content_id,
                )
            )
            due = started + (offset + len(piece)) / 2 / rate / speedup
            await asyncio.sleep(max(0.0, due - time.monotonic()))

    def _transcript(self, text: str, role: str) -> None:
        content_id = f"transcript-{self.index}-{next(self._ids)}"
        self.emit(BidiTranscriptStartEvent(role=role, content_id=content_id))  # type: ignore[arg-type]
        self.emit(BidiTranscriptDeltaEvent(delta=text, role=role, content_id=content_id))  # type: ignore[arg-type]
        self.emit(BidiTranscriptStopEvent(role=role, content_id=content_id))  # type: ignore[arg-type]

    def _barge_in(self) -> None:
        self.audible_until = 0.0
        self.barged = True
        if self.playing is not None:
            self.playing.cancel()
        self.emit(BidiBargeInEvent())

    async def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        tasks = [task for task in self.replies if not task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.outbox.put_nowait(None)
        self.closed = True


class LimitedModel(BidiModel):
    """A model with short connection limits and slow set-ups (see the module docstring).

    ``restart_after_s``: declared in the connection config (strands restarts proactively); drawn again each
    time strands reads it. ``timeout_after_s``: a connection raises ``ConnectionTimeoutError`` this long
    after it opens (strands restarts reactively). ``cut_at``: moments at which a connection times out
    instead (mid-utterance, mid-answer, ...). ``setup_s``: how long ``start()`` takes.
    """

    def __init__(
        self,
        brain: ToneConversation,
        *,
        rate: int = RATE,
        restart_after_s: Seconds = None,
        timeout_after_s: Seconds = None,
        setup_s: Seconds = 0.0,
        speedup: float = 4.0,
        cut_at: set[str] | frozenset[str] = frozenset(),
    ) -> None:
        self._config: dict[str, Any] = {"model_id": "limited"}
        self.brain = brain
        self.rate = rate
        self.restart_after_s = restart_after_s
        self.timeout_after_s = timeout_after_s
        self.setup_s = setup_s
        self.speedup = speedup
        self.cut_at = set(cut_at)
        """Moments to time out at, once each: utterance, answer, tool call, goodbye, barge-in."""
        self.cuts_done: list[str] = []
        self.connections: list[_Connection] = []
        self.setups: list[float] = []
        self.audio_received = 0
        self.started = False
        self.stopped = False
        self._current: _Connection | None = None

    def get_connection_config(self) -> Any:
        after = _draw(self.restart_after_s)
        return {"restart_after_s": after} if after else {}

    def get_config(self) -> Any:
        return self._config

    def update_config(self, **model_config: Any) -> None:
        self._config.update(model_config)

    def get_audio_config(self) -> AudioConfig:
        stream = AudioStreamConfig(sample_rate=self.rate, channels=1, format="pcm")  # type: ignore[typeddict-item]
        return AudioConfig(input=stream, output=stream)

    async def start(self, system_prompt: str | None = None, tools: Any = None, messages: Any = None, **_: Any) -> None:
        setup = _draw(self.setup_s) or 0.0
        self.setups.append(setup)
        if setup:
            await asyncio.sleep(setup)
        connection = _Connection(self, len(self.connections))
        self.connections.append(connection)
        self._current = connection
        self.started, self.stopped = True, False
        connection.emit(BidiConnectionStartEvent(connection_id=f"limited-{connection.index}", model="limited"))
        timeout = _draw(self.timeout_after_s)
        if timeout:
            error = ConnectionTimeoutError(f"connection {connection.index} reached its limit")
            connection.timer = asyncio.get_running_loop().call_later(timeout, connection.emit, error)

    async def stop(self) -> None:
        self.stopped = True
        if self._current is not None:
            connection, self._current = self._current, None
            await connection.close()

    async def receive(self) -> Any:  # type: ignore[override]
        connection = self._current
        if connection is None:
            raise RuntimeError("model not started")
        while (item := await connection.outbox.get()) is not None:
            if isinstance(item, Exception):
                raise item
            yield item

    async def send(self, content: Any) -> None:
        connection = self._current
        if connection is None:
            raise RuntimeError("model not started | call start before sending")
        if isinstance(content, AudioDelta):
            pcm = content.source["bytes"]
            self.audio_received += len(pcm)
            connection.hear(pcm)
        elif isinstance(content, BidiMessage):
            for block in content.content:
                if isinstance(block, TextBlock):
                    connection.respond(lambda text=block.text: self.brain.on_text(text))
                elif isinstance(block, ToolResultBlock):
                    use_id = block.tool_use_id
                    connection.respond(lambda use_id=use_id: self.brain.on_tool_result(use_id, "lookup", None))


# --- the caller -------------------------------------------------------------------------------------


def tone_ulaw(hz: float, seconds: float, amplitude: float = 0.3) -> bytes:
    from telephony.codec import pcm16_to_ulaw

    count = round(seconds / FRAME_SECONDS) * 160
    wave = amplitude * 32767 * np.sin(2 * math.pi * hz * np.arange(count) / 8000)
    return pcm16_to_ulaw(wave.astype("<i2").tobytes())


def voiced(frame: bytes) -> bool:
    samples = np.frombuffer(ulaw_to_pcm16(frame), dtype="<i2").astype(np.float64)
    return float(np.sqrt(np.mean(samples**2))) > 300.0


class Line:
    """The caller's side of the line: a frame every 20 ms (of the caller's ``speed``), speech or silence."""

    def __init__(self, caller: SimulatedCaller) -> None:
        self.caller = caller
        self._speech = bytearray()
        self._spoken = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def __enter__(self) -> Line:
        self._task = asyncio.create_task(self._run())
        return self

    def __exit__(self, *_: Any) -> None:
        if self._task is not None:
            self._task.cancel()

    async def say(self, ulaw: bytes) -> float:
        """Say ``ulaw`` (whole frames); returns when the last frame went out (caller time)."""
        self._spoken.clear()
        self._speech += ulaw
        spoken = asyncio.ensure_future(self._spoken.wait())
        closed = asyncio.ensure_future(self.caller.closed.wait())
        await asyncio.wait({spoken, closed}, return_when=asyncio.FIRST_COMPLETED)
        for waiter in (spoken, closed):
            waiter.cancel()
        return self.caller.now()

    async def _run(self) -> None:
        started = time.monotonic()
        index = 0
        silence = b"\xff" * 160
        while not self.caller.closed.is_set():
            if self._speech:
                frame = bytes(self._speech[:160])
                del self._speech[:160]
                if not self._speech:
                    self._spoken.set()
            else:
                frame = silence
            try:
                await self.caller.media(frame)
            except Exception:  # noqa: BLE001 - the bot hung up
                return
            index += 1
            await asyncio.sleep(max(0.0, started + index * FRAME_SECONDS / self.caller.speed - time.monotonic()))


@dataclass
class CallerLog:
    said: list[tuple[Utterance, float, float]] = field(default_factory=list)
    """Each utterance with when it started and ended (caller time)."""
    unanswered: list[Utterance] = field(default_factory=list)
    hung_up_by_bot: bool = False


async def _until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def _bot_quiet(caller: SimulatedCaller, for_s: float = 0.3) -> bool:
    """Nothing queued to play and no bot speech heard for ``for_s`` (a model streaming at real time leaves
    the player's queue empty between chunks, so an empty queue alone does not mean the bot is done)."""
    if caller.playing:
        return False
    last = next((frame.at for frame in reversed(caller.heard[-100:]) if voiced(frame.payload)), None)
    return last is None or caller.now() - last >= for_s / caller.speed


def _bot_heard_since(caller: SimulatedCaller, since: float) -> bool:
    return any(frame.at > since and voiced(frame.payload) for frame in reversed(caller.heard[-200:]))


async def talk(
    caller: SimulatedCaller, plan: Plan, answer_timeout: float = 20.0, goodbye_after_s: float = 0.0
) -> CallerLog:
    """Follow ``plan`` on a live line; returns what was said when, and what went unanswered.

    ``goodbye_after_s``: the caller stays on the line (listening, silent) until then before saying goodbye.
    """
    log = CallerLog()
    with Line(caller) as line:
        await asyncio.sleep(0.3)
        for index, utterance in enumerate(plan.utterances):
            if caller.closed.is_set():
                log.unanswered.append(utterance)  # the bot hung up (or failed) before the caller was done
                continue
            if utterance.kind == "bye":
                await asyncio.sleep(max(0.0, goodbye_after_s - caller.now()))
            if utterance.kind == "barge":
                await _until(lambda: caller.playing, answer_timeout)
                await asyncio.sleep(0.6 / caller.speed)  # well into the long answer
            else:
                await _until(lambda: _bot_quiet(caller), answer_timeout)
                await asyncio.sleep(0.1 / caller.speed)
            start = caller.now()
            end = await line.say(tone_ulaw(utterance.hz, utterance.seconds))
            log.said.append((utterance, start, end))
            if utterance.kind == "bye":
                try:
                    await caller.wait_closed(answer_timeout + 5)
                    log.hung_up_by_bot = True
                except TimeoutError:
                    log.unanswered.append(utterance)
                break
            following = plan.utterances[index + 1] if index + 1 < len(plan.utterances) else None
            if not await _until(lambda end=end: _bot_heard_since(caller, end), answer_timeout):
                log.unanswered.append(utterance)
                continue
            if following is None or following.kind != "barge":
                await _until(lambda: _bot_quiet(caller), answer_timeout)
                if utterance.kind == "tool":  # the answer comes in two parts around the tool call
                    await asyncio.sleep(LOOKUP_S + 0.5 / caller.speed)
                    await _until(lambda: _bot_quiet(caller), answer_timeout)
    return log


# --- the figures ---------------------------------------------------------------------------------


class Tap(QuietObserver):
    """A call observer collecting what the scoring needs: user transcripts, restarts, notes."""

    def __init__(self) -> None:
        self.user_transcripts: list[str] = []
        self.restarts: list[str] = []
        self.notes: list[tuple[str, str]] = []
        self.started = time.monotonic()

    def agent_event(self, event: Any) -> None:
        kind = event.get("type") if hasattr(event, "get") else None
        if kind == "bidi_transcript_block" and event.get("role") == "user":
            self.user_transcripts.append(str(event.get("transcript")))
        elif kind == "bidi_connection_restart":
            self.restarts.append(str(event.get("reason")))

    def note(self, kind: str, detail: str) -> None:
        self.notes.append((kind, detail))


@dataclass
class Score:
    utterances: int
    heard_whole_once: int
    problems: list[str]
    restarts: int
    cuts: int
    resumed: int
    longest_silence_s: float
    hung_up_by_bot: bool

    @property
    def ok(self) -> bool:
        return not self.problems and self.heard_whole_once == self.utterances and self.hung_up_by_bot


def score(plan: Plan, log: CallerLog, tap: Tap, caller: SimulatedCaller, tolerance_s: float = 0.1) -> Score:
    """Was each utterance transcribed once, whole? How long did the caller wait in silence?"""
    problems: list[str] = []
    seen: dict[float, list[float]] = {}
    for text in tap.user_transcripts:
        match = HEARD.search(text)
        if match is None:
            problems.append(f"unexpected transcript {text!r}")
            continue
        utterance = plan.match(float(match["hz"]))
        if utterance is None:
            problems.append(f"a fragment nobody said: {text!r}")
            continue
        seen.setdefault(utterance.hz, []).append(float(match["seconds"]))
    whole = 0
    for utterance, _, _ in log.said:
        heard = seen.get(utterance.hz, [])
        if len(heard) == 1 and abs(heard[0] - utterance.seconds) <= tolerance_s:
            whole += 1
        else:
            problems.append(f"{utterance.hz:.0f} Hz ({utterance.seconds:.2f} s, {utterance.kind}) heard as {heard}")
    problems += [f"no answer to {u.hz:.0f} Hz ({u.kind})" for u in log.unanswered]
    cuts = sum(1 for kind, _ in tap.notes if kind == "cut")
    resumed = sum(1 for kind, _ in tap.notes if kind == "resume")
    return Score(
        utterances=len(log.said),
        heard_whole_once=whole,
        problems=problems,
        restarts=len(tap.restarts),
        cuts=cuts,
        resumed=resumed,
        longest_silence_s=longest_wait(caller),
        hung_up_by_bot=log.hung_up_by_bot,
    )


def longest_wait(caller: SimulatedCaller) -> float:
    """The longest stretch in which neither side spoke and the bot spoke next: the caller waiting on the bot."""
    events = sorted(
        [(frame.at, "caller") for frame in caller.said if voiced(frame.payload)]
        + [(frame.at, "bot") for frame in caller.heard if voiced(frame.payload)]
    )
    longest = 0.0
    for (at, _), (next_at, who) in itertools.pairwise(events):
        if who == "bot":
            longest = max(longest, next_at - at - FRAME_SECONDS)
    return longest

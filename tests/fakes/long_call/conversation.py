"""The model's side of a long call in tones: the caller's plan, and :class:`ToneConversation`, which answers
with what it heard (pitch and voiced length) so a test can tell whether each utterance arrived whole and once.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
from strands import tool

from telephony.simulation.local_nova.replies import CallerTurn, Reply, Tone, ToolRequest

RATE = 16000
SPEECH_RMS = 300.0
LOOKUP_S = 1.0
ANSWER_HZ = 1200.0
LONG_ANSWER_HZ = 1400.0
RESUME_HZ = 900.0
GOODBYE_HZ = 1600.0
TOOL_ANSWER_HZ = 1100.0
HEARD = re.compile(r"tone (?P<hz>[0-9.]+) Hz (?P<seconds>[0-9.]+) s")


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
        self.answered: list[tuple[float, float]] = []
        """When each caller turn was answered (monotonic) and the seconds of audio its reply speaks: restarts can
        be cued during an answer or just after it."""
        self.last_reply: Reply | None = None
        self._tool_asks: dict[str, float] = {}
        self._goodbye = Reply(
            text="Goodbye, thanks for calling.",
            audio=Tone(1.0, GOODBYE_HZ),
            tool_uses=(ToolRequest("end_conversation", {"reason": "the caller said goodbye"}),),
        )

    async def on_caller_turn(self, turn: CallerTurn) -> Reply | None:
        self.last_reply = self._answer(turn)
        if self.last_reply is not None:
            audio = self.last_reply.audio
            self.answered.append((time.monotonic(), audio.seconds if isinstance(audio, Tone) else 0.0))
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

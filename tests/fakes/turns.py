"""A fast fake agent that takes turns like a voice model: for load and soak runs.

It listens to the caller's audio (energy, no recognition): when the caller has spoken and then
been quiet for ``end_of_turn_s``, it answers after ``think_s`` with ``reply_s`` of generated
speech at its output rate, streamed faster than real time as real models do; if the caller talks
while its answer is still being generated or still playing (as Nova Sonic keeps track of), it reports a
barge-in and drops the rest of that answer. Optional faults
(``fail_after_s``) exercise the bridge's apology path under load. With ``goodbye_hz``, a turn spoken at
that pitch is answered with a goodbye and ``end_conversation``, so every call can end as a real one does.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from typing import Any

import numpy as np
from strands.bidi import BidiAgent
from strands.bidi.types import (
    AudioDelta,
    BidiAudioDeltaEvent,
    BidiAudioStartEvent,
    BidiAudioStopEvent,
    BidiBargeInEvent,
    BidiConnectionStartEvent,
    BidiResponseStartEvent,
    BidiResponseStopEvent,
    BidiToolUseBlocksEvent,
    BidiTranscriptDeltaEvent,
    BidiTranscriptStartEvent,
    BidiTranscriptStopEvent,
)

from agent.pcm_model import END, PcmModel
from agent.tools import end_conversation
from telephony.call_info import CallInfo
from telephony.simulation.local_nova.replies import dominant_hz
from tests.fakes.model import tone

SPEECH_RMS = 500.0
"""Mean-square level (PCM16 RMS) above which a chunk of caller audio counts as speech."""


class TurnTakingModel(PcmModel):
    def __init__(
        self,
        rate: int = 16000,
        think_s: float = 0.2,
        reply_s: float = 2.0,
        end_of_turn_s: float = 0.3,
        chunk_ms: int = 60,
        fail_after_s: float | None = None,
        goodbye_hz: float | None = None,
    ) -> None:
        super().__init__("turn-taking", rate, rate)
        self.think_s, self.reply_s, self.end_of_turn_s, self.chunk_ms = think_s, reply_s, end_of_turn_s, chunk_ms
        self.fail_after_s = fail_after_s
        self.goodbye_hz = goodbye_hz
        self._turn_audio: list[np.ndarray] = []
        self._said_goodbye_already = False
        self._playing_until = 0.0
        """When the answer sent so far has played at the caller's end (the event loop's clock)."""
        self._speaking = False
        self._heard_speech = False
        self._quiet_s = 0.0
        self._replying: asyncio.Task[None] | None = None
        self._fault: asyncio.TimerHandle | None = None
        self._turn = 0

    async def start(self, system_prompt: str | None = None, tools: Any = None, messages: Any = None, **_: Any) -> None:
        self.started = True
        self.emit(BidiConnectionStartEvent(connection_id=str(uuid.uuid4()), model="turn-taking"))
        if self.fail_after_s is not None:
            error = RuntimeError("injected model fault")
            self._fault = asyncio.get_running_loop().call_later(self.fail_after_s, self.emit, error)

    async def stop(self) -> None:
        self.stopped = True
        if self._fault is not None:
            self._fault.cancel()
        if self._replying is not None:
            self._replying.cancel()
            await asyncio.gather(self._replying, return_exceptions=True)
        self.emit(END)

    async def send(self, content: Any) -> None:
        if not isinstance(content, AudioDelta):
            if not self._speaking and not self._said_goodbye_already:  # text (the greeting, a keypress) is answered
                self._replying = asyncio.create_task(self._reply())
            return
        pcm = np.frombuffer(content.source["bytes"], dtype="<i2").astype(np.float32)
        if not len(pcm):
            return
        voiced = float(np.dot(pcm, pcm)) > SPEECH_RMS**2 * len(pcm)
        if voiced:
            self._heard_speech, self._quiet_s = True, 0.0
            if self.goodbye_hz is not None:
                self._turn_audio.append(pcm)
            if self._speaking or asyncio.get_running_loop().time() < self._playing_until:
                self._barge_in()
        elif self._heard_speech:
            self._quiet_s += len(pcm) / self.input_rate
            if self._quiet_s >= self.end_of_turn_s and not self._speaking:
                self._heard_speech = False
                self._replying = asyncio.create_task(self._reply(goodbye=self._said_goodbye()))

    def _said_goodbye(self) -> bool:
        if self.goodbye_hz is None or not self._turn_audio:
            return False
        turn, self._turn_audio = np.concatenate(self._turn_audio), []
        return abs(dominant_hz(turn.astype("<i2").tobytes(), self.input_rate) - self.goodbye_hz) < 40

    def _barge_in(self) -> None:
        self._speaking = False
        self._playing_until = 0.0
        if self._replying is not None:
            self._replying.cancel()
        self.emit(BidiBargeInEvent())

    async def _reply(self, goodbye: bool = False) -> None:
        self._turn += 1
        self._speaking = True
        content_id = f"turn-{self._turn}"
        self._transcript("user", "(caller speech)")
        await asyncio.sleep(self.think_s)
        self.emit(BidiResponseStartEvent(response_id=content_id))
        self.emit(BidiAudioStartEvent(content_id=content_id))
        self._playing_until = asyncio.get_running_loop().time() + self.reply_s
        pcm = tone(self.reply_s, self.output_rate, 600 + 100 * (self._turn % 4))
        step = self.output_rate * 2 * self.chunk_ms // 1000
        for offset in range(0, len(pcm), step):
            if not self._speaking:
                return
            audio = base64.b64encode(pcm[offset : offset + step]).decode()
            self.emit(BidiAudioDeltaEvent(audio, "pcm", self.output_rate, 1, content_id))
            await asyncio.sleep(self.chunk_ms / 1000 / 4)  # four times faster than real time
        self.emit(BidiAudioStopEvent(content_id=content_id))
        if goodbye:
            self._said_goodbye_already = True  # the tool's result gets no answer: the call is ending
            tool_use = {"toolUseId": f"tool-{content_id}", "name": "end_conversation", "input": {"reason": "goodbye"}}
            self.emit(BidiToolUseBlocksEvent(tool_uses=[tool_use]))  # type: ignore[list-item]
        self.emit(BidiResponseStopEvent(response_id=content_id))
        self._speaking = False

    def _transcript(self, role: str, text: str) -> None:
        content_id = f"transcript-{uuid.uuid4().hex[:8]}"
        self.emit(BidiTranscriptStartEvent(role=role, content_id=content_id))  # type: ignore[arg-type]
        self.emit(BidiTranscriptDeltaEvent(delta=text, role=role, content_id=content_id))  # type: ignore[arg-type]
        self.emit(BidiTranscriptStopEvent(role=role, content_id=content_id))  # type: ignore[arg-type]


def turn_taking_agent(call: CallInfo) -> BidiAgent:
    """``--agent tests.fakes.turns:turn_taking_agent``; ``fault_after`` in the call's parameters injects a fault."""
    fail_after = call.parameters.get("fault_after")
    model = TurnTakingModel(fail_after_s=float(fail_after) if fail_after else None)
    return BidiAgent(model=model, tools=[end_conversation], system_prompt="load test")


GOODBYE_HZ = 660.0


def goodbye_agent(call: CallInfo) -> BidiAgent:
    """``VOICEBOT_AGENT=tests.fakes.turns:goodbye_agent``: the turn-taking agent that hangs up on a 660 Hz turn."""
    model = TurnTakingModel(goodbye_hz=GOODBYE_HZ)
    return BidiAgent(model=model, tools=[end_conversation], system_prompt="load test")

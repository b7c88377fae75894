"""``ScriptedBrainModel``: a Strands ``BidiModel`` that plays a :class:`~agent.scripted.brain.BrainScript` over audio.

It hears, speaks and interrupts like the offline model (it is one, with the script's brain in place of
phrase recognition): caller utterances are end-pointed by voice activity (no words are recognised, so the
brain is never wrong about what was said), replies are spoken with espeak-ng in the bot's voice and paced to
real time, talking over a reply is a barge-in, and tools are requested through the agent like any model
does, so the agent's real tools run and their results are what the bot says.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from strands.bidi.types import BidiConnectionStartEvent

from agent.offline.model import OfflineModel, _Text
from agent.offline.recognizer import SAMPLE_RATE
from agent.offline.script import ToolCall
from agent.offline.synthesizer import BOT_VOICE, Voice
from agent.offline.vad import SpeechDetector

from .brain import BrainScript, BrainTurn, ScriptedBrain

__all__ = ["MODEL_ID", "ScriptedBrainModel"]

MODEL_ID = "scripted-brain"

log = logging.getLogger(__name__)


class ScriptedBrainModel(OfflineModel):
    """The model's part of a call, from a script. ``brain`` (made at ``start()``) says what it could not answer."""

    def __init__(
        self,
        script: BrainScript,
        voice: Voice | str = BOT_VOICE,
        output_rate: int = 16000,
        lead_s: float = 0.5,
        tool_timeout_s: float = 15.0,
    ) -> None:
        super().__init__(
            voice=voice, output_rate=output_rate, lead_s=lead_s, tool_timeout_s=tool_timeout_s, model_id=MODEL_ID
        )
        self.brain_script = script
        self.brain = ScriptedBrain(script)

    async def start(
        self, system_prompt: str | None = None, tools: Any = None, messages: Any = None, **kwargs: Any
    ) -> None:
        """Begin listening. The system prompt's ``Name: value`` lines are what the brain may quote."""
        self.brain = ScriptedBrain(self.brain_script, system_prompt)
        self._tool_names = {spec["name"] for spec in tools or []}
        self._events = asyncio.Queue()
        self._inputs = asyncio.Queue()
        self._detector = SpeechDetector(SAMPLE_RATE)
        self._speaking, self._interrupted, self._playout_end = False, False, 0.0
        self._started = True
        self._emit(BidiConnectionStartEvent(connection_id=f"scripted-{uuid.uuid4().hex[:12]}", model=self.model_id))
        self._spawn(self._converse(), "converse")

    async def _converse(self) -> None:
        """One input at a time: the brain picks the turn, then it is played in full (or until interrupted)."""
        try:
            while True:
                item = await self._inputs.get()
                if isinstance(item, _Text):
                    turn = self.brain.on_text(item.text)
                else:
                    turn = self.brain.on_caller_turn()
                    if turn is not None and turn.heard:
                        self._transcript("user", turn.heard)
                if turn is not None:
                    await self._play_turn(turn)
                elif self.brain_script.otherwise:
                    await self._say(self.brain_script.otherwise)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - surfaces from receive(), as the contract asks
            self._events.put_nowait(error)

    async def _play_turn(self, turn: BrainTurn) -> None:
        results: dict[str, str] = {}
        for step in turn.tools:
            result = await self._use_tool(ToolCall(step.name, dict(step.input)))
            if result is None:
                self._give_up(step.name)
                await self._say(turn.if_unavailable)
                return
            results[step.name] = results["result"] = result
        said_in_full = True
        if turn.say:
            said_in_full = await self._say(self.brain.render(turn.say, results))
        if not said_in_full:
            return
        for step in turn.then:
            if await self._use_tool(ToolCall(step.name, dict(step.input))) is None:
                self._give_up(step.name)
                await self._say(turn.if_unavailable)
                return

    def _give_up(self, tool: str) -> None:
        offered = tool in self._tool_names
        self.brain.missing.append(f"tool {tool!r} ({'failed' if offered else 'not offered by the agent'})")
        log.warning("scripted brain: tool %s %s; apologising", tool, "failed" if offered else "is not offered")

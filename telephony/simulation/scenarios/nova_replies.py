"""A scenario's ``brain:`` played by the local Nova Sonic emulator, over Nova's wire protocol.

``voicebot test --local-nova`` leaves the agent's own ``BedrockNovaSonicModel`` in place and points it at a
:class:`~telephony.simulation.local_nova.LocalNova` on 127.0.0.1, whose brain is this adapter: the same
:class:`~agent.scripted.brain.ScriptedBrain` decisions as the in-process scripted model, expressed as Nova
replies. So the real strands Nova client (events, tool use, barge-in, its audio path) is under test too.

The mapping: a turn's ``tools`` become ``toolUse`` events one after another (each result is awaited, as Nova
does); its ``say`` is spoken with espeak-ng once the last result is in; its ``then`` tools are issued after the
speech (the emulator cancels them if the caller talks over it). A failed or unknown tool makes the brain say
``if_unavailable``, as the in-process model does. ``{prompt:Name}`` reads the system prompt the client sent.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.offline.synthesizer import BOT_VOICE, Synthesizer, Voice
from agent.scripted.brain import BrainScript, BrainTurn, ScriptedBrain
from telephony.simulation.local_nova.replies import CallerTurn, Pcm, Reply, ToolRequest

SAMPLE_RATE = 16000
FAILURE_PREFIXES = ("Unknown tool:", "Error:")
"""How strands words the result of a tool the agent does not have, or one that raised."""


@dataclass
class _Pending:
    turn: BrainTurn
    heard: str | None
    results: dict[str, str] = field(default_factory=dict)
    index: int = 0


class NovaScriptedBrain:
    """A local Nova ``Brain`` playing a ``BrainScript``; ``brain`` says what it could not answer."""

    def __init__(self, script: BrainScript, system_prompt: Callable[[], str | None], voice: Voice = BOT_VOICE) -> None:
        self.script = script
        self._system_prompt = system_prompt
        self._synthesizer = Synthesizer(voice, SAMPLE_RATE)
        self._brain: ScriptedBrain | None = None
        self._pending: dict[str, _Pending] = {}

    @property
    def brain(self) -> ScriptedBrain:
        """Made on first use, once the client has sent its system prompt."""
        if self._brain is None:
            self._brain = ScriptedBrain(self.script, self._system_prompt())
        return self._brain

    async def on_caller_turn(self, turn: CallerTurn) -> Reply | None:
        chosen = self.brain.on_caller_turn()
        return await self._begin(chosen, chosen.heard if chosen is not None and chosen.heard else None)

    async def on_text(self, text: str) -> Reply | None:
        return await self._begin(self.brain.on_text(text), None)

    async def on_tool_result(self, tool_use_id: str, name: str, result: Any) -> Reply | None:
        pending = self._pending.pop(tool_use_id, None)
        if pending is None:
            return None  # the result of a "then" tool: nothing more to say
        text, failed = _result(result)
        if failed:
            self.brain.missing.append(f"tool {name!r} (failed or not offered by the agent)")
            return await self._speak(pending.turn.if_unavailable, pending.heard, ())
        pending.results[name] = pending.results["result"] = text
        pending.index += 1
        return self._next_tool(pending) or await self._finish(pending)

    async def _begin(self, turn: BrainTurn | None, heard: str | None) -> Reply | None:
        if turn is None:
            return await self._speak(self.script.otherwise, heard, ()) if self.script.otherwise else None
        pending = _Pending(turn, heard)
        return self._next_tool(pending) or await self._finish(pending)

    def _next_tool(self, pending: _Pending) -> Reply | None:
        if pending.index >= len(pending.turn.tools):
            return None
        step = pending.turn.tools[pending.index]
        tool_use_id = f"tooluse_{uuid.uuid4().hex[:20]}"
        self._pending[tool_use_id] = pending
        heard, pending.heard = pending.heard, None  # the transcript goes with the first reply only
        return Reply(heard=heard, tool_uses=(ToolRequest(step.name, dict(step.input), tool_use_id),))

    async def _finish(self, pending: _Pending) -> Reply:
        text = self.brain.render(pending.turn.say, pending.results) if pending.turn.say else ""
        then = tuple(ToolRequest(step.name, dict(step.input)) for step in pending.turn.then)
        return await self._speak(text, pending.heard, then)

    async def _speak(self, text: str, heard: str | None, tools: tuple[ToolRequest, ...]) -> Reply:
        audio = Pcm(await asyncio.to_thread(self._synthesizer.synthesize, text), SAMPLE_RATE) if text else None
        return Reply(text=text, audio=audio, heard=heard, tool_uses=tools)


def _result(result: Any) -> tuple[str, bool]:
    """The text of a tool result as Nova receives it, and whether it says the tool failed."""
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except ValueError:
            return result, False
    if isinstance(result, list):
        parts = [_result(item) for item in result]
        return " ".join(text for text, _ in parts).strip(), any(failed for _, failed in parts)
    if isinstance(result, dict):
        failed = str(result.get("status", "")).lower() == "error"
        if "text" in result:
            text = str(result["text"]).strip()
            # Nova is not told a result's status: like a model, judge by what strands writes for failures.
            return text, failed or text.startswith(FAILURE_PREFIXES)
        if "json" in result:
            return json.dumps(result["json"]), failed
        if isinstance(result.get("content"), list):
            text, inner = _result(result["content"])
            return text, failed or inner
    return "", False

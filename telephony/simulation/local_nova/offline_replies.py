"""``OfflineBrain``: the local Nova really listens (pocketsphinx) and really speaks (espeak-ng).

It plays the same ``Script`` as the project's offline model (``agent.offline``), through Nova's wire
protocol instead of the ``BidiModel`` interface: what it recognised is the USER transcript, a
script lookup becomes a ``toolUse`` whose result fills the reply, and an intent's ``then`` tool
(e.g. ``end_conversation``) is issued after the spoken reply, so a barge-in that cuts the reply also
cancels it. Recognition and synthesis run in worker threads, off the event loop.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from agent.offline.conversation import Conversation, Turn
from agent.offline.recognizer import SAMPLE_RATE, PhraseRecognizer
from agent.offline.script import FRONT_DESK, Script
from agent.offline.synthesizer import BOT_VOICE, Synthesizer, Voice

from .replies import CallerTurn, Pcm, Reply, ToolRequest, render_audio

__all__ = ["OfflineBrain"]


class OfflineBrain:
    """A ``Brain`` that hears and speaks a ``Script`` (default: the front desk). Shared by a server's streams."""

    def __init__(self, script: Script = FRONT_DESK, voice: Voice = BOT_VOICE) -> None:
        self.script = script
        self._conversation = Conversation(script)
        self._synthesizer = Synthesizer(voice, SAMPLE_RATE)
        self._recognizer: PhraseRecognizer | None = None
        self._lookups: dict[str, Turn] = {}

    async def on_caller_turn(self, turn: CallerTurn) -> Reply | None:
        if self._recognizer is None:
            phrases = [phrase for intent in self.script.intents for phrase in intent.phrases]
            self._recognizer = await asyncio.to_thread(PhraseRecognizer, phrases, self.script.pronunciations)
        pcm = render_audio(Pcm(turn.pcm, turn.sample_rate), "", SAMPLE_RATE)
        heard, match = await asyncio.to_thread(self._recognizer.listen, pcm, self._conversation.matcher)
        return await self._reply(self._conversation.on_match(heard, match))

    async def on_text(self, text: str) -> Reply | None:
        turn = self._conversation.on_text(text)
        return await self._reply(turn) if turn is not None else None

    async def on_tool_result(self, tool_use_id: str, name: str, result: Any) -> Reply | None:
        turn = self._lookups.pop(tool_use_id, None)
        if turn is None:
            return None  # the result of a "then" tool: nothing more to say
        text = _result_text(result)
        reply = turn.reply_with(text) if text else turn.lookup_failed
        return await self._speak(reply, heard=None, then=turn)

    async def _reply(self, turn: Turn) -> Reply:
        if turn.lookup is not None:
            tool_use_id = f"tooluse_{uuid.uuid4().hex[:20]}"
            self._lookups[tool_use_id] = turn
            request = ToolRequest(turn.lookup.name, dict(turn.lookup.input), tool_use_id)
            return Reply(heard=turn.heard, tool_uses=(request,))
        return await self._speak(turn.reply, heard=turn.heard, then=turn)

    async def _speak(self, text: str, heard: str | None, then: Turn) -> Reply:
        pcm = await asyncio.to_thread(self._synthesizer.synthesize, text)
        tools = (ToolRequest(then.then.name, dict(then.then.input)),) if then.then is not None else ()
        return Reply(text=text, audio=Pcm(pcm, SAMPLE_RATE), heard=heard, tool_uses=tools)


def _result_text(result: Any) -> str:
    """The text of a strands tool result as Nova receives it: ``{"text": ...}``, ``{"json": ...}`` or a list."""
    if isinstance(result, dict):
        if "text" in result:
            return str(result["text"]).strip()
        if "json" in result:
            return json.dumps(result["json"])
        if isinstance(result.get("content"), list):
            return " ".join(_result_text(item) for item in result["content"]).strip()
    return ""

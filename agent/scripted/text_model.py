"""``ExtractiveTextModel``: an offline stand-in for the *text* model of a sub-agent (a Strands ``Agent``).

Voice agents often hand questions to a sub-agent (a tool that runs a text ``Agent`` over a document: a
clinic's policies, a shop's returns rules). Offline, this model answers such questions the way a careful
model grounded in its prompt would, only more bluntly: with the sentences of its system prompt that share
the most content words with the question (ties keep the prompt's order), or ``not_found`` when none does.
It is deterministic, so scenario tests can assert what the caller hears; it is not a language model, and
says so in its ``model_id``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterable
from typing import Any, TypeVar

from pydantic import BaseModel
from strands.models.model import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

__all__ = ["ExtractiveTextModel"]

T = TypeVar("T", bound=BaseModel)

_WORD = re.compile(r"[a-z0-9']+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_STOP = frozenset(
    "a an and are as at be can do does for from have how i if in is it its me my of on or our so that the "
    "their there this to we what when where which who why will with you your please tell about".split()
)


def content_words(text: str) -> set[str]:
    """Lower-cased words minus the common ones, crudely stemmed (``parking`` ~ ``park``, ``slots`` ~ ``slot``)."""
    words = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP or len(word) < 2:
            continue
        if len(word) > 5 and word.endswith("ing"):
            word = word[:-3]
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.add(word)
    return words


class ExtractiveTextModel(Model):
    """Answers the last user message from its system prompt (see the module docstring)."""

    def __init__(self, max_sentences: int = 2, not_found: str = "I don't have information about that.") -> None:
        self.config: dict[str, Any] = {"model_id": "extractive-offline", "max_sentences": max_sentences}
        self.not_found = not_found

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def answer(self, question: str, document: str) -> str:
        """The best-matching sentences of ``document`` for ``question``, in document order."""
        wanted = content_words(question)
        sentences = [part.strip() for part in _SENTENCE.split(document) if part.strip()]
        scored = [(len(wanted & content_words(sentence)), index) for index, sentence in enumerate(sentences)]
        best = sorted((item for item in scored if item[0] > 0), key=lambda item: (-item[0], item[1]))
        chosen = sorted(index for _, index in best[: int(self.config["max_sentences"])])
        return " ".join(sentences[index] for index in chosen) or self.not_found

    async def stream(  # type: ignore[override]
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterable[StreamEvent]:
        text = self.answer(_last_user_text(messages), system_prompt or "")
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": text}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}

    async def structured_output(  # type: ignore[override]
        self, output_model: type[T], prompt: Messages, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        raise NotImplementedError("ExtractiveTextModel answers in text only: use a real model for structured output")
        yield {}  # pragma: no cover - makes this an async generator


def _last_user_text(messages: Messages) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return " ".join(str(block["text"]) for block in message.get("content", []) if "text" in block)
    return ""

"""One session's conversation as the server keeps it: the items, what each assistant item said, and truncations.

Response requests answer what the client added since the last response (its *triggers*): a user text message
(the greeting, a keypress note) or tool outputs. Items sent without a response request (strands' history
replay after a restart) are context only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .protocol import ProtocolError

__all__ = ["Conversation", "Trigger"]


@dataclass(frozen=True)
class Trigger:
    """An item a response request answers: user text, or a tool output (``call_id`` set)."""

    text: str = ""
    call_id: str | None = None
    name: str = ""
    output: Any = None


@dataclass
class Conversation:
    """The items in order, by id; the function calls that await an output; audio generated per item."""

    items: list[dict[str, Any]] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)
    """call_id -> function name, for every function call in the conversation."""
    audio_ms: dict[str, float] = field(default_factory=dict)
    triggers: list[Trigger] = field(default_factory=list)
    transcripts: dict[str, str] = field(default_factory=dict)

    def ids(self) -> set[str]:
        return {item["id"] for item in self.items if "id" in item}

    def last_id(self) -> str | None:
        return self.items[-1].get("id") if self.items else None

    def add(self, item: dict[str, Any]) -> None:
        self.items.append(item)
        if item.get("type") == "function_call":
            self.calls[item["call_id"]] = item["name"]

    def client_item(self, item: dict[str, Any]) -> None:
        """An item the client created (already checked): kept, and a trigger if a response may answer it."""
        self.add(item)
        if item["type"] == "function_call_output":
            self.triggers.append(
                Trigger(call_id=item["call_id"], name=self.calls[item["call_id"]], output=item["output"])
            )
        elif item["type"] == "message" and item["role"] == "user":
            text = " ".join(part.get("text", "") for part in item["content"] if part["type"] == "input_text")
            self.triggers.append(Trigger(text=text))

    def take_triggers(self) -> list[Trigger]:
        triggers, self.triggers = self.triggers, []
        return triggers

    def audio_generated(self, item_id: str, ms: float) -> None:
        self.audio_ms[item_id] = self.audio_ms.get(item_id, 0.0) + ms

    def transcribed(self, item_id: str, text: str) -> None:
        self.transcripts[item_id] = text

    def truncate(self, item_id: Any, content_index: Any, audio_end_ms: Any) -> None:
        """A ``conversation.item.truncate``: only an assistant audio item, only within the audio it has."""
        item = next((item for item in self.items if item.get("id") == item_id), None)
        if item is None:
            raise ProtocolError(f"item {item_id} does not exist", "item_id")
        if item.get("role") != "assistant" or item_id not in self.audio_ms:
            raise ProtocolError(f"item {item_id} is not an assistant audio item", "item_id")
        if content_index != 0:
            raise ProtocolError(f"item {item_id} has no audio at content_index {content_index}", "content_index")
        if not isinstance(audio_end_ms, int) or audio_end_ms < 0:
            raise ProtocolError("audio_end_ms must be a non-negative integer", "audio_end_ms")
        if audio_end_ms > self.audio_ms[item_id] + 1:
            raise ProtocolError(
                f"audio_end_ms {audio_end_ms} is past the {self.audio_ms[item_id]:.0f} ms of audio in {item_id}",
                "audio_end_ms",
            )
        self.audio_ms[item_id] = float(audio_end_ms)

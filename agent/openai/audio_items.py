"""Which assistant item an answer's audio belongs to, so the model can be told how much of it was heard.

strands names each answer's audio with a uuid of its own per ``response_id``; OpenAI's
``conversation.item.truncate`` wants the assistant item's id, the content part's index and a time no later
than the audio it generated. :class:`AudioItems` learns all three from the ``response.output_audio.delta``
events as they pass (each carries ``response_id``, ``item_id`` and ``content_index``) and keeps the most
recent answers only: an answer older than that is long heard.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["AudioItem", "AudioItems"]

KEEP = 16
"""Answers remembered per connection."""
BYTES_PER_MS = 48
"""PCM16 mono at 24 kHz."""


@dataclass
class AudioItem:
    """One answer's audio: the assistant item and content part it is, and how much of it was generated."""

    item_id: str
    content_index: int
    audio_ms: float = 0.0


class AudioItems:
    """strands' audio ``content_id`` -> the OpenAI item it is (one connection's, most recent :data:`KEEP`)."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, AudioItem] = OrderedDict()

    def audio(self, content_id: str, item_id: str, content_index: int, audio_bytes: int) -> None:
        """A chunk of ``content_id``'s audio, generated as ``item_id``'s content part ``content_index``."""
        item = self._items.get(content_id)
        if item is None or item.item_id != item_id:
            item = self._items[content_id] = AudioItem(item_id, content_index)
            while len(self._items) > KEEP:
                self._items.popitem(last=False)
        item.audio_ms += audio_bytes / BYTES_PER_MS

    def find(self, content_id: str) -> AudioItem | None:
        return self._items.get(content_id)

    def clear(self) -> None:
        """A new connection: the old items are not in its conversation."""
        self._items.clear()

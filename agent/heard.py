"""What a model may want to hear back after a barge-in: how much of one of its answers the caller heard.

Models generate speech faster than it plays, so when the caller talks over the bot most of the answer may
still sit in the carrier's playback buffer, unheard. The bridge clears that buffer; a model that keeps the
answer in its conversation (OpenAI Realtime keeps the assistant item) should then cut it to what was heard, or
it will believe the caller heard words they never did. A model that wants this implements ``HeardAudio``; the
bridge calls it once per cut answer. Models without it (Nova Sonic, Gemini Live) are simply not told.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class HeardAudio(Protocol):
    """A model that trims an answer to what the caller heard of it."""

    async def audio_heard(self, content_id: str, heard_ms: int) -> None:
        """The caller heard the first ``heard_ms`` of the audio ``content_id`` (as in the audio events); the
        rest was cleared unheard. Called on the event loop; must not block and must not raise for an answer
        the model no longer knows."""


__all__ = ["HeardAudio"]

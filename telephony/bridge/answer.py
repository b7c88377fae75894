"""What the model is saying now, and what of it was cut: one owner, fed once per agent event.

The session plays the model's audio, continuity decides what a connection swap cut, and the ending waits for
the answer to be over before it hangs up or hands off. All three read this one object, fed by the session
once per event from ``agent.receive()``, so a reply cut for any reason (the caller talking over it, a hand-off
that cuts the bot off, a swap of the model's connection) is over for every one of them at the same moment.
"""

from __future__ import annotations

from typing import Any

from strands.bidi.types import (
    BidiAudioDeltaEvent,
    BidiAudioStopEvent,
    BidiBargeInEvent,
    BidiResponseStartEvent,
    BidiResponseStopEvent,
    BidiToolUseBlocksEvent,
    BidiTranscriptBlockEvent,
    BidiTranscriptDeltaEvent,
)


class AnswerState:
    """The model's answer in progress. Never awaits; mutated only by :meth:`observe`, :meth:`cut` and :meth:`close`."""

    def __init__(self) -> None:
        self.responding = False
        """A response is open: the model may say more (a goodbye or hand-off waits for it)."""
        self.audio: str | None = None
        """Content id of the bot audio streaming now: from its first chunk to its stop, a cut, or a swap."""
        self.audio_s = 0.0
        """Seconds of ``audio`` that have arrived (all of it plays unless it is cut)."""
        self.last_audio: str | None = None
        """Content id of the latest bot audio, kept after it stopped (the utterance a cut drops the rest of)."""
        self.new_utterance = False
        """The latest audio chunk began a new bot utterance."""
        self.spoke = False
        """The open response has produced audio."""
        self.used_tool = False
        """The open response called a tool (it has said what it had to say)."""
        self.tools_pending: set[str] = set()
        """Tool uses whose results have not come back: a result makes the model speak again."""
        self._cut: set[str] = set()
        self._deltas: list[str] = []
        self._block: str | None = None

    @property
    def text(self) -> str:
        """What the open (or last) response meant to say, as far as its transcript has come."""
        return (self._block if self._block is not None else "".join(self._deltas)).strip()

    def is_cut(self, content_id: str) -> bool:
        """The caller must hear no more of this utterance."""
        return content_id in self._cut

    def observe(self, event: Any) -> None:
        """One event from ``agent.receive()``, in order. Call once per event, before anything reads the state."""
        if isinstance(event, BidiAudioDeltaEvent):
            self._on_audio(event)
        elif isinstance(event, BidiAudioStopEvent):
            if event.content_id == self.audio:
                self.audio = None
        elif isinstance(event, BidiBargeInEvent):
            self.cut()  # the model stopped answering: the caller spoke over it
        elif isinstance(event, BidiResponseStartEvent):
            self.responding, self.spoke, self.used_tool = True, False, False
            self._deltas, self._block = [], None
        elif isinstance(event, BidiResponseStopEvent):
            self.responding = False
        elif isinstance(event, BidiTranscriptDeltaEvent) and event.role == "assistant":
            self._deltas.append(event.delta)
        elif isinstance(event, BidiTranscriptBlockEvent) and event.role == "assistant":
            self._block = event.transcript
        elif isinstance(event, BidiToolUseBlocksEvent):
            # A response that hands over to a tool has said what it had to say; strands keeps Nova's open until
            # the next caller turn, which would hold a goodbye's hang-up to its cap.
            self.responding, self.used_tool = False, True
            self.tools_pending.update(use["toolUseId"] for use in event.tool_uses)
        elif isinstance(event, dict) and event.get("type") == "tool_result":
            self.tools_pending.discard(str((event.get("tool_result") or {}).get("toolUseId")))

    def cut(self) -> str | None:
        """The reply is cut (barge-in, a hand-off cutting the bot off): none of the rest of it is played, and
        the answer is over for whoever waits on it. Returns the utterance cut, if any."""
        cut = self.last_audio
        if cut is not None:
            self._cut.add(cut)
        self.responding, self.audio = False, None
        return cut

    def close(self) -> str | None:
        """The model's connection went mid-answer: what arrived plays out, the rest never comes.

        Returns the utterance that was streaming (it needs its end mark), if any."""
        closed = self.audio
        self.responding, self.audio = False, None
        return closed

    def _on_audio(self, event: BidiAudioDeltaEvent) -> None:
        if event.content_id in self._cut:
            return  # the rest of an utterance that was cut: never played
        self.new_utterance = event.content_id != self.last_audio
        self.last_audio = event.content_id
        self.spoke = True
        if event.content_id != self.audio:
            self.audio, self.audio_s = event.content_id, 0.0
        rate = event.sample_rate * event.channels
        self.audio_s += decoded_length(event.audio) / 2 / rate if rate else 0.0


def decoded_length(base64_text: str) -> int:
    """Bytes that base64 text decodes to, without decoding it (the session decodes each chunk once already)."""
    return len(base64_text) * 3 // 4 - base64_text.count("=", -2)


__all__ = ["AnswerState", "decoded_length"]

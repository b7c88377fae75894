"""An answer the model had not finished when its connection was replaced, what of it the caller heard, and the
caller's question it answered while that question was in no history yet."""

from __future__ import annotations

import json
from dataclasses import dataclass

CHARS_PER_SECOND = 15.0
"""Speaking rate used to tell how far into an answer's text the caller heard (about 150 words a minute)."""


@dataclass(frozen=True)
class CutAnswer:
    """An answer the model had not finished when its connection was replaced."""

    reason: str
    """Why the connection was replaced: ``timeout`` (reactive) or ``scheduled`` (proactive)."""
    text: str
    """What the model meant to say, as far as its transcript had come."""
    heard_s: float
    """Seconds of it the caller hears: all the audio that had arrived (it plays out; nothing clears it)."""
    heard_text: str
    """The words those seconds cover, as far as the text tells (estimated at ``CHARS_PER_SECOND``)."""
    tool_pending: bool
    """A tool was still running: its result, when it comes, makes the model speak again."""

    def note_detail(self) -> str:
        return json.dumps(
            {"reason": self.reason, "heard_s": round(self.heard_s, 2), "heard_text": self.heard_text, "text": self.text}
        )

    def message_for_agent(self) -> str:
        """What the new connection is told, so it can pick up where the caller stopped hearing."""
        prefix = (
            "Note for you, not from the caller and not to be read out: your connection was replaced while you were "
            "answering."
        )
        if self.heard_s <= 0.05 or not self.heard_text:
            return f"{prefix} The caller heard none of that answer. Give it now, briefly."
        if self.heard_text == self.text:
            return (
                f'{prefix} The caller heard your answer up to: "{self.heard_text}" but it had not finished. '
                "Finish it in a few words, without repeating it."
            )
        return (
            f"{prefix} The caller stopped hearing your answer after about {self.heard_s:.0f} seconds, at: "
            f'"{self.heard_text}". Continue from there, without starting over.'
        )


class OpenQuestion:
    """Caller turns the model took that have reached neither the history nor a finished answer yet.

    strands puts a user transcript in the conversation history when it ends; a model may end it after its answer
    (OpenAI transcribes beside the model), and the connection may go before it does, or before it answers. Then the
    turn is in no history the next connection is given: it must hear the turn again (``ask_again``), rather than be
    told to carry on with an answer to a question it never heard. Transcripts end in the order of the turns; a
    finished answer settles the turns taken before it began (a model that never transcribes is not asked again).
    """

    def __init__(self) -> None:
        self._turns: dict[int, bytes] = {}
        """Each open turn's audio, oldest first, by the keeper's utterance key (a turn may be taken in parts)."""
        self._answering = 0
        """How many of the oldest open turns the answer under way answers."""
        self.ask_again = b""
        """The open turns when a swap began: for the new connection, first."""

    @property
    def audio(self) -> bytes:
        return b"".join(self._turns.values())

    def took(self, pieces: list[tuple[int, bytes]]) -> None:
        """The model took (parts of) caller turns: an answer or a transcript began after them."""
        for key, audio in pieces:
            self._turns[key] = self._turns.get(key, b"") + audio

    def transcript_ended(self) -> None:
        """A user transcript ended: the oldest open turn is in the history."""
        if self._turns:
            del self._turns[next(iter(self._turns))]
            self._answering = max(0, self._answering - 1)

    def answer_started(self) -> None:
        self._answering = len(self._turns)

    def answer_done(self) -> None:
        """The answer finished (or the caller cut it short): the turns it answered are settled."""
        for key in list(self._turns)[: self._answering]:
            del self._turns[key]
        self._answering = 0

    def swap_began(self) -> None:
        self.ask_again = self.audio

    def swapped(self) -> None:
        """The new connection has what it needs; the old one's late transcripts never come."""
        self._turns.clear()
        self._answering = 0
        self.ask_again = b""


def words_heard(text: str, seconds: float, chars_per_second: float = CHARS_PER_SECOND) -> str:
    """The start of ``text`` that ``seconds`` of speech covers, cut at a word boundary."""
    text = text.strip()
    budget = int(seconds * chars_per_second)
    if budget >= len(text):
        return text
    cut = text.rfind(" ", 0, budget + 1)
    if cut <= 0:  # inside the first word: count it heard once most of it was
        first = text.split(" ", 1)[0]
        return first.rstrip(",;:") if budget >= len(first) / 2 else ""
    return text[:cut].rstrip(" ,;:")


__all__ = ["CutAnswer", "OpenQuestion", "words_heard"]

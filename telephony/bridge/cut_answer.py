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
    """The caller's turn being answered (or about to be), while no complete transcript of it has come.

    strands puts a user transcript in the conversation history when it ends; a model may end it after its answer
    (OpenAI transcribes beside the model), and the connection may go before it does. Then the question is in no
    history the next connection is given: if its answer was cut, the new connection must hear the question
    again (``ask_again``) rather than be told to carry on with an answer to a question it never heard.

    A turn may be taken in parts (a transcript starting, then the answer): everything taken since the last answer
    began is the question of the next.
    """

    def __init__(self) -> None:
        self.audio = b""
        """The question's audio (empty: none open)."""
        self.ask_again = b""
        """The question of an answer a swap cut: for the new connection, first."""
        self._answered = True
        """An answer began since the last take: the next take begins a new question."""
        self._transcribed = False
        """The question's transcript ended before its answer began."""

    def took(self, taken: bytes) -> None:
        """The model took (part of) a caller turn: an answer or a transcript began after it."""
        if self._answered:
            self.audio, self._answered, self._transcribed = b"", False, False
        if not self._transcribed:
            self.audio += taken

    def answer_started(self) -> None:
        """An answer began (after its own take): to the question, unless that was transcribed already."""
        if self._transcribed:
            self.audio = b""
        self._answered, self._transcribed = True, False

    def transcript_ended(self) -> None:
        """A user transcript ended: the question is in the history (before its answer, or after)."""
        self.audio = b""
        self._transcribed = not self._answered

    def answer_cut(self) -> None:
        self.ask_again = self.audio

    def swapped(self) -> None:
        """The new connection has what it needs; the old one's late transcript never comes."""
        self.audio = self.ask_again = b""
        self._answered, self._transcribed = True, False


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

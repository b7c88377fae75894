"""From what the recogniser heard (or the caller typed) to the nearest known phrase, or to nothing.

Recognition at telephone bandwidth is noisy: words drop out, get swapped for similar ones, or the
grammar decoder stops half-way through a phrase. So phrases are compared word by word with an edit
distance that forgives words before and after the phrase (``um, what time is it please``), charges half
for near-misses (``thanks``/``thank``), and a phrase counts only above a similarity threshold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache

from .lexicon import words_of

__all__ = ["DEFAULT_THRESHOLD", "Heard", "Match", "PhraseMatcher"]

DEFAULT_THRESHOLD = 0.6
"""Below this similarity a phrase is not taken: three words of four right passes, two of four does not."""
EXACT_ENOUGH = 0.9
"""A free transcription this close to a phrase stands on its own (the grammar pass missed it)."""
WHOLE_AGREEMENT, PARTIAL_AGREEMENT = 0.25, 0.5
"""Share of the grammar's phrase (whole, or cut short) the free transcription must contain to confirm it."""
_EXTRA_WORD_PENALTY = 0.1


@dataclass(frozen=True)
class Heard:
    """One utterance as two recognisers heard it.

    ``constrained`` comes from a grammar of the known phrases: accurate on them, but it forces anything
    else into some phrase. ``free`` comes from a loop over the same words without phrase structure:
    noisier, but it has no reason to produce a whole phrase that was not said. Together they tell a
    phrase from out-of-script speech.
    """

    constrained: str
    free: str


@dataclass(frozen=True)
class Match:
    intent: str
    phrase: str
    score: float
    """1.0: exactly the phrase; lower as words are missing, wrong or added."""


class PhraseMatcher:
    """Nearest phrase of a set of intents, each with a few phrasings."""

    def __init__(self, phrases: Mapping[str, Sequence[str]], threshold: float = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold
        self._phrases = [
            (intent, phrase, tuple(words_of(phrase))) for intent, texts in phrases.items() for phrase in texts
        ]
        if not self._phrases:
            raise ValueError("a phrase matcher needs at least one phrase")

    def nearest(self, text: str) -> Match | None:
        """The most similar phrase whatever its score; None for empty text."""
        heard = tuple(words_of(text))
        if not heard:
            return None
        best: Match | None = None
        for intent, phrase, words in self._phrases:
            extra = max(0, len(heard) - len(words))
            score = coverage(heard, words) - _EXTRA_WORD_PENALTY * extra
            if best is None or score > best.score:
                best = Match(intent, phrase, round(score, 3))
        return best

    def match(self, text: str) -> Match | None:
        """The nearest phrase if it is similar enough, else None (out of script)."""
        best = self.nearest(text)
        return best if best is not None and best.score >= self.threshold else None

    def match_heard(self, heard: Heard) -> Match | None:
        """The phrase the two recognisers support together, or None (out of script).

        A whole grammar phrase stands unless the free transcription is nearly a different phrase. A
        grammar phrase cut short (the decoder often drops a final short word) needs the free
        transcription to mean the same intent or to contain a quarter of the phrase. Failing both, a
        free transcription that is nearly a phrase by itself is taken.
        """
        constrained = self.match(heard.constrained)
        free = self.nearest(heard.free)
        free_is_phrase = free is not None and free.score >= EXACT_ENOUGH
        if constrained is not None:
            same_intent = free is not None and free.intent == constrained.intent
            support = coverage(tuple(words_of(heard.free)), tuple(words_of(constrained.phrase)))
            needed = WHOLE_AGREEMENT if constrained.score >= 1.0 else PARTIAL_AGREEMENT
            if same_intent or support >= needed:
                return constrained
        return free if free_is_phrase else None


def coverage(heard: Sequence[str], phrase: Sequence[str]) -> float:
    """How much of ``phrase`` appears, in order, somewhere in ``heard`` (1.0: all of it).

    A semi-global edit distance: the phrase must be aligned whole, while heard words before and after
    it cost nothing.
    """
    if not phrase:
        return 0.0
    previous = [float(j) for j in range(len(phrase) + 1)]
    best = previous[-1]
    for word in heard:
        current = [0.0]
        for j, target in enumerate(phrase, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + _substitution_cost(word, target)))
        best = min(best, current[-1])
        previous = current
    return max(0.0, 1.0 - best / len(phrase))


@cache
def _substitution_cost(heard: str, expected: str) -> float:
    """0 for the same word, 0.5 for a near-miss (``thanks``/``thank``, ``what's``/``what``), else 1."""
    if heard == expected:
        return 0.0
    shorter, longer = sorted((heard, expected), key=len)
    if len(shorter) >= 3 and longer.startswith(shorter):
        return 0.5
    return 0.5 if SequenceMatcher(None, heard, expected).ratio() >= 0.8 else 1.0

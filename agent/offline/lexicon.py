"""Pronunciations for a small vocabulary, looked up in the en-us dictionary shipped in the pocketsphinx wheel.

The dictionary has 135k entries (3 MB); loading it all would cost most of the model's start-up time, and a
phrase recogniser needs only a few dozen words. The file is sorted by word, so each word is found by a
binary search over byte offsets: about twenty short reads per word, well under a millisecond in all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import BinaryIO

from pocketsphinx import get_model_path

__all__ = ["DICTIONARY", "LexiconError", "pronunciations", "words_of"]

DICTIONARY = Path(get_model_path("en-us/cmudict-en-us.dict"))
"""CMUdict as shipped with pocketsphinx: ``word PH O N E S`` lines, variants as ``word(2)``."""

_WORD = re.compile(r"[a-z0-9']+(?:-[a-z0-9']+)*")


class LexiconError(LookupError):
    """A phrase uses a word the dictionary does not have."""


def words_of(text: str) -> list[str]:
    """The dictionary words in ``text``: lower case, punctuation other than apostrophes dropped."""
    return _WORD.findall(text.lower().replace("’", "'"))


def pronunciations(
    words: Iterable[str], extra: Mapping[str, str] | None = None, dictionary: Path = DICTIONARY
) -> dict[str, list[str]]:
    """Every pronunciation of each word (``extra`` first: ``{"voicebot": "V OY S B AA T"}``).

    Raises LexiconError naming the words that have none, so a script with a typo or a made-up name
    fails at start-up with the fix in the message.
    """
    extra = extra or {}
    found: dict[str, list[str]] = {}
    missing: list[str] = []
    with dictionary.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        for word in sorted(set(words)):
            phones = [extra[word]] if word in extra else _lookup(file, size, word.encode())
            if phones:
                found[word] = phones
            else:
                missing.append(word)
    if missing:
        raise LexiconError(
            f"no pronunciation for {', '.join(missing)}: rephrase, or give one in the script's pronunciations "
            "(CMUdict phones, e.g. {'voicebot': 'V OY S B AA T'})"
        )
    return found


def _key(line: bytes) -> bytes:
    """The word of a dictionary line, without its ``(2)`` variant suffix (the order the file is sorted in)."""
    return line.split(b" ", 1)[0].split(b"(", 1)[0]


def _line_after(file: BinaryIO, offset: int) -> bytes:
    """The first whole line starting after ``offset`` (or at 0)."""
    file.seek(offset)
    if offset:
        file.readline()
    return file.readline()


def _lookup(file: BinaryIO, size: int, word: bytes) -> list[str]:
    """Binary search for the first line of ``word``, then read its variants."""
    low, high = 0, size
    while low < high:
        middle = (low + high) // 2
        line = _line_after(file, middle)
        if line and _key(line) < word:
            low = middle + 1
        else:
            high = middle
    phones: list[str] = []
    line = _line_after(file, low)
    while line and _key(line) == word:
        phones.append(line.split(b" ", 1)[1].decode().strip())
        line = file.readline()
    return phones

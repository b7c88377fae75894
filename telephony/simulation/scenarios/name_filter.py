"""``voicebot test -k EXPRESSION``: which scenarios to run, by name.

As pytest's ``-k``: words are matched case-insensitively as parts of a scenario's ``name:`` or of its file's name
(``booking`` matches ``booking succeeds`` and ``booking.yaml``), and combine with ``and``, ``or``, ``not`` and
parentheses. Words side by side with no operator between them are one phrase (``-k "caller barges"``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NoReturn

__all__ = ["NameFilter", "NameFilterError"]

_TOKENS = re.compile(r"\(|\)|[^\s()]+")
_OPERATORS = ("and", "or", "not")

Match = Callable[[str], bool]
"""Given the names to search (lower case, joined by newlines), whether the expression holds."""


class NameFilterError(ValueError):
    """The expression cannot be read; the message says where and what is wrong."""


class NameFilter:
    """A compiled ``-k`` expression."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self._tokens = _TOKENS.findall(expression)
        self._at = 0
        if not self._tokens:
            raise NameFilterError("-k: the expression is empty; give part of a scenario's name")
        self._match = self._or()
        if self._at < len(self._tokens):
            self._error(f"unexpected {self._tokens[self._at]!r}")

    def matches(self, *names: str) -> bool:
        """True if the expression holds for a scenario known by ``names`` (its name, its file's name)."""
        return self._match("\n".join(name.lower() for name in names))

    # --- a recursive descent over or > and > not > (…) | phrase ---------------------------------------

    def _or(self) -> Match:
        terms = [self._and()]
        while self._take("or"):
            terms.append(self._and())
        return terms[0] if len(terms) == 1 else lambda text: any(term(text) for term in terms)

    def _and(self) -> Match:
        terms = [self._not()]
        while self._take("and"):
            terms.append(self._not())
        return terms[0] if len(terms) == 1 else lambda text: all(term(text) for term in terms)

    def _not(self) -> Match:
        if self._take("not"):
            inner = self._not()
            return lambda text: not inner(text)
        return self._atom()

    def _atom(self) -> Match:
        if self._take("("):
            inner = self._or()
            if not self._take(")"):
                self._error("a '(' is never closed")
            return inner
        words = []
        while self._at < len(self._tokens) and self._tokens[self._at].lower() not in (*_OPERATORS, "(", ")"):
            words.append(self._tokens[self._at].lower())
            self._at += 1
        if not words:
            found = self._tokens[self._at] if self._at < len(self._tokens) else "the end"
            self._error(f"expected part of a name, found {found!r}")
        phrase = " ".join(words)
        return lambda text: any(phrase in name for name in text.split("\n"))

    def _take(self, token: str) -> bool:
        if self._at < len(self._tokens) and self._tokens[self._at].lower() == token:
            self._at += 1
            return True
        return False

    def _error(self, problem: str) -> NoReturn:
        raise NameFilterError(f"-k {self.expression!r}: {problem} (write words, and/or/not, parentheses)")

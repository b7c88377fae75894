"""How a tool call's arguments match the ones a scenario expects (``expect.tools[].input``).

Real models word arguments their own way, so matching is forgiving where that is safe and exact where asked:

- a mapping matches when each expected key is there and matches (other keys may be there too);
- text matches text ignoring case and surrounding spaces; a number matches the same number, or text of it;
- text starting ``re:`` is a regular expression searched in the argument (as text, ignoring case), for any
  argument: ``time: 're:^9[:.]?30'``;
- a list matches as a set: every expected item matches some item of the call's list and every item of it
  matches some expected one, in any order; with ``ordered_lists: true`` item by item, in order.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["PATTERN_PREFIX", "arguments_match", "patterns_in"]

PATTERN_PREFIX = "re:"


def arguments_match(actual: Any, expected: Any, ordered_lists: bool = False) -> bool:
    """Whether the call's ``actual`` arguments match the ``expected`` ones (see the module docstring)."""
    if isinstance(expected, str) and expected.startswith(PATTERN_PREFIX):
        return re.search(expected[len(PATTERN_PREFIX) :], _text(actual), re.IGNORECASE) is not None
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and arguments_match(actual[key], value, ordered_lists) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return isinstance(actual, list) and _lists_match(actual, expected, ordered_lists)
    if _is_number(expected) and _is_number(actual):
        return bool(float(expected) == float(actual))
    if isinstance(expected, (str, int, float)) and isinstance(actual, (str, int, float)):
        return _text(expected).strip().lower() == _text(actual).strip().lower()
    return bool(actual == expected)


def _lists_match(actual: list[Any], expected: list[Any], ordered: bool) -> bool:
    if ordered:
        return len(actual) == len(expected) and all(
            arguments_match(item, wanted, ordered) for item, wanted in zip(actual, expected, strict=True)
        )
    return all(any(arguments_match(item, wanted, ordered) for item in actual) for wanted in expected) and all(
        any(arguments_match(item, wanted, ordered) for wanted in expected) for item in actual
    )


def patterns_in(expected: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(where, pattern)`` for every ``re:`` value in ``expected`` (to check them before any call)."""
    if isinstance(expected, str) and expected.startswith(PATTERN_PREFIX):
        yield path or "value", expected[len(PATTERN_PREFIX) :]
    elif isinstance(expected, Mapping):
        for key, value in expected.items():
            yield from patterns_in(value, f"{path}.{key}" if path else str(key))
    elif isinstance(expected, list):
        for index, value in enumerate(expected):
            yield from patterns_in(value, f"{path}[{index}]")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return value if isinstance(value, str) else str(value)

"""Reading a scenario file's fields: typed getters whose every error names the file, the line and the field.

A reader collects mistakes instead of stopping at the first: a getter raises :class:`ScenarioError` for the
value it cannot read, :meth:`FieldReader.attempt` notes it and lets the parser go on with the next field or
list item, and unknown fields are noted without stopping at all. So one run shows every mistake in a file.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from telephony.simulation.scenarios.located_yaml import line_of
from telephony.simulation.scenarios.scenario import ScenarioError, Where

_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
T = TypeVar("T")


class FieldReader:
    """Typed getters over a located YAML document (``located_yaml``), for one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = str(path)
        self.problems: list[ScenarioError] = []
        """Every mistake found so far, each naming its file, line and field."""

    def fail(self, container: Any, key: str | int | None, name: str, problem: str) -> ScenarioError:
        line = line_of(container, key)
        return ScenarioError(f"{self.file}:{line}: {name}: {problem}", line=line)

    def attempt(self, read: Callable[[], T]) -> T | None:
        """``read()``, or None with its mistake noted (so the parser goes on to the next field)."""
        try:
            return read()
        except ScenarioError as error:
            self.problems.append(error)
            return None

    def each(self, items: list[Any], read: Callable[[Any, int], T]) -> list[T]:
        """``read(item, index)`` for every item that can be read; the others' mistakes are noted."""
        results = []
        for index, item in enumerate(items):
            result = self.attempt(functools.partial(read, item, index))
            if result is not None:
                results.append(result)
        return results

    def where(self, container: Any, key: str | int | None, name: str) -> Where:
        return Where(self.file, line_of(container, key), name)

    # --- typed getters ----------------------------------------------------------------------------

    def mapping(
        self, value: Any, container: Any, key: str | int | None, name: str, allowed: list[str]
    ) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(container, key, name, f"expected a mapping (key: value lines), got {kind_of(value)}")
        for unknown in value:
            if unknown not in allowed:
                self.problems.append(
                    self.fail(
                        value, unknown, f"{name}.{unknown}", f"unknown field; expected one of {', '.join(allowed)}"
                    )
                )
        return value

    def sequence(self, value: Any, container: Any, key: str | int | None, name: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(container, key, name, f"expected a list (lines starting with '- '), got {kind_of(value)}")
        return value

    def text(self, container: Any, key: str, name: str, default: str | None = None) -> str:
        value = container.get(key, default)
        if value is None:
            raise self.fail(container, None, f"{name}.{key}", "is required")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.fail(container, key, f"{name}.{key}", f"expected text, got {kind_of(value)}")
        return str(value)

    def number(
        self, container: Any, key: str, name: str, default: float, low: float = 0.0, integer: bool = False
    ) -> float:
        value = container.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
            kind = "a whole number" if integer else "a number"
            raise self.fail(container, key, f"{name}.{key}", f"expected {kind}, got {kind_of(value)}")
        if value < low:
            raise self.fail(container, key, f"{name}.{key}", f"must be at least {low:g}, got {value}")
        return float(value)

    def flag(self, container: Any, key: str, name: str, default: bool) -> bool:
        value = container.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(container, key, f"{name}.{key}", f"expected true or false, got {kind_of(value)}")
        return value

    def spec(self, container: Any, key: str, name: str) -> str:
        value = self.text(container, key, name)
        if not _SPEC.fullmatch(value):
            raise self.fail(container, key, f"{name}.{key}", f"expected 'package.module:function', got {value!r}")
        return value

    def regex(self, container: Any, key: str, name: str) -> re.Pattern[str]:
        text = self.text(container, key, name)
        try:
            return re.compile(text, re.IGNORECASE)
        except re.error as error:
            raise self.fail(container, key, f"{name}.{key}", f"not a regular expression: {error}") from None


def kind_of(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a yes/no)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"

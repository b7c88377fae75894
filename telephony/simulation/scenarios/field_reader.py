"""Reading a scenario file's fields: typed getters whose every error names the file, the line and the field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from telephony.simulation.scenarios.located_yaml import line_of
from telephony.simulation.scenarios.scenario import ScenarioError, Where

_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


class FieldReader:
    """Typed getters over a located YAML document (``located_yaml``), for one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = str(path)

    def fail(self, container: Any, key: str | int | None, name: str, problem: str) -> ScenarioError:
        return ScenarioError(f"{self.file}:{line_of(container, key)}: {name}: {problem}")

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
                raise self.fail(
                    value, unknown, f"{name}.{unknown}", f"unknown field; expected one of {', '.join(allowed)}"
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

    # --- the document -----------------------------------------------------------------------------

    def regex(self, container: Any, key: str, name: str) -> re.Pattern[str]:
        text = self.text(container, key, name)
        try:
            return re.compile(text, re.IGNORECASE)
        except re.error as error:
            raise self.fail(container, key, f"{name}.{key}", f"not a regular expression: {error}") from None

    # --- the model's part -------------------------------------------------------------------------


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

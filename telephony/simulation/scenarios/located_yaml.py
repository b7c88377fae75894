"""YAML read with line numbers kept, so a mistake in a scenario file is reported as ``file:line: field: what``.

PyYAML's safe loader drops where values came from; its composer keeps it. :func:`load` builds plain
dicts, lists and scalars from the composed nodes, as :class:`LocatedDict` / :class:`LocatedList` that
remember the line of each entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

__all__ = ["LocatedDict", "LocatedList", "YamlError", "line_of", "load"]


class YamlError(ValueError):
    """The file is not valid YAML (the message has the file and line)."""


class LocatedDict(dict[str, Any]):
    """A mapping with ``line`` (of the mapping) and ``lines[key]`` (of each value)."""

    line: int = 0
    lines: dict[str, int]


class LocatedList(list[Any]):
    """A sequence with ``line`` and ``lines[index]``."""

    line: int = 0
    lines: list[int]


def line_of(container: Any, key: str | int | None = None) -> int:
    """The 1-based line of ``container[key]`` (or of the container itself); 0 when unknown."""
    if key is not None:
        lines = getattr(container, "lines", None)
        try:
            return int(lines[key]) if lines is not None else 0  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            pass
    return int(getattr(container, "line", 0))


def load(path: Path) -> Any:
    """The document in ``path`` (one document; an empty file is ``None``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise YamlError(f"{path}: cannot read it ({error.strerror or error})") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise YamlError(f"{where}: not valid YAML: {error.problem}") from None
    except yaml.YAMLError as error:
        raise YamlError(f"{path}: not valid YAML: {error}") from None
    return None if node is None else _build(node, path)


_SCALARS = yaml.SafeLoader("")
_BOOL = "tag:yaml.org,2002:bool"


def _build(node: yaml.Node, path: Path) -> Any:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        mapping = LocatedDict()
        mapping.line, mapping.lines = line, {}
        for key_node, value_node in node.value:
            # Keys are words as written: YAML 1.1 would read ``on:`` or ``no:`` as booleans.
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else _build(key_node, path)
            if not isinstance(key, str):
                raise YamlError(f"{path}:{key_node.start_mark.line + 1}: keys must be words, not {key!r}")
            if key in mapping:
                raise YamlError(f"{path}:{key_node.start_mark.line + 1}: {key!r} is given twice")
            mapping[key] = _build(value_node, path)
            mapping.lines[key] = key_node.start_mark.line + 1
        return mapping
    if isinstance(node, yaml.SequenceNode):
        sequence = LocatedList(_build(item, path) for item in node.value)
        sequence.line, sequence.lines = line, [item.start_mark.line + 1 for item in node.value]
        return sequence
    if node.tag == _BOOL and node.value.lower() not in ("true", "false"):
        return node.value  # yes/no/on/off are text here; only true and false are yes/no values
    try:
        return _SCALARS.construct_object(node, deep=True)
    except yaml.YAMLError as error:
        raise YamlError(f"{path}:{line}: {error}") from None

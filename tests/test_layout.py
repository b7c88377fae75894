"""The package layout is the architecture: each layer imports only layers below it, and no module cycles.

Every import counts, including ones inside functions and under ``TYPE_CHECKING``: a lazy import from a
higher layer is still a dependency on it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAYERS: list[tuple[str, ...]] = [
    (
        "telephony.call_info",
        "telephony.call_outcome",
        "telephony.codec",
        "telephony.config",
        "telephony.controls",
        "telephony.reference_page",
    ),
    ("telephony.operations",),
    ("agent",),
    ("telephony.twilio",),
    ("telephony.bridge",),
    ("telephony.recording",),
    ("telephony.console",),
    ("telephony.app", "telephony.routes"),
    (
        "telephony.simulation.local_nova",
        "telephony.simulation.local_gemini",
        "telephony.simulation.local_openai",
        "telephony.simulation.local_twilio",
        "telephony.simulation.local_app",
    ),
    ("telephony.simulation.caller",),
    ("telephony.simulation.replay",),
    ("telephony.simulation.demo", "telephony.simulation.scenarios"),
    ("telephony.simulation",),
    ("telephony.cli",),
]
"""Lowest first. ``telephony`` itself (its ``__init__``) only re-exports ``CallInfo``."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in ("telephony", "agent"):
        for path in (ROOT / package).rglob("*.py"):
            found[module_name(path)] = path
    return found


def imports_of(name: str, path: Path) -> set[str]:
    """Absolute names of the project modules ``path`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    known = modules()
    return {target for target in targets if target in known and target != name}


def layer_of(name: str) -> int:
    for index, prefixes in enumerate(LAYERS):
        if any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes):
            return index
    if name == "telephony":
        return 0
    raise AssertionError(f"{name} belongs to no layer: add it to LAYERS in {__file__}")


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer_of(name)


def test_no_module_imports_a_higher_layer() -> None:
    upward = []
    for name, path in modules().items():
        for target in imports_of(name, path):
            if layer_of(target) > layer_of(name):
                upward.append(f"{name} (layer {layer_of(name)}) imports {target} (layer {layer_of(target)})")
    assert upward == []


def test_no_import_cycles() -> None:
    graph = {name: imports_of(name, path) for name, path in modules().items()}
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            pytest.fail("import cycle: " + " -> ".join([*trail[trail.index(name) :], name]))
        if name in done:
            return
        for target in sorted(graph[name]):
            if target != name.rpartition(".")[0]:  # a module importing its own package's __init__ is not a cycle
                visit(target, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def test_the_agent_side_uses_only_the_shared_types() -> None:
    """``agent/`` is what the bot is: it may use the call's public types, never the bridge's internals."""
    shared = set(LAYERS[0]) | {"telephony"}
    for name, path in modules().items():
        if name.startswith("agent"):
            reached = {target for target in imports_of(name, path) if target.startswith("telephony")}
            assert reached <= shared, f"{name} imports {sorted(reached - shared)}"


def test_the_marker_table_names_test_files_that_exist() -> None:
    """tests/conftest.py marks the slow kinds by path: a renamed file must not silently lose its marker."""
    from tests.conftest import SLOW_KINDS

    for kind, prefixes in SLOW_KINDS.items():
        for prefix in prefixes:
            path = ROOT / "tests" / prefix.partition("::")[0]
            assert path.exists(), f"SLOW_KINDS[{kind!r}] names {prefix}, which is not under tests/"


def test_the_product_holds_no_test_doubles() -> None:
    """Test doubles live in tests/ (benchmarks import them from there): nothing in the wheel's packages imports them,
    and the wheel's packages hold no fakes folder."""
    for name, path in modules().items():
        assert not any(target.startswith("tests") for target in raw_imports(path)), f"{name} imports from tests/"
    assert not any(part == "fakes" for name in modules() for part in name.split(".")), "a fakes package in the wheel"


def raw_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return found

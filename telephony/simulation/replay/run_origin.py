"""``scenario.json`` beside a recording that ``voicebot test`` made: which scenario, agent and set-up made the call.

A recording alone does not say how to place its call again safely: the agent factory is not in it, nor the
``setup:`` that gave the run its own data (a fresh database, say). Without them a scenario written from the
recording runs the agent's tools against whatever the environment points at, and a replayed booking lands
in the real appointment book. The scenario runner writes this file into each run's recording folder;
``voicebot test --from-recording`` carries what it says into the scenario it writes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["ORIGIN_FILE", "read_origin", "write_origin"]

ORIGIN_FILE = "scenario.json"


def write_origin(
    folder: Path, scenario: Path, name: str, agent: str, setup: Sequence[tuple[str, Mapping[str, Any]]]
) -> None:
    """Note in ``folder`` the scenario file, its name, the agent factory and the ``setup:`` calls of the run."""
    origin = {
        "scenario": str(scenario),
        "name": name,
        "agent": agent,
        "setup": [{"call": function, "with": dict(arguments)} for function, arguments in setup],
    }
    (folder / ORIGIN_FILE).write_text(json.dumps(origin, indent=2, default=str) + "\n", encoding="utf-8")


def read_origin(folder: Path) -> dict[str, Any]:
    """What ``folder``'s ``scenario.json`` says ({} for a call that no scenario run made, or an unreadable file)."""
    try:
        origin = json.loads((folder / ORIGIN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return origin if isinstance(origin, dict) else {}

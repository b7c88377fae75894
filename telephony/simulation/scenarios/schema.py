"""What a scenario file's fields are declared with: a :class:`Field` (type, default, meaning, example) in a
:class:`Section` (one mapping of the file).

The declarations themselves are in ``call_fields`` (the scenario, the call, the caller, the brain) and
``expect_fields`` (``expect:``). The parser (``scenario_file``, ``expect_reader``) takes each mapping's allowed
keys from them, so every field it reads is documented, and ``docs/scenarios.md`` is written from them
(``reference``: ``uv run python -m telephony.simulation.scenarios --markdown > docs/scenarios.md``). Each
example is one line of YAML as written inside its section; ``tests/simulation/test_scenario_reference.py``
loads every one of them in a whole scenario (``Section.scenario_with``), so none can go stale.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CALLER", "REQUIRED", "STEPS", "Field", "Section"]

REQUIRED = "required"

CALLER = "caller:\n  - say: Hello.\n"
"""The smallest caller, for examples that need one."""
STEPS = "caller:\n  - say: Hello.\n  - say: Stop, please.\n    over_the_bot_ms: 800\n  - press: '12'\n"
"""A caller that speaks, talks over the bot and presses keys (so every expectation and brain turn has a partner)."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: str
    default: str
    """``REQUIRED``, or the value (as text) used when the field is left out."""
    about: str
    example: str
    """One line of YAML, as written inside the section."""


@dataclass(frozen=True)
class Section:
    key: str
    """How the parser names it (``expect.hang_up``)."""
    title: str
    about: str
    wrap: str
    """A whole scenario with ``{example}`` where one of this section's lines goes (for the examples' test)."""
    fields: tuple[Field, ...]
    sibling: str = ""
    """A required field written beside an example that does not set it itself (``{sibling}`` in ``wrap``)."""

    @property
    def names(self) -> list[str]:
        """The fields the section allows, for the parser."""
        return [field.name for field in self.fields]

    def scenario_with(self, example: str) -> str:
        """A whole scenario file holding ``example`` in this section."""
        needed = self.sibling and not example.startswith(self.sibling.split(":", 1)[0] + ":")
        return self.wrap.replace("{example}", example).replace("{sibling}", self.sibling if needed else "")

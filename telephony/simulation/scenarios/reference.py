"""``docs/scenarios.md``, written from the scenario fields' declarations so the page cannot drift from the parser.

Regenerate it with ``uv run python -m telephony.simulation.scenarios --markdown > docs/scenarios.md``.
"""

from __future__ import annotations

import re

from telephony.simulation.scenarios.call_fields import CALL_SECTIONS
from telephony.simulation.scenarios.expect_fields import EXPECT_SECTIONS
from telephony.simulation.scenarios.schema import REQUIRED, Field, Section

__all__ = ["REGENERATE", "SECTIONS", "scenarios_markdown"]

REGENERATE = "uv run python -m telephony.simulation.scenarios --markdown > docs/scenarios.md"
SECTIONS: tuple[Section, ...] = (*CALL_SECTIONS, *EXPECT_SECTIONS)

INTRODUCTION = """\
Every field of a scenario file (YAML), with its type, its default and an example; how to write and run
scenarios is in [testing your agent](testing.md). `voicebot test` (and the `phone_call` fixture) reads every
file before it places any call and reports every mistake at once, file by file and line by line, as
`file:line: field: what to fix`: unknown fields and wrong values (a `line.voice` espeak-ng lacks among them);
what one section asks of another (a `barge_in` timing needs a step with `over_the_bot_ms`, `keys` a caller
without a goal, `latency` a caller who speaks, a `heard:` the caller's words, a `{tool}` in what the brain says
a tool of that turn); that the agent factory and every `setup` and `checks` function import and take the
keywords given; and, for scenarios the brain plays, the agent built once as the run will build it (never
started): each `{prompt:Name}` must be a line of its system prompt, and with `--local` its model must reach the
local server. `voicebot test --check` runs these checks and places no call; `--jobs N` runs them once, before
any call.
"""

EVERY_CALL = """\
## What every call must do

With or without `expect:`, a run fails when:

- the agent failed to start, crashed, or stopped answering, so the caller heard the bridge's apology (the log
  and the failure say why);
- the scripted brain could not fill a `{prompt:Name}` (the agent's prompt has no such line at call time);
- a brain turn's `heard:` is not in what the caller said since the brain's previous caller turn (the brain is
  out of step with the caller: a pause inside one line heard as two turns, or a line it did not hear);
- the call did not end within `timeout_s`, or could not be placed at all.

A scenario without `brain:` runs on the model the agent factory builds: a real model on your own account.
`voicebot test` says so before the first call, unless `--real-model` says that is meant.
"""

ARGUMENT_RULES = (
    ("a mapping", "each expected key is there and matches (other keys may be there too)"),
    ("text", "the same text, ignoring case and surrounding spaces"),
    ("a number", 'the same number, or text of it (`2` matches `"2"`)'),
    (
        "text starting `re:`",
        "a regular expression searched in the argument as text, ignoring case: `time: 're:^9[:.]?30'` (anchor it "
        "with `^`/`$` for the whole value; `(?-i:...)` for case)",
    ),
    (
        "a list",
        "as a set: each expected item matches an item of the call's list and each item of it matches an expected "
        "one, in any order; with `ordered_lists: true`, item by item in order",
    ),
)
ARGUMENTS = (
    "## Argument matching\n\nHow a tool call's arguments match `expect.tools[].input` "
    "(`telephony/simulation/scenarios/arguments.py`):\n\n| expected | matches |\n|---|---|\n"
    + "".join(f"| {expected} | {matches} |\n" for expected, matches in ARGUMENT_RULES)
)


def scenarios_markdown() -> str:
    """The whole reference page."""
    parts = [
        "# Scenario reference\n",
        f"<!-- Generated from telephony/simulation/scenarios/call_fields.py and expect_fields.py: do not edit. "
        f"Regenerate: {REGENERATE} -->\n",
        INTRODUCTION,
        "\n".join(f"- [{section.title}](#{_anchor(section.title)})" for section in SECTIONS)
        + "\n- [What every call must do](#what-every-call-must-do)\n- [Argument matching](#argument-matching)\n",
    ]
    parts.extend(_section(section) for section in SECTIONS)
    parts += [EVERY_CALL, ARGUMENTS]
    return "\n".join(parts)


def _section(section: Section) -> str:
    lines = [f"## {section.title}\n"]
    if section.about:
        lines.append(section.about + "\n")
    lines.append("| field | type | default | what it does | example |")
    lines.append("|---|---|---|---|---|")
    lines.extend(_row(field) for field in section.fields)
    return "\n".join(lines) + "\n"


_LITERAL = re.compile(r'\[\]|\{\}|""|[+0-9.]+|true|false')
"""A default written as YAML (shown as code)."""


def _row(field: Field) -> str:
    default = field.default.replace(REQUIRED, "**required**")
    if _LITERAL.fullmatch(default):
        default = f"`{default}`"
    cells = (f"`{field.name}`", field.kind, default, field.about, f"`{field.example}`")
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _anchor(title: str) -> str:
    """The anchor a forge gives a heading (as ``tests/test_docs.py`` computes it)."""
    text = re.sub(r"[^\w\- ]", "", title.strip().lower().replace("`", ""))
    return text.replace(" ", "-")

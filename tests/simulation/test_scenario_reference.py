"""docs/scenarios.md is written from the fields' declarations, the parser reads exactly those fields, and every
example in the reference is a scenario line that loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from telephony.simulation.scenarios.reference import REGENERATE, SECTIONS, scenarios_markdown
from telephony.simulation.scenarios.scenario_file import read_scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [(section, field) for section in SECTIONS for field in section.fields]


def test_the_reference_page_is_what_the_declarations_say() -> None:
    page = ROOT / "docs" / "scenarios.md"
    assert page.read_text(encoding="utf-8") == scenarios_markdown(), (
        f"docs/scenarios.md is not what the scenario fields' declarations say: regenerate it with `{REGENERATE}`"
    )


def test_the_markdown_command_prints_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    from telephony.simulation.scenarios.__main__ import main

    assert main(["--markdown"]) == 0
    assert capsys.readouterr().out == scenarios_markdown()


@pytest.mark.parametrize(("section", "field"), EXAMPLES, ids=[f"{s.key}.{f.name}" for s, f in EXAMPLES])
def test_every_example_in_the_reference_loads(section: object, field: object, tmp_path: Path) -> None:
    from telephony.simulation.scenarios.schema import Field, Section

    assert isinstance(section, Section) and isinstance(field, Field)
    files_next_to(tmp_path)
    path = tmp_path / "example.yaml"
    path.write_text(section.scenario_with(field.example), encoding="utf-8")
    scenario, problems = read_scenario(path)
    assert scenario is not None and not problems, [str(problem) for problem in problems]


@pytest.mark.parametrize("section", SECTIONS, ids=[section.key for section in SECTIONS])
def test_the_parser_accepts_exactly_the_declared_fields(section: object, tmp_path: Path) -> None:
    """A field the declarations lack is unknown to the parser, which lists the declared ones."""
    from telephony.simulation.scenarios.schema import Section

    assert isinstance(section, Section)
    example = section.fields[-1].example
    if example.startswith("{"):
        line = example[:-1] + ", not_a_field: 1}"
    else:
        line = f"{{{example}, not_a_field: 1}}" if section.key == "caller step" else None
        line = line or example + "\n" + _indent_of(section) + "not_a_field: 1"
    files_next_to(tmp_path)
    path = tmp_path / "unknown.yaml"
    path.write_text(section.scenario_with(line), encoding="utf-8")
    _, problems = read_scenario(path)
    messages = [str(problem) for problem in problems]
    assert len(messages) == 1 and messages[0].endswith(
        "not_a_field: unknown field; expected one of " + ", ".join(field.name for field in section.fields)
    ), messages


def files_next_to(folder: Path) -> None:
    """The files the examples' play: and recording: name."""
    (folder / "clip.wav").write_bytes(b"RIFF")
    (folder / "calls" / "CA0123").mkdir(parents=True)


def _indent_of(section: object) -> str:
    from telephony.simulation.scenarios.schema import Section

    assert isinstance(section, Section)
    line = next(line for line in section.wrap.splitlines() if "{example}" in line)
    indent = line[: len(line) - len(line.lstrip())]
    return indent + ("  " if line.lstrip().startswith("- ") else "")

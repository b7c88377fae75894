"""The docs link to each other and name the code: every relative link must reach a file, every #anchor a heading in it,
and every path and module name written as code must exist.

A page moved or a heading renamed breaks links silently on a forge's web view; this catches it here.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def prose(text: str) -> str:
    """The page without code blocks and code spans, where brackets are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """The anchor a forge gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"#{1,6}\s+(.*)", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(page: Path) -> list[str]:
    links = []
    for match in LINK.finditer(prose(page.read_text(encoding="utf-8"))):
        target = match.group(1) or match.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
            continue  # http:, https:, mailto: ...
        links.append(target)
    return links


def test_the_pages_exist() -> None:
    for page in PAGES:
        assert page.is_file(), page


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path_part, _, fragment = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        name = destination.relative_to(ROOT).as_posix() if destination.is_relative_to(ROOT) else str(destination)
        if not destination.exists():
            broken.append(f"{target}: no file {name}")
            continue
        if fragment and destination.suffix == ".md" and fragment not in anchors(destination):
            broken.append(f"{target}: no heading #{fragment} in {name}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_readme_stays_short() -> None:
    words = len((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert words < 2000, f"README.md has {words} words: move reference into docs/"


def test_the_readme_keeps_its_two_commands() -> None:
    """`.ci/run` runs the README's test command; a newcomer runs the demo first."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "uv run voicebot demo" in text
    assert "uv run pytest" in text


# The docs name the code: a repository path (``telephony/bridge/session.py``) or a module (``telephony.codec``,
# ``agent.offline:create_agent``, ``examples.clinic.agent:create_agent``). Only names in code, where a reader
# copies them from, are checked: backtick spans and code blocks with a language (``sh``, ``python``, ...); an
# unlabelled block is a diagram or sample output.
LABELLED_BLOCK = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`([^`]+)`")
"""A code span, which may run over a line break."""
REPO_PATH = re.compile(r"(?<![\w./-])((?:telephony|agent|tests|benchmarks|examples|docs|deploy|\.ci)/[\w./-]*)")
MODULE_NAME = re.compile(r"(?<![\w./:-])((?:telephony|agent|examples)(?:\.\w+)+(?::\w+)?)")
RUN_MODULE = re.compile(r"\bpython -m ([\w.]+)")
MADE_BY_RUNS = ("tests/artifacts/",)
"""Paths the tests create (git-ignored), so a fresh clone lacks them."""
FILE_NAME = re.compile(r"(?<![\w/.-])(\w+\.py)\b")
"""A module named by its file alone, as a table of a package's modules does (``session.py``)."""
THE_READERS_OWN = {"mybot.py"}
"""Files the docs ask the reader to write."""


@functools.cache
def repository_file_names() -> frozenset[str]:
    names = set()
    for _folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if not name.startswith(".") and name != "node_modules"]
        names.update(name for name in files if name.endswith(".py"))
    return frozenset(names)


def code_in(text: str) -> list[str]:
    """What a reader would copy: the labelled code blocks, and the code spans outside any block."""
    spans = [span.replace("\n", " ") for span in INLINE_CODE.findall(FENCE.sub("", text))]
    return [block for _, block in LABELLED_BLOCK.findall(text)] + spans


def spec_of(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def module_name_exists(name: str) -> bool:
    """``a.b.c`` is a module, or an attribute chain on the longest module prefix; ``a.b:f`` too."""
    parts = name.replace(":", ".").split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if not spec_of(module):
            continue
        target: object = importlib.import_module(module)
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def missing_names(text: str) -> list[str]:
    missing = []
    file_names = repository_file_names() | THE_READERS_OWN
    for code in code_in(text):
        missing += [f"no file named {name}" for name in FILE_NAME.findall(code) if name not in file_names]
        for path in REPO_PATH.findall(code):
            path = path.rstrip(".")
            if not path.startswith(MADE_BY_RUNS) and not (ROOT / path).exists():
                missing.append(f"no file or folder {path}")
        for name in MODULE_NAME.findall(code):
            if not module_name_exists(name):
                missing.append(f"no module or attribute {name}")
        for name in RUN_MODULE.findall(code):
            if name.split(".")[0] in {"telephony", "agent", "examples", "tests", "benchmarks"} and not spec_of(name):
                missing.append(f"no module {name} to run")
    return sorted(set(missing))


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_path_and_module_name_in_code_exists(page: Path) -> None:
    missing = missing_names(page.read_text(encoding="utf-8"))
    assert not missing, f"{page.relative_to(ROOT)}: " + "; ".join(missing)


def test_the_name_check_catches_a_wrong_name() -> None:
    page = """See `uv run voicebot replay --offlin
--record x` or `twilio_streams.py`, `telephony/bridge/sessions.py` and `telephony.bridge.protocols`,
`agent.offline:make_agent`, `examples.clinic.agents:create_agent`,
`telephony.codec.FRAME_MSEC` and `docs/architecture.md`.

```sh
uv run python benchmarks/nope.py
python -m telephony.simulation.local_nova
uv run python -m tests.recorded_calls.make_recording
```
"""
    assert unknown_commands(page, voicebot_options()) == ["voicebot replay has no --offlin"]
    assert missing_names(page) == [
        "no file named twilio_streams.py",
        "no file or folder benchmarks/nope.py",
        "no file or folder telephony/bridge/sessions.py",
        "no module or attribute agent.offline:make_agent",
        "no module or attribute examples.clinic.agents:create_agent",
        "no module or attribute telephony.bridge.protocols",
        "no module or attribute telephony.codec.FRAME_MSEC",
        "no module tests.recorded_calls.make_recording to run",
    ]


VOICEBOT_COMMAND = re.compile(r"\bvoicebot (\w+)([^#\n]*)")
FLAG = re.compile(r"(?<![\w=-])(--?[a-zA-Z][\w-]*)")


def voicebot_options() -> dict[str, set[str]]:
    """Each ``voicebot`` command and the flags it takes, from the CLI's own parser."""
    from telephony.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name: {flag for action in sub._actions for flag in action.option_strings}
        for name, sub in commands.choices.items()
    }


def unknown_commands(text: str, options: dict[str, set[str]]) -> list[str]:
    unknown = []
    for code in code_in(text):
        for command, rest in VOICEBOT_COMMAND.findall(code):
            if command not in options:
                unknown.append(f"no command voicebot {command}")
                continue
            unknown += [
                f"voicebot {command} has no {flag}" for flag in FLAG.findall(rest) if flag not in options[command]
            ]
    return sorted(set(unknown))


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_voicebot_command_and_flag_in_code_exists(page: Path) -> None:
    unknown = unknown_commands(page.read_text(encoding="utf-8"), voicebot_options())
    assert not unknown, f"{page.relative_to(ROOT)}: " + "; ".join(unknown)


def test_the_command_check_catches_a_wrong_command() -> None:
    page = "`uv run voicebot serve --wokers 2` and `voicebot run`; `voicebot call +15550100 --param a=b`"
    assert unknown_commands(page, voicebot_options()) == ["no command voicebot run", "voicebot serve has no --wokers"]

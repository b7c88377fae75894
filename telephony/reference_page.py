"""The shape shared by the commands that print a generated reference page (``python -m … --markdown``).

docs/configuration.md and docs/scenarios.md are generated from the code that reads the settings and the scenario
fields, so they cannot drift from it; a test compares each committed page with its command's output."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def print_reference_page(prog: str, page: str, render: Callable[[], str], argv: list[str] | None = None) -> int:
    """Print ``render()`` when called with ``--markdown``; otherwise the help, with exit status 2."""
    parser = argparse.ArgumentParser(prog=prog, description=f"Print {page}, generated from the code.")
    parser.add_argument("--markdown", action="store_true", help=f"print {page} to standard output")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.print_help()
        return 2
    print(render(), end="")
    return 0

"""``python -m telephony.simulation.scenarios --markdown``: print the scenario reference (docs/scenarios.md)."""

from __future__ import annotations

from telephony.reference_page import print_reference_page
from telephony.simulation.scenarios.reference import scenarios_markdown


def main(argv: list[str] | None = None) -> int:
    prog = "python -m telephony.simulation.scenarios"
    return print_reference_page(prog, "docs/scenarios.md", scenarios_markdown, argv)


if __name__ == "__main__":
    raise SystemExit(main())

"""``python -m telephony.simulation.scenarios --markdown``: print the scenario reference (docs/scenarios.md)."""

from __future__ import annotations

import argparse

from telephony.simulation.scenarios.reference import scenarios_markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m telephony.simulation.scenarios", description=__doc__)
    parser.add_argument("--markdown", action="store_true", help="print docs/scenarios.md to standard output")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.print_help()
        return 2
    print(scenarios_markdown(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

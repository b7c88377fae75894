"""``python -m telephony.config --markdown``: print the configuration reference (docs/configuration.md)."""

from __future__ import annotations

import argparse

from .reference import configuration_markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m telephony.config", description=__doc__)
    parser.add_argument("--markdown", action="store_true", help="print docs/configuration.md to standard output")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.print_help()
        return 2
    print(configuration_markdown(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

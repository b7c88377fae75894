"""``python -m telephony.config --markdown``: print the configuration reference (docs/configuration.md)."""

from __future__ import annotations

from ..reference_page import print_reference_page
from .reference import configuration_markdown


def main(argv: list[str] | None = None) -> int:
    return print_reference_page("python -m telephony.config", "docs/configuration.md", configuration_markdown, argv)


if __name__ == "__main__":
    raise SystemExit(main())

"""Environment variables set for one scenario run and restored after it (the local model servers' endpoints)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

__all__ = ["scoped_environment"]


@contextlib.contextmanager
def scoped_environment(values: Mapping[str, str | None]) -> Iterator[None]:
    """``values`` in ``os.environ`` (None: removed) until the block ends, then the environment as it was."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        _apply(values)
        yield
    finally:
        _apply(saved)


def _apply(values: Mapping[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value

"""Reading settings from the environment (and a ``.env`` file): text to typed values, then validation."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .checks import validate
from .declare import ConfigError, Spec
from .settings import Settings, specs


def load_settings(environ: Mapping[str, str] | None = None, dotenv: Path | None = Path(".env")) -> Settings:
    """Read settings from ``environ`` (default: the process environment after loading ``.env``)."""
    if environ is None:
        if dotenv is not None and dotenv.is_file():
            from dotenv import load_dotenv

            load_dotenv(dotenv, override=False)
        environ = os.environ
    values: dict[str, object] = {}
    for spec in specs():
        raw = environ.get(spec.env)
        if raw is None or raw.strip() == "":
            continue
        values[spec.name] = convert(spec, raw.strip())
    settings = Settings(**values)  # type: ignore[arg-type]
    validate(settings)
    return settings


def convert(spec: Spec, raw: str) -> object:
    """The setting's value from its text; a malformed number or flag names the variable."""
    if spec.kind is bool:
        return _flag(spec.env, raw)
    try:
        if spec.kind is int:
            return int(raw)
        if spec.kind is float:
            return float(raw)
    except ValueError:
        raise ConfigError(f"{spec.env}={raw!r} is not a number: set it to a plain {spec.kind.__name__}") from None
    return raw


def _flag(variable: str, raw: str) -> bool:
    value = raw.lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{variable}={raw!r} is not on or off: set it to 1 or 0")

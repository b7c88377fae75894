"""How one setting is declared: its environment variable, default, description and check, in a single place.

A setting is a dataclass field whose ``metadata`` carries the rest (see ``setting``). Loading, validation,
``env_name`` and ``docs/configuration.md`` are all read from these declarations, so nothing is kept in
sync by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from typing import Any


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names the variable and the fix."""


@dataclass(frozen=True)
class Rule:
    """What a setting's value must be: ``test(value)`` is true, or ``problem`` is raised as a ConfigError.

    ``problem`` is formatted with ``variable`` (the environment variable) and ``value``; ``test`` may raise
    a ConfigError itself when it can say more precisely what is wrong. ``allowed`` is the short form the
    reference page shows.
    """

    test: Callable[[Any], bool]
    problem: str
    allowed: str

    def check(self, variable: str, value: Any) -> None:
        if not self.test(value):
            raise ConfigError(self.problem.format(variable=variable, value=value))


@dataclass(frozen=True)
class Spec:
    """Everything declared about one setting, read back from its field."""

    name: str
    """The ``Settings`` attribute."""
    env: str
    default: Any
    about: str
    rule: Rule | None
    secret: bool
    shown_default: str | None
    """How the reference page states the default when the raw value would mislead (``None`` = "the model's")."""
    flag: str | None
    """The command-line flag that overrides it, if any."""
    kind: type

    def check(self, value: Any) -> None:
        """Apply the rule; an unset optional value (``None``) has nothing to check."""
        if self.rule is not None and value is not None:
            self.rule.check(self.env, value)


def setting(
    env: str,
    default: Any,
    about: str,
    *,
    rule: Rule | None = None,
    secret: bool = False,
    shown_default: str | None = None,
    flag: str | None = None,
) -> Any:
    """Declare a setting as a dataclass field: ``port: int = setting("VOICEBOT_PORT", 8080, "...")``.

    Secrets are left out of ``repr`` (and so out of logs).
    """
    metadata = {
        "env": env,
        "about": about,
        "rule": rule,
        "secret": secret,
        "shown_default": shown_default,
        "flag": flag,
    }
    return field(default=default, repr=not secret, metadata=metadata)


def specs_of(group: type) -> tuple[Spec, ...]:
    """The settings a group declares, in declaration order."""
    return tuple(_spec(item) for item in fields(group))


def _spec(item: Field[Any]) -> Spec:
    meta = item.metadata
    if "env" not in meta:
        raise TypeError(f"{item.name} is not declared with setting(): it has no environment variable")
    return Spec(
        name=item.name,
        env=meta["env"],
        default=item.default,
        about=meta["about"],
        rule=meta["rule"],
        secret=meta["secret"],
        shown_default=meta["shown_default"],
        flag=meta["flag"],
        kind=_kind(item.type),
    )


def _kind(annotation: object) -> type:
    """The value type behind an annotation such as ``"int"`` or ``"str | None"`` (for converting text)."""
    text = str(annotation).replace(" ", "")
    for name, kind in (("bool", bool), ("int", int), ("float", float)):
        if text in (name, f"{name}|None"):
            return kind
    return str

"""Twilio's API description, trimmed to the requests the bot makes: which operation a request is, and whether
each parameter it carries is one that operation lists.

Why our own check beside Prism's: Prism validates the values of the parameters a description lists, but lets a
name it does not list pass without a word (a misspelt ``StatusCallbackEvents`` would reach Twilio unseen). This
reads the same trimmed copy Prism serves (``twilio_api_v2010.json`` beside this file; where it comes from and
what was changed: ``trim_description.py``) and names every query or form parameter the operation does not list.
The local Twilio API refuses such requests with it, and the tests apply it to every request sent to Prism.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DESCRIPTION_PATH = Path(__file__).with_name("twilio_api_v2010.json")
"""The trimmed copy of Twilio's ``twilio_api_v2010.json`` (what Prism serves in the tests)."""
FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class Operation:
    """One method on one path of the description, and the parameter names it lists."""

    method: str
    path: str
    """As the description writes it: ``/2010-04-01/Accounts/{AccountSid}/Calls.json``."""
    query: frozenset[str]
    form: frozenset[str]

    @property
    def pattern(self) -> re.Pattern[str]:
        """The concrete paths this operation answers (each ``{Name}`` is one path segment)."""
        return re.compile("[^/]+".join(re.escape(part) for part in re.split(r"\{[^}]+\}", self.path)))

    def matches(self, method: str, path: str) -> bool:
        return method.upper() == self.method and self.pattern.fullmatch(path) is not None

    def unlisted(self, query: Iterable[str] = (), form: Iterable[str] = ()) -> list[str]:
        """What is wrong with these parameter names, one sentence each (nothing: all are listed)."""
        where = f"{self.method} {self.path}"
        found = [("query", name) for name in query if name not in self.query]
        found += [("form", name) for name in form if name not in self.form]
        problems = [f"{where}: {kind} parameter {name!r} is not one it lists" for kind, name in found]
        return list(dict.fromkeys(problems))  # a repeated name is one problem


@dataclass(frozen=True)
class ApiDescription:
    """The operations of a description, looked up by a request's method and path."""

    operations: tuple[Operation, ...]
    source: dict[str, Any]
    """Where the copy comes from: repository, commit, path, licence and what was changed."""

    @classmethod
    def read(cls, path: Path = DESCRIPTION_PATH) -> ApiDescription:
        document = json.loads(path.read_text(encoding="utf-8"))
        operations = tuple(
            _operation(method, route, spec)
            for route, item in document["paths"].items()
            for method, spec in item.items()
            if method in ("get", "post", "put", "patch", "delete")
        )
        return cls(operations, document["info"].get("x-trimmed-from", {}))

    def operation(self, method: str, path: str) -> Operation | None:
        """The operation a request for ``method path`` is (``path`` without its query string), if any."""
        return next((op for op in self.operations if op.matches(method, path)), None)

    def unlisted(self, method: str, path: str, query: Iterable[str] = (), form: Iterable[str] = ()) -> list[str]:
        """What the description does not list in this request: the operation itself, or some of its names."""
        operation = self.operation(method, path)
        if operation is None:
            return [
                f"{method.upper()} {path} is no operation of the trimmed description: if the bot now makes this "
                "request, add it to OPERATIONS in telephony/simulation/local_twilio/trim_description.py and regenerate"
            ]
        return operation.unlisted(query, form)


@cache
def twilio_api() -> ApiDescription:
    """The trimmed copy beside this module, read once."""
    return ApiDescription.read()


def _operation(method: str, route: str, spec: dict[str, Any]) -> Operation:
    query = frozenset(p["name"] for p in spec.get("parameters", []) if p.get("in") == "query")
    body = spec.get("requestBody", {}).get("content", {}).get(FORM, {}).get("schema", {})
    return Operation(method.upper(), route, query, frozenset(body.get("properties", {})))

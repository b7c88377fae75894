"""Cutting Twilio's own API description down to the requests the bot makes, for Prism and our parameter check.

Twilio publishes its REST API as OpenAPI in github.com/twilio/twilio-oai (MIT licence; the file is
``spec/json/twilio_api_v2010.json``, about 1.9 MB). The bot calls four operations of it, so the copy in this
folder keeps those, the components they reference, and nothing written for people (descriptions, summaries,
tags, SDK-generation hints): a reviewer can read what is checked, and Prism starts in a second.

Two changes go beyond cutting, each recorded in the copy's ``info.x-trimmed-from.changes``:

- Twilio's form-encoded array parameters (``StatusCallbackEvent`` on Calls) travel as the same name repeated,
  once per value, as the SDK sends them and Twilio's docs show; the copy says so with an explicit ``encoding``
  (``style: form``, ``explode: true``) for each, OpenAPI's words for it, so Prism reads them as arrays (without
  it Prism refuses every call that asks for status events: "must be array").
- ``VoiceApplicationSid`` on a number may also be empty: that is how a number leaves a voice application for its
  voice URL (``voicebot setup`` does it), and the description's own example of a number without one shows
  ``"voice_application_sid": ""``, but its SID pattern leaves the empty string out.

Regenerate after updating the SDK (then run ``tests/twilio/test_api_description.py``)::

    python -m telephony.simulation.local_twilio.trim_description path/to/twilio_api_v2010.json \\
        --commit <twilio-oai commit> > telephony/simulation/local_twilio/twilio_api_v2010.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ACCOUNT = "/2010-04-01/Accounts/{AccountSid}"
OPERATIONS: tuple[tuple[str, str], ...] = (
    ("post", f"{ACCOUNT}/Calls.json"),  # voicebot call, and the warm transfer's call to the person
    ("post", f"{ACCOUNT}/Calls/{{Sid}}.json"),  # hang-up, cold transfer, hold / join / bring back
    ("get", f"{ACCOUNT}/IncomingPhoneNumbers.json"),  # voicebot setup: find the number
    ("post", f"{ACCOUNT}/IncomingPhoneNumbers/{{Sid}}.json"),  # voicebot setup: point it at the bot
)
"""(method, path) of every REST request the bot makes: the operations the copy keeps."""
PROSE = frozenset({"description", "summary"})
"""Keys written for people; dropped wherever their value is text (a property *named* so is a schema, kept)."""
NOT_FOR_VALIDATION = frozenset({"tags", "x-twilio", "x-maturity", "x-readOnly"})
"""Keys that document or steer Twilio's SDK generators and change nothing about what a request may carry."""
SOURCE = {"repository": "https://github.com/twilio/twilio-oai", "path": "spec/json/twilio_api_v2010.json"}
LICENCE = "MIT (twilio-oai's LICENSE, copied beside this file as LICENSE-twilio-oai)"
FORM = "application/x-www-form-urlencoded"
REPEATED = {"style": "form", "explode": True}
"""OpenAPI's words for ``Name=a&Name=b``: how Twilio's form arrays travel."""
CLEARED_WHEN_EMPTY: dict[tuple[str, str], tuple[str, ...]] = {
    ("post", f"{ACCOUNT}/IncomingPhoneNumbers/{{Sid}}.json"): ("VoiceApplicationSid",),
}
"""Form parameters that Twilio clears when sent empty but whose SID pattern has no room for "" (see above)."""
EMPTY = {"type": "string", "maxLength": 0}


def trim(description: dict[str, Any], commit: str) -> dict[str, Any]:
    """The description cut to ``OPERATIONS``, with the components they reach and the array encoding made explicit."""
    paths: dict[str, dict[str, Any]] = {}
    for method, path in OPERATIONS:
        item = description["paths"].get(path, {})
        if method not in item:
            raise KeyError(f"{method.upper()} {path} is not in the description: has Twilio moved it?")
        operation = _repeat_form_arrays(item[method])
        paths.setdefault(path, {})[method] = _allow_empty(operation, CLEARED_WHEN_EMPTY.get((method, path), ()))
    components = _reachable_components(description.get("components", {}), paths)
    components["securitySchemes"] = description["components"]["securitySchemes"]
    trimmed = {
        "openapi": description["openapi"],
        "info": _info(description["info"], commit),
        "servers": description.get("servers", []),
        "security": description.get("security", []),
        "paths": paths,
        "components": components,
    }
    return _without_prose(trimmed)


def _info(info: dict[str, Any], commit: str) -> dict[str, Any]:
    changes = [
        "only the operations the bot calls, and the components they reference",
        "descriptions, summaries, tags and x-twilio hints dropped",
        "form arrays (e.g. StatusCallbackEvent) given encoding style=form, explode=true: sent as the name repeated",
        "VoiceApplicationSid on a number may also be empty (clears it; Twilio's own example shows it empty)",
    ]
    source = SOURCE | {"commit": commit, "licence": LICENCE, "changes": changes}
    return {"title": info["title"], "version": info["version"], "license": info["license"], "x-trimmed-from": source}


def _repeat_form_arrays(operation: dict[str, Any]) -> dict[str, Any]:
    """The operation with an explicit repeated-name encoding for each array in its form body."""
    media = operation.get("requestBody", {}).get("content", {}).get(FORM)
    if media is None:
        return operation
    arrays = [name for name, schema in media["schema"].get("properties", {}).items() if schema.get("type") == "array"]
    if not arrays:
        return operation
    encoding = {**media.get("encoding", {}), **{name: dict(REPEATED) for name in arrays}}
    content = {**operation["requestBody"]["content"], FORM: {**media, "encoding": encoding}}
    return {**operation, "requestBody": {**operation["requestBody"], "content": content}}


def _allow_empty(operation: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The operation with each of ``names`` in its form body accepting "" as well as what it accepted."""
    if not names:
        return operation
    media = operation["requestBody"]["content"][FORM]
    properties = dict(media["schema"]["properties"])
    for name in names:
        if EMPTY not in properties[name].get("anyOf", []):  # trimming the copy again changes nothing
            properties[name] = {"anyOf": [properties[name], EMPTY]}
    schema = {**media["schema"], "properties": properties}
    content = {**operation["requestBody"]["content"], FORM: {**media, "schema": schema}}
    return {**operation, "requestBody": {**operation["requestBody"], "content": content}}


def _reachable_components(components: dict[str, Any], start: Any) -> dict[str, Any]:
    """Every component ``start`` references, directly or through other components."""
    kept: dict[str, dict[str, Any]] = {}
    pending = list(_refs(start))
    while pending:
        kind, name = pending.pop()
        if name in kept.get(kind, {}):
            continue
        target = components[kind][name]
        kept.setdefault(kind, {})[name] = target
        pending.extend(_refs(target))
    return {kind: dict(sorted(entries.items())) for kind, entries in sorted(kept.items())}


def _refs(node: Any) -> Iterable[tuple[str, str]]:
    """(kind, name) of each ``#/components/<kind>/<name>`` reference inside ``node``."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/"):
            kind, _, name = ref.removeprefix("#/components/").partition("/")
            yield kind, name
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _without_prose(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: _without_prose(value)
            for key, value in node.items()
            if key not in NOT_FOR_VALIDATION and not (key in PROSE and isinstance(value, str))
        }
    if isinstance(node, list):
        return [_without_prose(value) for value in node]
    return node


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Trim Twilio's twilio_api_v2010.json to what the bot calls.")
    parser.add_argument("description", type=Path, help="twilio-oai's spec/json/twilio_api_v2010.json")
    parser.add_argument("--commit", required=True, help="the twilio-oai commit the file comes from (40 hex digits)")
    args = parser.parse_args(argv)
    trimmed = trim(json.loads(args.description.read_text(encoding="utf-8")), args.commit)
    json.dump(trimmed, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

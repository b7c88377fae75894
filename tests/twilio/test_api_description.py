"""The trimmed copy of Twilio's API description, and our check that every parameter the bot sends is one it lists.

The copy's source and licence, what trimming keeps and changes, the check itself, and every REST request of the
product (recorded under the real SDK, no Node needed) checked by it. That Prism needs the copy's array
encoding and empty-SID amendment is shown against Prism itself (skipped, saying why, without Node or Prism).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from telephony.simulation.local_twilio.api import LocalTwilioApi
from telephony.simulation.local_twilio.api_description import DESCRIPTION_PATH, ApiDescription, twilio_api
from telephony.simulation.local_twilio.trim_description import OPERATIONS, trim
from telephony.twilio.calls_api import TwilioCallsApi
from telephony.twilio.dialer import place_call
from telephony.twilio.numbers import configure_number
from telephony.twilio.rest import rest_client

from ..fakes.twilio_http import API, RecordingHttpClient, Reply
from .prism import PrismServer

ACCOUNT = "AC" + "6" * 32
TOKEN = "token"
CALL = "CA" + "7" * 32
NUMBER_SID = "PN" + "8" * 32
FOLDER = DESCRIPTION_PATH.parent


def copy() -> dict[str, Any]:
    return json.loads(DESCRIPTION_PATH.read_text(encoding="utf-8"))


def prose_keys(node: Any, where: str = "") -> list[str]:
    """Where a description or summary written for people is left (a property *named* so is a schema)."""
    if isinstance(node, list):
        return [found for i, value in enumerate(node) for found in prose_keys(value, f"{where}[{i}]")]
    if not isinstance(node, dict):
        return []
    found = [f"{where}.{key}" for key in ("description", "summary") if isinstance(node.get(key), str)]
    return found + [hit for key, value in node.items() for hit in prose_keys(value, f"{where}.{key}")]


# --- the copy ----------------------------------------------------------------------------------------------


def test_the_copy_names_its_source_commit_and_licence() -> None:
    source = copy()["info"]["x-trimmed-from"]
    assert source["repository"] == "https://github.com/twilio/twilio-oai"
    assert source["path"] == "spec/json/twilio_api_v2010.json"
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
    assert source["licence"].startswith("MIT") and "LICENSE-twilio-oai" in source["licence"]
    licence = (FOLDER / "LICENSE-twilio-oai").read_text()
    assert licence.startswith("MIT License") and "Twilio, Inc." in licence and "Permission is hereby granted" in licence


def test_the_copy_holds_the_operations_the_bot_calls_and_no_prose() -> None:
    held = [(op.method.lower(), op.path) for op in twilio_api().operations]
    assert sorted(held) == sorted(OPERATIONS)
    assert prose_keys(copy()) == []
    assert len(DESCRIPTION_PATH.read_bytes()) < 100_000  # Twilio's whole file is about 1.9 MB


def test_the_copy_is_what_the_trimming_tool_makes() -> None:
    """Trimming the copy again changes nothing: it was made by this tool, with its changes, and not edited by hand."""
    document = copy()
    assert trim(document, document["info"]["x-trimmed-from"]["commit"]) == document


def test_trimming_keeps_the_operations_and_what_they_reference_drops_prose_and_makes_arrays_repeat() -> None:
    form = "application/x-www-form-urlencoded"
    schema = {"$ref": "#/components/schemas/thing"}

    def operation(properties: dict[str, Any]) -> dict[str, Any]:
        body = {"schema": {"type": "object", "properties": properties, "description": "words"}}
        response = {"content": {"application/json": {"schema": schema}}, "description": "ok"}
        return {"summary": "s", "tags": ["t"], "requestBody": {"content": {form: body}}, "responses": {"200": response}}

    paths: dict[str, Any] = {path: {method: operation({"Name": {"type": "string"}})} for method, path in OPERATIONS}
    paths[OPERATIONS[0][1]]["post"] = operation({"Event": {"type": "array", "items": {"type": "string"}}})
    paths[OPERATIONS[3][1]]["post"] = operation({"VoiceApplicationSid": {"type": "string", "pattern": "^AP"}})
    paths["/2010-04-01/Accounts/{AccountSid}/Queues.json"] = {"get": operation({})}
    components = {
        "schemas": {"thing": {"properties": {"description": {"type": "string"}}}, "unused": {"type": "string"}},
        "securitySchemes": {"basic": {"type": "http", "scheme": "basic"}},
    }
    info = {"title": "T", "version": "1", "license": {"name": "L"}, "description": "long"}
    trimmed = trim({"openapi": "3.0.1", "info": info, "paths": paths, "components": components}, "c" * 40)

    assert sorted((m, p) for p, item in trimmed["paths"].items() for m in item) == sorted(OPERATIONS)
    assert list(trimmed["components"]["schemas"]) == ["thing"]  # referenced ones only
    assert trimmed["components"]["schemas"]["thing"]["properties"] == {"description": {"type": "string"}}
    assert prose_keys(trimmed) == [] and '"tags"' not in json.dumps(trimmed)
    calls = trimmed["paths"][OPERATIONS[0][1]]["post"]["requestBody"]["content"][form]
    assert calls["encoding"] == {"Event": {"style": "form", "explode": True}}
    number = trimmed["paths"][OPERATIONS[3][1]]["post"]["requestBody"]["content"][form]["schema"]["properties"]
    assert number["VoiceApplicationSid"] == {
        "anyOf": [{"type": "string", "pattern": "^AP"}, {"type": "string", "maxLength": 0}]
    }
    assert trimmed["info"]["x-trimmed-from"]["commit"] == "c" * 40


# --- the check ---------------------------------------------------------------------------------------------


def test_the_check_names_each_parameter_the_operation_does_not_list() -> None:
    description = twilio_api()
    calls = f"/2010-04-01/Accounts/{ACCOUNT}/Calls.json"
    assert description.unlisted("POST", calls, form=["To", "From", "Twiml", "StatusCallbackEvent"]) == []
    assert description.unlisted("POST", calls, form=["To", "StatusCallbackEvents", "StatusCallbackEvents"]) == [
        "POST /2010-04-01/Accounts/{AccountSid}/Calls.json: form parameter 'StatusCallbackEvents' is not one it lists"
    ]
    numbers = f"/2010-04-01/Accounts/{ACCOUNT}/IncomingPhoneNumbers.json"
    assert description.unlisted("GET", numbers, query=["PhoneNumber"]) == []
    assert description.unlisted("GET", numbers, query=["Number"])[0].endswith(
        "query parameter 'Number' is not one it lists"
    )
    [unknown] = description.unlisted("DELETE", f"/2010-04-01/Accounts/{ACCOUNT}/Calls/{CALL}.json")
    assert unknown.startswith("DELETE ") and "trim_description.py" in unknown
    assert description.operation("POST", f"/2010-04-01/Accounts/{ACCOUNT}/Calls/{CALL}.json/x") is None


async def test_every_request_the_product_makes_carries_only_listed_parameters() -> None:
    """Each REST path of the product, through the real SDK onto a recording transport: hang-up, redirect (cold
    transfer, hold, join, bring back), the person's call, ``voicebot call`` with AMD, ``voicebot setup``."""
    http = RecordingHttpClient(201, {"sid": CALL, "account_sid": ACCOUNT, "status": "queued"})
    control = TwilioCallsApi(ACCOUNT, TOKEN, http_client=http)
    await control.hang_up(CALL)
    await control.redirect(CALL, "<Response><Dial><Number>+15557654321</Number></Dial></Response>")
    await control.dial("+15557654321", "+15550002222", "<Response/>", "https://bot.example.com/status/t", 25)
    client = rest_client(ACCOUNT, TOKEN, http_client=http)
    amd = "https://bot.example.com/status/amd"
    await place_call(
        client,
        to="+14155550123",
        from_="+15550002222",
        stream_url="wss://bot.example.com/media-stream",
        parameters={"campaign": "renewal"},
        status_callback="https://bot.example.com/status/call",
        machine_detection=True,
        amd_callback=amd,
    )
    lookup = f"{API}/Accounts/{ACCOUNT}/IncomingPhoneNumbers.json"
    number = {"sid": NUMBER_SID, "phone_number": "+15550002222", "voice_application_sid": "AP" + "9" * 32}
    http.script("GET", lookup, Reply(200, {"incoming_phone_numbers": [number], "next_page_uri": None}))
    http.script("POST", f"{API}/Accounts/{ACCOUNT}/IncomingPhoneNumbers/{NUMBER_SID}.json", Reply(200, number))
    await configure_number(client, "+15550002222", "https://bot.example.com/twiml", "https://bot.example.com/s")

    seen = [(r["method"], urlsplit(r["url"]).path, list(r["params"] or {}), list(r["form"])) for r in http.requests]
    assert len(seen) == 6 and {path.rsplit("/", 1)[-1] for _, path, _, _ in seen} >= {"Calls.json", f"{CALL}.json"}
    problems = [problem for request in seen for problem in twilio_api().unlisted(*request)]
    assert problems == []


async def test_the_local_twilio_api_refuses_a_parameter_the_description_does_not_list() -> None:
    async with LocalTwilioApi(ACCOUNT, TOKEN) as twilio, aiohttp.ClientSession() as session:
        form = {"To": "+14155550123", "From": "+15550002222", "Twiml": "<Response/>", "StatusCallbackEvents": "ringing"}
        path = f"/2010-04-01/Accounts/{ACCOUNT}/Calls.json"
        async with session.post(twilio.url + path, data=form, auth=aiohttp.BasicAuth(ACCOUNT, TOKEN)) as response:
            body = await response.json()
    assert response.status == 400 and "'StatusCallbackEvents' is not one it lists" in body["message"]
    assert twilio.calls == {}  # nothing was placed


# --- what Prism makes of the copy's changes -----------------------------------------------------------------


async def test_prism_needs_the_array_encoding_and_the_empty_voice_application(tmp_path: Path) -> None:
    """Without the copy's two changes Prism refuses what the SDK sends; with them it accepts it."""
    unchanged = copy()
    form = "application/x-www-form-urlencoded"
    for item in unchanged["paths"].values():
        for operation in item.values():
            media = operation.get("requestBody", {}).get("content", {}).get(form)
            if media is not None:
                media.pop("encoding", None)
                properties = media["schema"]["properties"]
                if "anyOf" in properties.get("VoiceApplicationSid", {}):
                    properties["VoiceApplicationSid"] = properties["VoiceApplicationSid"]["anyOf"][0]
    (tmp_path / "unchanged.json").write_text(json.dumps(unchanged))
    call = [("To", "+1415"), ("From", "+1555"), ("Twiml", "<Response/>")]
    call += [("StatusCallbackEvent", "initiated"), ("StatusCallbackEvent", "completed")]
    requests = {
        f"/2010-04-01/Accounts/{ACCOUNT}/Calls.json": call,
        f"/2010-04-01/Accounts/{ACCOUNT}/IncomingPhoneNumbers/{NUMBER_SID}.json": [("VoiceApplicationSid", "")],
    }
    answers: dict[str, list[tuple[int, str]]] = {}
    for name, path in (("unchanged", tmp_path / "unchanged.json"), ("copy", DESCRIPTION_PATH)):
        with PrismServer(path) as prism:
            async with aiohttp.ClientSession(auth=aiohttp.BasicAuth(ACCOUNT, TOKEN)) as session:
                for url, fields in requests.items():
                    async with session.post(prism.url + url, data=fields) as response:
                        answers.setdefault(name, []).append((response.status, await response.text()))
    (call_refused, call_why), (number_refused, number_why) = answers["unchanged"]
    assert (call_refused, number_refused) == (422, 422)
    assert "StatusCallbackEvent must be array" in call_why and "VoiceApplicationSid must match pattern" in number_why
    assert [status for status, _ in answers["copy"]] == [201, 200]


def test_a_description_read_from_elsewhere_is_checked_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(
        json.dumps({"info": {}, "paths": {"/a/{Id}.json": {"get": {"parameters": [{"name": "Q", "in": "query"}]}}}})
    )
    description = ApiDescription.read(path)
    assert description.unlisted("GET", "/a/1.json", query=["Q"]) == [] and description.source == {}
    assert description.unlisted("GET", "/a/1.json", query=["R"]) == [
        "GET /a/{Id}.json: query parameter 'R' is not one it lists"
    ]

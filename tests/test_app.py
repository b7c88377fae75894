"""HTTP endpoints: the TwiML Twilio fetches when a call comes in, and health."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

import httpx

from telephony.app import create_app
from telephony.config import Settings

from .conftest import TEST_SETTINGS


def never_called(call):  # pragma: no cover - the HTTP tests open no stream
    raise AssertionError("no agent should be built")


async def post_twiml(settings: Settings, form: dict[str, str], headers: dict[str, str] | None = None) -> httpx.Response:
    app = create_app(settings, agent_factory=never_called)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://internal:8080") as client:
        return await client.post("/twiml", data=form, headers=headers or {})


async def test_twiml_connects_the_call_to_our_stream_with_parameters() -> None:
    form = {"CallSid": "CA123", "From": "+15550001111", "To": "+15550002222", "AccountSid": "AC1", "Extra": "x"}
    response = await post_twiml(TEST_SETTINGS, form)
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/xml")
    root = ET.fromstring(response.text)
    assert root.tag == "Response" and [child.tag for child in root] == ["Connect"]  # nothing after: close = hang up
    stream = root.find("Connect/Stream")
    assert stream is not None and stream.get("url") == "wss://bot.example.com/media-stream"
    parameters = {p.get("name"): p.get("value") for p in stream.findall("Parameter")}
    assert parameters == {"From": "+15550001111", "To": "+15550002222", "CallSid": "CA123"}


async def test_twiml_escapes_values() -> None:
    response = await post_twiml(TEST_SETTINGS, {"CallSid": "CA1", "From": '"><Hangup/>&'})
    stream = ET.fromstring(response.text).find("Connect/Stream")
    assert stream is not None
    assert {p.get("name"): p.get("value") for p in stream.findall("Parameter")}["From"] == '"><Hangup/>&'


async def test_without_public_url_the_stream_uses_the_forwarded_host() -> None:
    settings = replace(TEST_SETTINGS, public_url=None)
    response = await post_twiml(settings, {"CallSid": "CA1"}, headers={"X-Forwarded-Host": "abc.ngrok.app"})
    stream = ET.fromstring(response.text).find("Connect/Stream")
    assert stream is not None and stream.get("url") == "wss://abc.ngrok.app/media-stream"


async def test_health() -> None:
    app = create_app(TEST_SETTINGS, agent_factory=never_called)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        response = await client.get("/health")
    assert response.json() == {"status": "ok", "calls": 0, "server_calls": 0}


async def test_characters_xml_cannot_hold_are_dropped_not_echoed_into_broken_twiml() -> None:
    response = await post_twiml(TEST_SETTINGS, {"CallSid": "\x1fCA1\x00", "From": "+1555\x0b0001111"})
    stream = ET.fromstring(response.text).find("Connect/Stream")
    assert stream is not None
    assert {p.get("name"): p.get("value") for p in stream.findall("Parameter")} == {
        "CallSid": "CA1",
        "From": "+15550001111",
    }

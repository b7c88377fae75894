"""`voicebot call` and `voicebot setup` against a fake Twilio REST API, and the dialled stream's token."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from telephony.bridge.session import DIAL_PARAMETER
from telephony.cli import main
from telephony.twilio.rest import rest_client
from telephony.twilio.security import PARAMETER_NAME, CallTokens, token_secret

from ..fakes.twilio_http import API, RecordingHttpClient, Reply
from .test_numbers import ACCOUNT, LIST_URL, NUMBER, NUMBER_URL, number, page

ENV = {
    "TWILIO_ACCOUNT_SID": ACCOUNT,
    "TWILIO_AUTH_TOKEN": "cli-token",
    "PUBLIC_URL": "https://bot.example.com",
    "TWILIO_PHONE_NUMBER": NUMBER,
}


@pytest.fixture
def twilio(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> RecordingHttpClient:
    monkeypatch.chdir(tmp_path)
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    http = RecordingHttpClient()
    monkeypatch.setattr("telephony.cli.rest_client", lambda sid, token: rest_client(sid, token, http_client=http))
    return http


def stream_of(request: dict[str, Any]) -> ET.Element:
    stream = ET.fromstring(request["data"]["Twiml"]).find("Connect/Stream")
    assert stream is not None
    return stream


def test_call_dials_out_with_inline_twiml_and_a_token_the_server_accepts(
    twilio: RecordingHttpClient, capsys: pytest.CaptureFixture[str]
) -> None:
    twilio.script("POST", f"{API}/Accounts/{ACCOUNT}/Calls.json", Reply(201, {"sid": "CA" + "5" * 32}))
    assert main(["call", "+14155550123", "--param", "purpose=confirm the booking", "--machine-detection"]) == 0
    [request] = twilio.requests
    assert request["data"]["To"] == "+14155550123" and request["data"]["From"] == NUMBER
    assert request["data"]["MachineDetection"] == "Enable"
    assert request["data"]["AsyncAmdStatusCallback"] == "https://bot.example.com/status/amd"
    assert request["data"]["StatusCallback"] == "https://bot.example.com/status/call"
    stream = stream_of(request)
    assert stream.get("url") == "wss://bot.example.com/media-stream"
    parameters = {p.get("name"): p.get("value") for p in stream.findall("Parameter")}
    assert parameters["purpose"] == "confirm the booking" and parameters["To"] == "+14155550123"
    tokens = CallTokens(token_secret("cli-token", None))  # what every server replica derives
    tokens.verify(parameters[PARAMETER_NAME], f"dial:{parameters[DIAL_PARAMETER]}")
    assert "CA" + "5" * 32 in capsys.readouterr().out
    assert twilio.closed


def test_call_without_credentials_names_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    assert main(["call", "+14155550123"]) == 1
    assert "TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN, PUBLIC_URL not set" in capsys.readouterr().err


def test_call_rejects_a_bad_number_before_calling_twilio(
    twilio: RecordingHttpClient, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["call", "555-1234"]) == 1
    assert "E.164" in capsys.readouterr().err and twilio.requests == []


def test_setup_points_the_number_at_the_bot(twilio: RecordingHttpClient, capsys: pytest.CaptureFixture[str]) -> None:
    twilio.script("GET", LIST_URL, page(number()))
    twilio.script("POST", NUMBER_URL, Reply(200, number(voice_url="https://bot.example.com/twiml")))
    assert main(["setup"]) == 0
    update = twilio.requests[-1]
    assert update["method"] == "POST" and update["url"] == NUMBER_URL
    assert update["data"]["VoiceUrl"] == "https://bot.example.com/twiml"
    assert update["data"]["StatusCallback"] == "https://bot.example.com/status/call"
    out = capsys.readouterr().out
    assert NUMBER in out and "https://bot.example.com/twiml" in out

"""VOICEBOT_TWILIO_API_URL and the local Twilio REST API: the real SDK, over a real socket, on 127.0.0.1 only."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from twilio.base.exceptions import TwilioRestException
from twilio.http.async_http_client import AsyncTwilioHttpClient
from twilio.http.response import Response

from telephony.cli import main
from telephony.config import ConfigError, Settings, load_settings
from telephony.simulation.local_twilio.api import LocalTwilioApi
from telephony.twilio.calls_api import TwilioCallsApi
from telephony.twilio.rest import TimedAsyncHttpClient, rest_client

from ..conftest import TEST_SETTINGS

ACCOUNT = "AC" + "7" * 32
TOKEN = "local-token"
CALL = "CA" + "e" * 32
NUMBER = "+15551230000"
CALL_PATH = f"/2010-04-01/Accounts/{ACCOUNT}/Calls/{CALL}.json"
ROOT = Path(__file__).resolve().parents[2]


def pairs(form: Any) -> list[tuple[str, str]]:
    return [tuple(pair) for pair in form]


# --- call control through the SDK's own HTTP layer ----------------------------------------------------------


async def test_hang_up_reaches_the_local_api_through_the_sdk() -> None:
    async with LocalTwilioApi(ACCOUNT, TOKEN) as twilio:
        control = TwilioCallsApi(ACCOUNT, TOKEN, api_url=twilio.url)
        try:
            await control.hang_up(CALL)
        finally:
            await control.aclose()
        [request] = twilio.requests
        assert (request.method, request.path, request.status) == ("POST", CALL_PATH, 200)
        assert request.form == [("Status", "completed")] and request.query == []
        assert twilio.calls[CALL].status == "completed"


async def test_a_call_that_is_already_over_answers_20404_and_hanging_it_up_is_fine() -> None:
    async with LocalTwilioApi(ACCOUNT, TOKEN) as twilio:
        twilio.end(CALL)
        control = TwilioCallsApi(ACCOUNT, TOKEN, api_url=twilio.url)
        try:
            await control.hang_up(CALL)  # the caller hung up first: not an error
            with pytest.raises(TwilioRestException) as error:
                await control.redirect(CALL, "<Response><Hangup/></Response>")
        finally:
            await control.aclose()
        assert (error.value.status, error.value.code) == (404, 20404)
        assert [r.status for r in twilio.requests] == [404, 404]


async def test_a_wrong_token_is_refused_and_changes_nothing() -> None:
    async with LocalTwilioApi(ACCOUNT, TOKEN) as twilio:
        control = TwilioCallsApi(ACCOUNT, "not-the-token", api_url=twilio.url)
        try:
            with pytest.raises(TwilioRestException) as error:
                await control.hang_up(CALL)
        finally:
            await control.aclose()
        assert (error.value.status, error.value.code) == (401, 20003)
        assert [r.status for r in twilio.requests] == [401] and CALL not in twilio.calls


async def test_warm_transfer_requests_dial_redirect_and_hang_up_the_person() -> None:
    async with LocalTwilioApi(ACCOUNT, TOKEN) as twilio:
        control = TwilioCallsApi(ACCOUNT, TOKEN, api_url=twilio.url)
        try:
            person = await control.dial("+15550009999", NUMBER, "<Response/>", "https://bot.example.com/s", 25)
            await control.redirect(CALL, "<Response><Dial><Conference>room</Conference></Dial></Response>")
            await control.hang_up(person)
        finally:
            await control.aclose()
        create = twilio.requests[0]
        assert create.path == f"/2010-04-01/Accounts/{ACCOUNT}/Calls.json" and create.status == 201
        assert create.value("To") == "+15550009999" and create.value("Timeout") == "25"
        events = [value for name, value in create.form if name == "StatusCallbackEvent"]
        assert events == ["initiated", "ringing", "answered", "completed"]
        assert twilio.calls[person].direction == "outbound-api" and twilio.calls[person].status == "completed"
        assert twilio.calls[CALL].instructions == [
            ("Twiml", "<Response><Dial><Conference>room</Conference></Dial></Response>")
        ]
        assert [r.status for r in twilio.requests] == [201, 200, 200]


async def test_unknown_paths_answer_404_and_are_recorded() -> None:
    async with LocalTwilioApi(ACCOUNT, TOKEN) as twilio:
        auth = {"Authorization": "Basic " + base64.b64encode(f"{ACCOUNT}:{TOKEN}".encode()).decode()}
        async with aiohttp.ClientSession() as session:
            path = f"/2010-04-01/Accounts/{ACCOUNT}/Queues.json"
            async with session.get(twilio.url + path, headers=auth) as response:
                body = await response.json()
        assert response.status == 404 and body["code"] == 20404 and body["status"] == 404
        assert path in body["message"] and body["more_info"].endswith("/20404")
        assert [(r.method, r.path, r.status) for r in twilio.requests] == [("GET", path, 404)]


@pytest.mark.parametrize(
    "header", [None, "Basic !!!", "Bearer " + TOKEN, "Basic " + base64.b64encode("é:ü".encode()).decode()]
)
async def test_requests_without_the_accounts_credentials_answer_401(header: str | None) -> None:
    async with LocalTwilioApi(ACCOUNT, TOKEN) as twilio, aiohttp.ClientSession() as session:
        headers = {"Authorization": header} if header else {}
        async with session.post(twilio.url + CALL_PATH, data={"Status": "completed"}, headers=headers) as response:
            body = await response.json()
        assert response.status == 401 and body["code"] == 20003 and response.headers["WWW-Authenticate"]
        assert [(r.path, r.form, r.status) for r in twilio.requests] == [(CALL_PATH, [("Status", "completed")], 401)]
        assert CALL not in twilio.calls


# --- where requests go -------------------------------------------------------------------------------------


class NotSent(AsyncTwilioHttpClient):
    """Sits under TimedAsyncHttpClient in the MRO: keeps the URL it would send to, sends nothing."""

    urls: list[str]

    async def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Response:
        self.urls.append(url)
        return Response(200, json.dumps({"sid": CALL, "account_sid": ACCOUNT, "status": "completed"}))


class Recorded(TimedAsyncHttpClient, NotSent):
    def __init__(self, api_url: str | None = None) -> None:
        super().__init__(timeout=1.0, api_url=api_url)
        self.urls = []


@pytest.mark.parametrize(
    "api_url, sent_to",
    [
        (None, f"https://api.twilio.com{CALL_PATH}"),
        ("http://127.0.0.1:4010", f"http://127.0.0.1:4010{CALL_PATH}"),
        ("http://127.0.0.1:4010/", f"http://127.0.0.1:4010{CALL_PATH}"),
    ],
)
async def test_unset_requests_still_go_to_api_twilio_com(api_url: str | None, sent_to: str) -> None:
    http = Recorded(api_url)
    control = TwilioCallsApi(ACCOUNT, TOKEN, http_client=http)
    try:
        await control.hang_up(CALL)
    finally:
        await control.aclose()
    assert http.urls == [sent_to]


async def test_only_twilio_hosts_are_rewritten_keeping_path_and_query() -> None:
    http = TimedAsyncHttpClient(api_url="http://127.0.0.1:4010")
    plain = TimedAsyncHttpClient()
    try:
        path = "/2010-04-01/Accounts/AC1/IncomingPhoneNumbers.json?PhoneNumber=%2B1"
        regional = f"https://api.dublin.us1.twilio.com{path}"
        assert http.routed(regional) == f"http://127.0.0.1:4010{path}"
        for url in ("https://example.com/x", "https://eviltwilio.com/x", "http://api.twilio.com/x"):
            assert http.routed(url) == url
        assert plain.routed(regional) == regional
    finally:
        await http.close()
        await plain.close()


async def test_rest_client_passes_api_url_on_and_refuses_it_with_a_transport_of_your_own() -> None:
    client = rest_client(ACCOUNT, TOKEN, api_url="http://127.0.0.1:4010")
    default = rest_client(ACCOUNT, TOKEN)
    try:
        assert client.http_client.api_url == "http://127.0.0.1:4010"
        assert default.http_client.api_url is None
        with pytest.raises(ValueError, match="not both"):
            rest_client(ACCOUNT, TOKEN, http_client=client.http_client, api_url="http://127.0.0.1:4010")
        with pytest.raises(ValueError, match=r"e\.g\. http://127\.0\.0\.1:4010"):
            TimedAsyncHttpClient(api_url="127.0.0.1:4010")
    finally:
        await client.http_client.close()
        await default.http_client.close()


# --- configuration -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["http://127.0.0.1:4010", "http://127.0.0.1:4010/", "https://twilio-mock.test:8443"])
def test_a_bare_http_base_is_accepted(url: str) -> None:
    assert load_settings({"VOICEBOT_TWILIO_API_URL": url}, dotenv=None).twilio_api_url == url


@pytest.mark.parametrize(
    "url",
    ["127.0.0.1:4010", "ftp://127.0.0.1:4010", "http://", "http://127.0.0.1:4010/2010-04-01", "http://h:1/?x=1"],
)
def test_anything_else_is_refused_with_an_example(url: str) -> None:
    with pytest.raises(ConfigError, match=r"VOICEBOT_TWILIO_API_URL=.*http://127\.0\.0\.1:4010"):
        load_settings({"VOICEBOT_TWILIO_API_URL": url}, dotenv=None)


def test_unset_by_default() -> None:
    assert load_settings({}, dotenv=None).twilio_api_url is None and Settings().twilio_api_url is None


@pytest.mark.parametrize("api_url", [None, "http://127.0.0.1:4010"])
def test_the_app_passes_it_to_its_call_control_and_warns(
    api_url: str | None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from telephony.app import create_app

    made: list[dict[str, Any]] = []

    class Control(TwilioCallsApi):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made.append(kwargs)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr("telephony.app.TwilioCallsApi", Control)
    settings = replace(TEST_SETTINGS, twilio_account_sid=ACCOUNT, twilio_auth_token=TOKEN, twilio_api_url=api_url)
    with caplog.at_level(logging.WARNING, logger="telephony.app"):
        create_app(settings, agent_factory=lambda call: None)  # type: ignore[arg-type, return-value]
    assert made == [{"api_url": api_url}]
    warned = [r.getMessage() for r in caplog.records if "VOICEBOT_TWILIO_API_URL" in r.getMessage()]
    expected = f"VOICEBOT_TWILIO_API_URL is set: Twilio REST requests go to {api_url}, not Twilio (for local mocks"
    assert warned == ([expected + " and tests only)"] if api_url else [])


# --- the CLI, with the environment variable ----------------------------------------------------------------


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    monkeypatch.chdir(tmp_path)
    env = {"TWILIO_ACCOUNT_SID": ACCOUNT, "TWILIO_AUTH_TOKEN": TOKEN, "PUBLIC_URL": "https://bot.example.com"}
    for name, value in {**env, "TWILIO_PHONE_NUMBER": NUMBER}.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


async def test_voicebot_call_reaches_the_local_api(
    cli_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async with LocalTwilioApi(ACCOUNT, TOKEN) as twilio:
        cli_env.setenv("VOICEBOT_TWILIO_API_URL", twilio.url)
        assert await asyncio.to_thread(main, ["call", "+14155550123"]) == 0  # main runs its own event loop
        [create] = twilio.requests
        [call] = twilio.calls.values()
    assert (create.method, create.path, create.status) == ("POST", f"/2010-04-01/Accounts/{ACCOUNT}/Calls.json", 201)
    assert create.value("To") == "+14155550123" and create.value("From") == NUMBER
    assert call.instructions[0][0] == "Twiml" and "wss://bot.example.com/media-stream" in call.instructions[0][1]
    assert call.sid in capsys.readouterr().out


async def test_voicebot_setup_reaches_the_local_api(
    cli_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async with LocalTwilioApi(ACCOUNT, TOKEN, numbers=[NUMBER, NUMBER + "1"]) as twilio:
        cli_env.setenv("VOICEBOT_TWILIO_API_URL", twilio.url)
        assert await asyncio.to_thread(main, ["setup"]) == 0
        lookup, update = twilio.requests
        number = next(n for n in twilio.numbers.values() if n.phone_number == NUMBER)
        other = next(n for n in twilio.numbers.values() if n.phone_number != NUMBER)
    assert (lookup.method, lookup.query, lookup.status) == ("GET", [("PhoneNumber", NUMBER)], 200)
    assert (update.method, update.path, update.status) == (
        "POST",
        f"/2010-04-01/Accounts/{ACCOUNT}/IncomingPhoneNumbers/{number.sid}.json",
        200,
    )
    assert number.fields["voice_url"] == "https://bot.example.com/twiml"
    assert number.fields["status_callback"] == "https://bot.example.com/status/call"
    assert other.fields["voice_url"] != "https://bot.example.com/twiml"
    assert "https://bot.example.com/twiml" in capsys.readouterr().out


# --- in its own process ------------------------------------------------------------------------------------


async def test_in_its_own_process_it_prints_its_url_logs_each_request_and_stops_on_sigterm(tmp_path: Path) -> None:
    log = tmp_path / "twilio.jsonl"
    command = ["-m", "telephony.simulation.local_twilio_api", "--account", ACCOUNT, "--token", TOKEN, "--log", str(log)]
    process = await asyncio.create_subprocess_exec(sys.executable, *command, cwd=ROOT, stdout=asyncio.subprocess.PIPE)
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode().strip()
        name, _, url = line.partition("=")
        assert name == "LOCAL_TWILIO_API" and url.startswith("http://127.0.0.1:")
        control = TwilioCallsApi(ACCOUNT, TOKEN, api_url=url)
        try:
            await control.hang_up(CALL)
        finally:
            await control.aclose()
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 10) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    [entry] = [json.loads(text) for text in log.read_text().splitlines()]
    assert (entry["method"], entry["path"], entry["status"]) == ("POST", CALL_PATH, 200)
    assert pairs(entry["form"]) == [("Status", "completed")] and entry["at"] > 0

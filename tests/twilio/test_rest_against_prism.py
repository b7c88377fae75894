"""Every REST request the bot makes, judged by Twilio's own API description: the product's code, the real Twilio
SDK and ``VOICEBOT_TWILIO_API_URL`` pointing at Prism (``prism mock``, validating each request against the trimmed
copy in ``telephony/simulation/local_twilio/``), with a recording proxy in between (``prism.py``).

Each test fails on any 4xx from Prism, quoting its reasons, and on any parameter the description does not list
for the operation (Prism lets unknown names through; ``JudgedTwilio.problems`` does not). Calls that must go on
after a request (a hang-up, the transfers) are answered by the fake Twilio behind the proxy once Prism has
accepted each request; ``voicebot call`` and ``voicebot setup`` get Prism's own answers (Twilio's examples).
"""

from __future__ import annotations

import asyncio
import json
import logging
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest

from telephony.cli import main
from telephony.simulation.local_twilio.api import LocalTwilioApi
from telephony.simulation.local_twilio.api_description import DESCRIPTION_PATH
from telephony.twilio.calls_api import TwilioCallsApi
from telephony.twilio.rest import TimedAsyncHttpClient
from tests.fakes.twilio_calls import FakeTwilio

from ..bridge.test_warm_transfer import (
    ACCOUNT,
    BACK_TONE,
    BRIEF_AND_WAIT,
    BRIEF_TONE,
    CALLER,
    CALLER_NUMBER,
    OUR_NUMBER,
    PERSON_NUMBER,
    TOKEN,
    hearing,
    tones,
    warm_line,
)
from ..fakes.model import CallTool, Hold, Say
from ..waiting import until
from .prism import Exchange, JudgedTwilio, PrismServer

API = f"/2010-04-01/Accounts/{ACCOUNT}"
GOODBYE: list = [Say("Goodbye then", 0.4, tone_hz=1000), CallTool("end_conversation", {"reason": "done"}), Hold()]


@pytest.fixture(scope="module")
def prism() -> Iterator[PrismServer]:
    """One Prism for the module (it starts in about a second); the tests share it, never its proxy."""
    with PrismServer() as server:
        yield server


@pytest.fixture
async def judged(prism: PrismServer) -> AsyncIterator[JudgedTwilio]:
    async with JudgedTwilio(prism.url) as proxy:
        yield proxy


def sent(judged: JudgedTwilio) -> list[tuple[str, str, list[str]]]:
    """(method, path, form names) of each request, in order: what the bot asked of Twilio."""
    return [(e.method, e.path, [name for name, _ in e.form]) for e in judged.exchanges]


def updates_of(judged: JudgedTwilio, call_sid: str) -> list[Exchange]:
    return [e for e in judged.exchanges if e.path == f"{API}/Calls/{call_sid}.json"]


# --- hanging up ---------------------------------------------------------------------------------------------


async def test_the_bot_hangs_up_a_call_through_prism(judged: JudgedTwilio) -> None:
    with judged.explains_failures():
        async with warm_line([], caller=GOODBYE, twilio_api=judged.in_front_of) as line:
            call = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
            await asyncio.wait_for(call.over.wait(), 10)
    assert call.status == "completed" and hearing(call) == ["bot", "nothing"]
    assert sent(judged) == [("POST", f"{API}/Calls/{CALLER}.json", ["Status"])]
    assert judged.exchanges[0].value("Status") == "completed" and judged.exchanges[0].prism_status == 200
    judged.assert_clean()


async def test_a_call_already_over_is_hung_up_without_an_error(
    judged: JudgedTwilio, caplog: pytest.LogCaptureFixture
) -> None:
    judged.in_front_of(FakeTwilio("https://bot.example.com", TOKEN, ACCOUNT))  # it knows no call: 404 / 20404
    control = TwilioCallsApi(ACCOUNT, TOKEN, api_url=judged.url)
    try:
        with caplog.at_level(logging.INFO, logger="telephony.twilio.calls_api"):
            await control.hang_up(CALLER)  # the caller hung up first: not an error
    finally:
        await control.aclose()
    [exchange] = judged.exchanges
    assert (exchange.prism_status, exchange.status) == (200, 404)  # a valid request; Twilio's answer for a call over
    assert f"call={CALLER} | already ended (Twilio 20404)" in caplog.messages
    judged.assert_clean()


# --- transfers ----------------------------------------------------------------------------------------------


async def test_a_cold_transfer_moves_the_call_to_a_dial_through_prism(judged: JudgedTwilio) -> None:
    with judged.explains_failures():
        async with warm_line([], transfer_mode="cold", twilio_api=judged.in_front_of) as line:
            call = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
            await until(lambda: call.hearing.startswith("dial:"), 10)
            await until(lambda: not line.app.state.sessions, 5)
    assert hearing(call) == ["bot", f"dial:{PERSON_NUMBER}"]
    [redirect] = judged.exchanges
    assert (redirect.method, redirect.path, [name for name, _ in redirect.form]) == (
        "POST",
        f"{API}/Calls/{CALLER}.json",
        ["Twiml"],
    )
    assert ET.fromstring(redirect.value("Twiml") or "").findtext("Dial/Number") == PERSON_NUMBER
    judged.assert_clean()


async def test_a_warm_transfer_holds_dials_and_joins_through_prism(judged: JudgedTwilio) -> None:
    with judged.explains_failures():
        async with warm_line(BRIEF_AND_WAIT, twilio_api=judged.in_front_of) as line:
            caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
            await until(line.has_person, 10)
            person = line.person()
            await until(lambda: person.streams and BRIEF_TONE in tones(person), 10)
            await person.stream.dtmf("1")
            await until(lambda: caller.hearing == "conference" and person.hearing == "conference", 10)
            await line.twilio.settle()
    hold, dial, join = judged.exchanges
    assert (hold.path, hold.form[0][0]) == (f"{API}/Calls/{CALLER}.json", "Twiml")
    assert ET.fromstring(hold.value("Twiml") or "").find("Dial/Conference") is not None
    assert dial.path == f"{API}/Calls.json" and dial.prism_status == 201
    assert dial.values("StatusCallbackEvent") == ["initiated", "ringing", "answered", "completed"]  # repeated
    assert {"To", "From", "Twiml", "Timeout", "StatusCallback", "StatusCallbackMethod"} <= {n for n, _ in dial.form}
    assert join.path == f"{API}/Calls/{person.sid}.json" and join.value("Twiml") == person.twimls[-1]
    judged.assert_clean()


async def test_a_declined_warm_transfer_hangs_up_the_person_and_brings_the_caller_back_through_prism(
    judged: JudgedTwilio,
) -> None:
    with judged.explains_failures():
        async with warm_line(BRIEF_AND_WAIT, twilio_api=judged.in_front_of) as line:
            caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
            await until(line.has_person, 10)
            person = line.person()
            await until(lambda: person.streams and BRIEF_TONE in tones(person), 10)
            await person.stream.dtmf("2")
            await until(lambda: len(caller.streams) == 2 and BACK_TONE in tones(caller), 10)
            await caller.stream.stop()
    forms = [dict(e.form) for e in updates_of(judged, person.sid)]
    assert {"Status": "completed"} in forms  # the person's call was ended over REST
    back = ET.fromstring(updates_of(judged, CALLER)[-1].value("Twiml") or "").find("Connect/Stream")
    assert back is not None and person.status == "completed"
    judged.assert_clean()


# --- the CLI ------------------------------------------------------------------------------------------------


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path, judged: JudgedTwilio) -> pytest.MonkeyPatch:
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    env = {
        "TWILIO_ACCOUNT_SID": ACCOUNT,
        "TWILIO_AUTH_TOKEN": TOKEN,
        "TWILIO_PHONE_NUMBER": OUR_NUMBER,
        "PUBLIC_URL": "https://bot.example.com",
        "VOICEBOT_TWILIO_API_URL": judged.url,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


async def test_voicebot_call_with_machine_detection_through_prism(
    cli_env: pytest.MonkeyPatch, judged: JudgedTwilio, capsys: pytest.CaptureFixture[str]
) -> None:
    with judged.explains_failures():
        assert await asyncio.to_thread(main, ["call", "+14155550123", "--machine-detection"]) == 0
    [create] = judged.exchanges
    assert (create.method, create.path, create.prism_status) == ("POST", f"{API}/Calls.json", 201)
    assert (create.value("MachineDetection"), create.value("AsyncAmd")) == ("Enable", "true")
    assert create.value("AsyncAmdStatusCallback") == "https://bot.example.com/status/amd"
    assert create.values("StatusCallbackEvent") == ["initiated", "ringing", "answered", "completed"]
    assert "wss://bot.example.com/media-stream" in (create.value("Twiml") or "")
    judged.assert_clean()
    call_sid = json.loads(create.prism_body)["sid"]  # Prism answers with Twilio's example call
    out, err = capsys.readouterr()
    assert call_sid in out
    assert f"VOICEBOT_TWILIO_API_URL is set: Twilio REST requests go to {judged.url}, not Twilio" in err


def example_number() -> dict[str, str]:
    """The number in Twilio's own example answer to the number lookup (Prism answers with the first example)."""
    description = json.loads(DESCRIPTION_PATH.read_text())
    lookup = description["paths"]["/2010-04-01/Accounts/{AccountSid}/IncomingPhoneNumbers.json"]["get"]
    example = next(iter(lookup["responses"]["200"]["content"]["application/json"]["examples"].values()))
    return example["value"]["incoming_phone_numbers"][0]


async def test_voicebot_setup_through_prism(
    cli_env: pytest.MonkeyPatch, judged: JudgedTwilio, capsys: pytest.CaptureFixture[str]
) -> None:
    number = example_number()
    cli_env.setenv("TWILIO_PHONE_NUMBER", number["phone_number"])
    with judged.explains_failures():
        assert await asyncio.to_thread(main, ["setup"]) == 0
    lookup, update = judged.exchanges
    assert (lookup.method, lookup.path, lookup.query) == (
        "GET",
        f"{API}/IncomingPhoneNumbers.json",
        [("PhoneNumber", number["phone_number"])],
    )
    assert (update.method, update.path) == ("POST", f"{API}/IncomingPhoneNumbers/{number['sid']}.json")
    assert update.value("VoiceUrl") == "https://bot.example.com/twiml"
    assert update.value("StatusCallback") == "https://bot.example.com/status/call"
    judged.assert_clean()
    assert "https://bot.example.com/twiml" in capsys.readouterr().out


async def test_voicebot_setup_detaching_a_voice_application_through_prism(
    cli_env: pytest.MonkeyPatch, judged: JudgedTwilio
) -> None:
    application = "AP" + "5" * 32
    async with LocalTwilioApi(ACCOUNT, TOKEN) as twilio:
        number = twilio.add_number(OUR_NUMBER, voice_application_sid=application)
        backend = TimedAsyncHttpClient(timeout=5.0, api_url=twilio.url)
        judged.in_front_of(backend)
        try:
            with judged.explains_failures():
                assert await asyncio.to_thread(main, ["setup"]) == 0
        finally:
            await backend.close()
    _, update = judged.exchanges
    assert update.value("VoiceApplicationSid") == "" and update.prism_status == 200
    assert number.fields["voice_application_sid"] is None  # detached: the voice URL applies now
    judged.assert_clean()


# --- the judge can fail ---------------------------------------------------------------------------------------


async def test_what_the_description_refuses_or_does_not_list_is_reported_with_the_reasons(
    judged: JudgedTwilio,
) -> None:
    auth = aiohttp.BasicAuth(ACCOUNT, TOKEN)
    async with aiohttp.ClientSession(auth=auth) as session:
        for path, form in (
            (f"{API}/Calls/{CALLER}.json", {"Status": "finished"}),
            (f"{API}/Calls.json", {"To": "+1", "From": "+2", "Twiml": "<Response/>", "StatusCallbackEvents": "x"}),
            (f"{API}/Queues.json", {"FriendlyName": "q"}),
        ):
            async with session.post(judged.url + path, data=form) as response:
                await response.read()
    refused, misspelt, unknown = judged.exchanges
    assert unknown.prism_status == 404  # Prism knows no such path either
    assert refused.prism_status == 422 and misspelt.prism_status == 201  # Prism cannot see an unknown name
    problems = judged.problems()
    assert any("Prism answered 422" in p and "body.Status" in p and "allowed values" in p for p in problems)
    assert f"POST {API.replace(ACCOUNT, '{AccountSid}')}/Calls.json: form parameter 'StatusCallbackEvents'" in (
        "\n".join(problems)
    )
    assert any(p.startswith(f"POST {API}/Queues.json is no operation") for p in problems)
    with pytest.raises(AssertionError, match="do not fit Twilio's API description"):
        judged.assert_clean()

"""Configuring a phone number through the real Twilio SDK, against a fake HTTP transport (no network)."""

from __future__ import annotations

from typing import Any

import pytest
from twilio.rest import Client

from telephony.twilio.numbers import NumberChange, NumberNotFound, configure_number
from telephony.twilio.rest import rest_client

from ..fakes.twilio_http import API, RecordingHttpClient, Reply

ACCOUNT = "AC" + "3" * 32
NUMBER = "+15551234567"
SID = "PN" + "4" * 32
LIST_URL = f"{API}/Accounts/{ACCOUNT}/IncomingPhoneNumbers.json"
NUMBER_URL = f"{API}/Accounts/{ACCOUNT}/IncomingPhoneNumbers/{SID}.json"
BOT = "https://bot.example.com/twiml"
STATUS = "https://bot.example.com/status"


def number(phone_number: str = NUMBER, sid: str = SID, **fields: Any) -> dict[str, Any]:
    """An IncomingPhoneNumber as the API returns it; a fresh number has a demo voice URL."""
    record = {
        "sid": sid,
        "account_sid": ACCOUNT,
        "phone_number": phone_number,
        "voice_url": "https://demo.twilio.com/welcome/voice/",
        "voice_method": "POST",
        "status_callback": "",
        "status_callback_method": "POST",
        "voice_application_sid": None,
        "trunk_sid": None,
    }
    return record | fields


def page(*numbers: dict[str, Any], next_page_uri: str | None = None) -> Reply:
    return Reply(
        200, {"incoming_phone_numbers": list(numbers), "next_page_uri": next_page_uri, "page": 0, "page_size": 50}
    )


def fake_twilio(*numbers: dict[str, Any]) -> tuple[Client, RecordingHttpClient]:
    http = RecordingHttpClient().script("GET", LIST_URL, page(*numbers))
    http.script("POST", NUMBER_URL, Reply(200, numbers[0] if numbers else {}))
    return rest_client(ACCOUNT, "token", http_client=http), http


async def test_points_the_number_at_the_bot_and_reports_the_change() -> None:
    client, http = fake_twilio(number())
    changes = await configure_number(client, NUMBER, BOT)

    assert changes == [NumberChange(NUMBER, SID, "voice_url", "https://demo.twilio.com/welcome/voice/", BOT)]
    assert str(changes[0]) == f"{NUMBER} voice_url: https://demo.twilio.com/welcome/voice/ -> {BOT}"
    lookup, update = http.requests
    assert (lookup["method"], lookup["url"]) == ("GET", LIST_URL)
    assert lookup["params"] == {"PhoneNumber": NUMBER}
    assert (update["method"], update["url"]) == ("POST", NUMBER_URL)
    assert update["form"] == {"VoiceUrl": [BOT]}
    assert update["auth"] == (ACCOUNT, "token")


async def test_sets_the_method_and_status_callback_when_they_differ() -> None:
    client, http = fake_twilio(
        number(voice_url=None, voice_method="GET", status_callback=None, status_callback_method="GET")
    )
    changes = await configure_number(client, NUMBER, BOT, status_callback=STATUS)

    assert [(c.field, c.old, c.new) for c in changes] == [
        ("voice_url", None, BOT),
        ("voice_method", "GET", "POST"),
        ("status_callback", None, STATUS),
        ("status_callback_method", "GET", "POST"),
    ]
    assert http.requests[1]["form"] == {
        "VoiceUrl": [BOT],
        "VoiceMethod": ["POST"],
        "StatusCallback": [STATUS],
        "StatusCallbackMethod": ["POST"],
    }


async def test_nothing_to_change_means_no_update() -> None:
    client, http = fake_twilio(number(voice_url=BOT, status_callback=STATUS))
    assert await configure_number(client, NUMBER, BOT, status_callback=STATUS) == []
    assert [r["method"] for r in http.requests] == ["GET"]


async def test_the_status_callback_is_left_alone_unless_given() -> None:
    client, http = fake_twilio(number(voice_url=BOT, status_callback="https://elsewhere.example.com/s"))
    assert await configure_number(client, NUMBER, BOT) == []
    assert len(http.requests) == 1


async def test_a_number_missing_from_the_account_is_a_clear_error() -> None:
    client, http = fake_twilio()
    with pytest.raises(NumberNotFound) as caught:
        await configure_number(client, NUMBER, BOT)
    message = str(caught.value)
    assert message == f"{NUMBER} is not a number in account {ACCOUNT}: buy it or check TWILIO_PHONE_NUMBER"
    assert [r["method"] for r in http.requests] == ["GET"]


async def test_only_the_exact_number_counts() -> None:
    # Twilio's PhoneNumber filter is a partial match: a longer number can come back alone.
    client, http = fake_twilio(number("+155512345678", "PN" + "5" * 32))
    with pytest.raises(NumberNotFound):
        await configure_number(client, NUMBER, BOT)
    assert len(http.requests) == 1


async def test_finds_the_number_on_a_later_page() -> None:
    other = number("+155512345670", "PN" + "5" * 32)
    next_uri = (
        f"/2010-04-01/Accounts/{ACCOUNT}/IncomingPhoneNumbers.json?PhoneNumber=%2B15551234567&Page=1&PageToken=PA1"
    )
    http = RecordingHttpClient().then(
        page(other, next_page_uri=next_uri), page(number()), Reply(200, number(voice_url=BOT))
    )
    client = rest_client(ACCOUNT, "token", http_client=http)

    changes = await configure_number(client, NUMBER, BOT)
    assert [c.sid for c in changes] == [SID]
    assert [(r["method"], r["url"]) for r in http.requests] == [
        ("GET", LIST_URL),
        ("GET", f"https://api.twilio.com{next_uri}"),
        ("POST", NUMBER_URL),
    ]


async def test_a_voice_application_is_detached_because_it_overrides_the_url() -> None:
    client, http = fake_twilio(number(voice_url=BOT, voice_application_sid="AP" + "6" * 32))
    changes = await configure_number(client, NUMBER, BOT)
    assert changes == [NumberChange(NUMBER, SID, "voice_application_sid", "AP" + "6" * 32, "")]
    assert str(changes[0]).endswith("-> (none)")
    assert http.requests[1]["form"] == {"VoiceApplicationSid": [""]}


async def test_a_number_on_a_sip_trunk_is_refused() -> None:
    client, http = fake_twilio(number(trunk_sid="TK" + "7" * 32))
    with pytest.raises(ValueError, match=r"SIP trunk TK7+"):
        await configure_number(client, NUMBER, BOT)
    assert len(http.requests) == 1

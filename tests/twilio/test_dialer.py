"""Outbound calls through the real Twilio SDK, against a fake HTTP transport (no network)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from twilio.base.exceptions import TwilioRestException
from twilio.rest import Client

from telephony.twilio.dialer import MAX_TWIML_CHARS, parse_params, place_call
from telephony.twilio.rest import rest_client
from telephony.twilio.twiml import connect_twiml

from ..fakes.twilio_http import API, RecordingHttpClient, Reply

ACCOUNT = "AC" + "1" * 32
CALL = "CA" + "2" * 32
CALLS_URL = f"{API}/Accounts/{ACCOUNT}/Calls.json"
STREAM = "wss://bot.example.com/media-stream"
TO, FROM = "+14155550123", "+15005550006"


def fake_twilio() -> tuple[Client, RecordingHttpClient]:
    http = RecordingHttpClient().script(
        "POST", CALLS_URL, Reply(201, {"sid": CALL, "account_sid": ACCOUNT, "status": "queued"})
    )
    return rest_client(ACCOUNT, "token", http_client=http), http


def stream_of(twiml: str) -> tuple[str, dict[str, str]]:
    """The Stream URL and Parameters of a ``<Connect><Stream>`` document, checking its shape."""
    root = ET.fromstring(twiml)
    assert root.tag == "Response"
    [connect] = root
    assert connect.tag == "Connect"
    [stream] = connect
    assert stream.tag == "Stream"
    assert all(child.tag == "Parameter" for child in stream)
    return stream.attrib["url"], {p.attrib["name"]: p.attrib["value"] for p in stream}


async def test_place_call_posts_inline_twiml_and_returns_the_sid() -> None:
    client, http = fake_twilio()
    parameters = {"campaign": "renewal-42", "note": 'a <b> & "c"'}
    sid = await place_call(client, to=TO, from_=FROM, stream_url=STREAM, parameters=parameters)

    assert sid == CALL
    [request] = http.requests
    assert (request["method"], request["url"]) == ("POST", CALLS_URL)
    assert request["auth"] == (ACCOUNT, "token")
    form = request["form"]
    assert set(form) == {"To", "From", "Twiml"}
    assert form["To"] == [TO] and form["From"] == [FROM]
    assert stream_of(form["Twiml"][0]) == (STREAM, parameters)


async def test_status_callback_asks_for_every_progress_event() -> None:
    client, http = fake_twilio()
    await place_call(
        client, to=TO, from_=FROM, stream_url=STREAM, parameters={}, status_callback="https://bot.example.com/status"
    )
    form = http.requests[0]["form"]
    assert form["StatusCallback"] == ["https://bot.example.com/status"]
    assert form["StatusCallbackEvent"] == ["initiated", "ringing", "answered", "completed"]
    assert "MachineDetection" not in form


async def test_machine_detection_runs_asynchronously() -> None:
    client, http = fake_twilio()
    await place_call(
        client,
        to=TO,
        from_=FROM,
        stream_url=STREAM,
        parameters={},
        machine_detection=True,
        amd_callback="https://bot.example.com/amd",
    )
    form = http.requests[0]["form"]
    assert form["MachineDetection"] == ["Enable"]
    assert form["AsyncAmd"] == ["true"]
    assert form["AsyncAmdStatusCallback"] == ["https://bot.example.com/amd"]
    assert "StatusCallback" not in form


@pytest.mark.parametrize("machine_detection, amd_callback", [(True, None), (False, "https://bot.example.com/amd")])
async def test_machine_detection_and_its_callback_come_together(
    machine_detection: bool, amd_callback: str | None
) -> None:
    client, http = fake_twilio()
    with pytest.raises(ValueError, match="amd_callback"):
        await place_call(
            client,
            to=TO,
            from_=FROM,
            stream_url=STREAM,
            parameters={},
            machine_detection=machine_detection,
            amd_callback=amd_callback,
        )
    assert http.requests == []


@pytest.mark.parametrize(
    "address", ["+14155550123", "+4930123456", "+123456789012345", "client:alice", "sip:bob@pbx.example.com"]
)
async def test_accepted_addresses(address: str) -> None:
    client, http = fake_twilio()
    await place_call(client, to=address, from_=address, stream_url=STREAM, parameters={})
    assert http.requests[0]["form"]["To"] == [address]


@pytest.mark.parametrize(
    "address",
    [
        "14155550123",
        "+1 415 555 0123",
        "+1-415-555-0123",
        "+1234567",
        "+1234567890123456",
        "+04155550123",
        "client:",
        "sip:bob",
        "tel:+14155550123",
        "",
    ],
)
@pytest.mark.parametrize("field", ["to", "from_"])
async def test_rejected_addresses(field: str, address: str) -> None:
    client, http = fake_twilio()
    addresses = {"to": TO, "from_": FROM, field: address}
    with pytest.raises(ValueError, match=rf"{field}=.*E\.164"):
        await place_call(client, **addresses, stream_url=STREAM, parameters={})
    assert http.requests == []


@pytest.mark.parametrize(
    "url, reason", [("https://bot.example.com/media-stream", "wss://"), (STREAM + "?call=1", "query string")]
)
async def test_stream_url_must_be_wss_without_query(url: str, reason: str) -> None:
    client, http = fake_twilio()
    with pytest.raises(ValueError, match=reason):
        await place_call(client, to=TO, from_=FROM, stream_url=url, parameters={})
    assert http.requests == []


async def test_unsafe_parameter_names_are_refused() -> None:
    client, http = fake_twilio()
    with pytest.raises(ValueError, match="letters, digits"):
        await place_call(client, to=TO, from_=FROM, stream_url=STREAM, parameters={"bad name": "x"})
    assert http.requests == []


async def test_twiml_may_be_4000_characters_but_not_one_more() -> None:
    padding = MAX_TWIML_CHARS - len(connect_twiml(STREAM, {"pad": ""}))
    assert len(connect_twiml(STREAM, {"pad": "x" * padding})) == MAX_TWIML_CHARS

    client, http = fake_twilio()
    await place_call(client, to=TO, from_=FROM, stream_url=STREAM, parameters={"pad": "x" * padding})
    assert len(http.requests[0]["form"]["Twiml"][0]) == MAX_TWIML_CHARS

    client, http = fake_twilio()
    with pytest.raises(ValueError, match=r"4001 characters .* at most 4000"):
        await place_call(client, to=TO, from_=FROM, stream_url=STREAM, parameters={"pad": "x" * (padding + 1)})
    assert http.requests == []


async def test_the_limit_counts_escaped_characters() -> None:
    # "&" goes on the wire as "&amp;": 5 characters, not 1.
    client, _ = fake_twilio()
    with pytest.raises(ValueError, match="at most 4000"):
        await place_call(client, to=TO, from_=FROM, stream_url=STREAM, parameters={"pad": "&" * 800})


async def test_twilio_errors_propagate() -> None:
    http = RecordingHttpClient(400, {"code": 21215, "message": "Geo permission not enabled", "status": 400})
    with pytest.raises(TwilioRestException) as caught:
        await place_call(rest_client(ACCOUNT, "t", http), to=TO, from_=FROM, stream_url=STREAM, parameters={})
    assert caught.value.code == 21215


def test_parse_params() -> None:
    assert parse_params([]) == {}
    assert parse_params(["campaign=renewal", "empty=", "expr=a=b", "with-dash_1=x y"]) == {
        "campaign": "renewal",
        "empty": "",
        "expr": "a=b",
        "with-dash_1": "x y",
    }


@pytest.mark.parametrize(
    "pair, message",
    [
        ("novalue", "expected key=value"),
        ("=value", "key before '=' is empty"),
        ("has space=1", "letters, digits, _ and -"),
        ("dotted.key=1", "letters, digits, _ and -"),
        ('quote"=1', "letters, digits, _ and -"),
    ],
)
def test_parse_params_errors(pair: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        parse_params(["ok=1", pair])
    assert repr(pair) in str(caught.value)


def test_parse_params_refuses_a_repeated_key() -> None:
    with pytest.raises(ValueError, match="given twice"):
        parse_params(["a=1", "a=2"])

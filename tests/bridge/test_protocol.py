"""Media Streams messages exactly as Twilio sends them, and exactly what we may send back."""

from __future__ import annotations

import base64
import json

import pytest

from telephony.twilio.media_streams import (
    MAX_MESSAGE_BYTES,
    Connected,
    Dtmf,
    Mark,
    Media,
    ProtocolError,
    Start,
    Stop,
    UnknownEvent,
    clear_message,
    mark_message,
    media_message,
    parse_message,
)

SID = "MZ18ad3ab5a668481ce02b83e7395059f0"
START = {
    "event": "start",
    "sequenceNumber": "1",
    "start": {
        "accountSid": "AC123",
        "streamSid": SID,
        "callSid": "CA123",
        "tracks": ["inbound"],
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
        "customParameters": {"From": "+15550001111", "purpose": "survey"},
    },
    "streamSid": SID,
}


@pytest.mark.parametrize("version", ["0.2.0", "1.0.0", "9.9.9"])
def test_connected_has_no_stream_sid_and_any_version(version: str) -> None:
    message = parse_message(json.dumps({"event": "connected", "protocol": "Call", "version": version}))
    assert message == Connected(protocol="Call", version=version)


def test_start_reads_string_numbers_and_integer_media_format() -> None:
    message = parse_message(json.dumps(START))
    assert isinstance(message, Start)
    assert message.sequence_number == 1 and message.call_sid == "CA123" and message.stream_sid == SID
    assert message.custom_parameters == {"From": "+15550001111", "purpose": "survey"}
    assert message.media_format.sample_rate == 8000 and message.media_format.channels == 1


@pytest.mark.parametrize("parameters", ["absent", {}])
def test_start_without_custom_parameters(parameters: object) -> None:
    data = json.loads(json.dumps(START))
    if parameters == "absent":
        del data["start"]["customParameters"]
    else:
        data["start"]["customParameters"] = parameters
    message = parse_message(json.dumps(data))
    assert isinstance(message, Start) and message.custom_parameters == {}


def test_key_order_and_unknown_fields_do_not_matter() -> None:
    data = {
        "streamSid": SID,
        "media": {"payload": "//8=", "timestamp": "155", "chunk": "2", "track": "inbound", "new": 1},
        "sequenceNumber": "3",
        "event": "media",
        "extra": True,
    }
    message = parse_message(json.dumps(data))
    assert message == Media(
        stream_sid=SID, sequence_number=3, track="inbound", chunk=2, timestamp=155, payload=b"\xff\xff"
    )


def test_integers_are_tolerated_where_twilio_sends_strings() -> None:
    data = {
        "event": "media",
        "streamSid": SID,
        "sequenceNumber": 3,
        "media": {"payload": "", "chunk": 2, "timestamp": 155},
    }
    message = parse_message(json.dumps(data))
    assert isinstance(message, Media) and message.chunk == 2 and message.payload == b""


def test_mark_dtmf_stop() -> None:
    assert parse_message(
        json.dumps({"event": "mark", "sequenceNumber": "4", "streamSid": SID, "mark": {"name": "end-1"}})
    ) == Mark(SID, 4, "end-1")
    dtmf = parse_message(
        json.dumps(
            {"event": "dtmf", "streamSid": SID, "sequenceNumber": "5", "dtmf": {"track": "inbound_track", "digit": "#"}}
        )
    )
    assert dtmf == Dtmf(SID, 5, "inbound_track", "#")
    stop = parse_message(
        json.dumps(
            {"event": "stop", "sequenceNumber": "6", "streamSid": SID, "stop": {"accountSid": "AC1", "callSid": "CA1"}}
        )
    )
    assert stop == Stop(SID, 6, "AC1", "CA1")


def test_unknown_events_are_returned_not_raised() -> None:
    assert parse_message('{"event": "future_thing", "streamSid": "MZ1"}') == UnknownEvent("future_thing", "MZ1")


@pytest.mark.parametrize(
    "text, reason",
    [
        ("nope", "not JSON"),
        ("[]", "JSON object"),
        ('{"event": 1}', "event"),
        ('{"event": "media", "streamSid": "MZ1"}', "no 'media'"),
        ('{"event": "media", "streamSid": "MZ1", "media": {"payload": "%%%"}}', "base64"),
        ('{"event": "media", "streamSid": "MZ1", "media": {"payload": 5}}', "string"),
        ('{"event": "media", "streamSid": 7, "media": {"payload": ""}}', "streamSid"),
        ('{"event": "media", "streamSid": "MZ1", "sequenceNumber": "x", "media": {"payload": ""}}', "integer"),
        ('{"event": "start", "start": {"callSid": "CA1", "tracks": "inbound"}, "streamSid": "MZ1"}', "tracks"),
        ('{"event": "start", "start": {"streamSid": "MZ1"}}', "callSid"),
        ('{"event": "mark", "streamSid": "MZ1", "mark": {}}', "name"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_malformed_messages_raise_protocol_error_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(ProtocolError, match=reason):
        parse_message(text)


def test_oversized_messages_are_rejected_before_parsing() -> None:
    with pytest.raises(ProtocolError, match="exceeds"):
        parse_message('{"event":"media","x":"' + "a" * MAX_MESSAGE_BYTES + '"}')


def test_outbound_messages_carry_exactly_the_allowed_fields() -> None:
    media = json.loads(media_message(SID, b"\x00" * 160))
    assert media == {"event": "media", "streamSid": SID, "media": {"payload": base64.b64encode(b"\x00" * 160).decode()}}
    assert json.loads(mark_message(SID, 'a"b')) == {"event": "mark", "streamSid": SID, "mark": {"name": 'a"b'}}
    assert json.loads(clear_message(SID)) == {"event": "clear", "streamSid": SID}

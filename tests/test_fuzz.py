"""Hostile and broken input: property tests on the parser and endpoints, and a seeded fuzz over a live stream.

Each class of input has a defined outcome: malformed messages are ignored and counted (and past
VOICEBOT_MAX_BAD_MESSAGES the stream is closed with 1008); forged webhooks get 403. Nothing raises
past the parser, nothing takes the server down, and no other call is affected.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import random
import xml.etree.ElementTree as ET
from dataclasses import replace
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telephony.app import create_app
from telephony.twilio.media_streams import ProtocolError, parse_message

from .bridge.test_bridge import frame_hz
from .conftest import TEST_SETTINGS, harness
from .fakes.model import Hold, Say, WaitForAudio

SID = "MZ" + "2" * 32
SILENCE = base64.b64encode(b"\xff" * 160).decode()
VALID = [
    {"event": "connected", "protocol": "Call", "version": "1.0.0"},
    {"event": "start", "sequenceNumber": "1", "streamSid": SID, "start": {"callSid": "CA1", "accountSid": "AC1",
     "tracks": ["inbound"], "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}},
    {"event": "media", "sequenceNumber": "2", "streamSid": SID,
     "media": {"track": "inbound", "chunk": "1", "timestamp": "120", "payload": SILENCE}},
    {"event": "mark", "sequenceNumber": "3", "streamSid": SID, "mark": {"name": "end-1"}},
    {"event": "dtmf", "sequenceNumber": "4", "streamSid": SID, "dtmf": {"track": "inbound_track", "digit": "5"}},
    {"event": "stop", "sequenceNumber": "5", "streamSid": SID, "stop": {"callSid": "CA1", "accountSid": "AC1"}},
]  # fmt: skip
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


def parses_or_refuses(text: str | bytes) -> None:
    try:
        parse_message(text)
    except ProtocolError:
        pass


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300) | st.binary(max_size=300))
def test_arbitrary_text_is_parsed_or_refused_with_a_protocol_error(text: str | bytes) -> None:
    parses_or_refuses(text)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_arbitrary_json_is_parsed_or_refused_with_a_protocol_error(value: Any) -> None:
    parses_or_refuses(json.dumps(value))


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(VALID), st.data())
def test_mutated_twilio_messages_are_parsed_or_refused(message: dict[str, Any], data: st.DataObject) -> None:
    """Twilio's own messages with fields dropped, retyped or replaced: the shape attackers and bugs produce."""
    mutated = json.loads(json.dumps(message))
    for _ in range(data.draw(st.integers(1, 3))):
        target = mutated
        section = data.draw(
            st.sampled_from([None, *[key for key, value in mutated.items() if isinstance(value, dict)]])
        )
        if section is not None:
            target = mutated[section]
        if not target:
            continue
        key = data.draw(st.sampled_from(sorted(target)))
        if data.draw(st.booleans()):
            del target[key]
        else:
            target[key] = data.draw(json_values)
    parses_or_refuses(json.dumps(mutated))


SECURE = replace(TEST_SETTINGS, twilio_account_sid="AC" + "3" * 32, twilio_auth_token="fuzz-token")
_SECURE_APP = create_app(SECURE, agent_factory=lambda call: None)  # type: ignore[arg-type,return-value]
_OPEN_APP = create_app(TEST_SETTINGS, agent_factory=lambda call: None)  # type: ignore[arg-type,return-value]


async def _post(app: Any, path: str, form: dict[str, str], headers: dict[str, str]) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        return await client.post(path, data=form, headers=headers)


forms = st.dictionaries(st.text(min_size=1, max_size=12), st.text(max_size=40), max_size=6)
header_names = st.sampled_from(["X-Twilio-Signature", "X-Forwarded-Host", "Host", "Content-Type"])
header_values = st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=40)
headers = st.dictionaries(header_names, header_values, max_size=3)
paths = st.sampled_from(["/twiml", "/status/call", "/status/stream", "/status/amd", "/status/other"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paths, forms, headers)
def test_forged_webhooks_are_refused_and_never_crash(path: str, form: dict[str, str], header: dict[str, str]) -> None:
    response = asyncio.run(_post(_SECURE_APP, path, form, header))
    assert response.status_code in (403, 400), (response.status_code, response.text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(forms, headers)
def test_unverified_twiml_always_answers_valid_twiml(form: dict[str, str], header: dict[str, str]) -> None:
    response = asyncio.run(_post(_OPEN_APP, "/twiml", form, header))
    assert response.status_code in (200, 400), (response.status_code, response.text)
    if response.status_code == 200:
        assert ET.fromstring(response.text).tag == "Response"


def mutate(rng: random.Random, message: dict[str, Any]) -> str | bytes:
    """One hostile variant of a valid message."""
    choice = rng.randrange(9)
    text = json.dumps(message)
    if choice == 0:
        return text[: rng.randrange(len(text))]  # truncated
    if choice == 1:
        raw = bytearray(text.encode())
        raw[rng.randrange(len(raw))] = rng.randrange(256)
        return bytes(raw)  # one corrupted byte (sent as binary when not UTF-8)
    if choice == 2:
        return json.dumps({**message, "streamSid": "MZ" + "9" * 32})  # someone else's stream
    if choice == 3:
        media = {"track": "inbound", "chunk": "x", "timestamp": None, "payload": "!!" + "A" * rng.randrange(500)}
        return json.dumps({"event": "media", "streamSid": SID, "media": media})
    if choice == 4:
        return json.dumps(
            {
                "event": "media",
                "streamSid": SID,
                "media": {"payload": base64.b64encode(b"\x00" * rng.randrange(0, 999, 3)).decode()},
            }
        )
    if choice == 5:
        return json.dumps(
            {"event": rng.choice(["Media", "", "clear", "mark", "start", "connected", "x" * 99]), "streamSid": SID}
        )
    if choice == 6:
        return rng.randbytes(rng.randrange(1, 64))
    if choice == 7:
        return json.dumps([message])
    return json.dumps({**message, "sequenceNumber": rng.choice([[], {}, -1, "1e9", True])})  # fmt: skip


async def test_a_live_stream_survives_a_seeded_fuzz_and_the_other_call_is_untouched(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rng = random.Random(20261129)
    tried = 0
    script = [WaitForAudio(0.2), Say("still here", 0.4, tone_hz=1000), Hold()]
    async with harness(script, max_bad_messages=10_000) as h:
        async with h.caller() as fuzzed, h.caller(call_sid="CA" + "9" * 32, stream_sid="MZ" + "8" * 32) as other:
            await fuzzed.connect()
            await other.connect()
            talker = asyncio.create_task(other.silence(2.0))
            for _ in range(1500):
                await fuzzed.send(mutate(rng, rng.choice(VALID[2:5])))
                tried += 1
                if tried % 30 == 0:
                    await fuzzed.media(b"\xff" * 160)
            await fuzzed.silence(0.6)
            await talker
            assert not fuzzed.closed.is_set()
            await fuzzed.stop()
            await other.stop()
    print(f"fuzz: {tried} hostile messages on one live stream")
    for each in (fuzzed, other):
        assert any(frame_hz(payload) == 1000 for payload in each.media_payloads())
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]

"""Listening in on a live call (telephony.console.listen), without a browser: the tap, its bounds, the route."""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import replace

import httpx

from telephony.console.listen import BOT, CALLER, CLEAR, KEEPALIVE, QUEUE_FRAMES, CallTap, ListenerLimit, record

from ..conftest import TEST_SETTINGS, harness
from ..fakes.model import Hold, Say, WaitForAudio
from .test_console import BEARER, SECRET

CONSOLE = replace(TEST_SETTINGS, console=True, console_token=SECRET)


def media(payload: bytes) -> str:
    return json.dumps({"event": "media", "streamSid": "MZ1", "media": {"payload": base64.b64encode(payload).decode()}})


def parse(data: bytes) -> list[tuple[int, bytes]]:
    """The records of a listen stream."""
    records, at = [], 0
    while at + 3 <= len(data):
        size = int.from_bytes(data[at + 1 : at + 3], "big")
        if at + 3 + size > len(data):
            break
        records.append((data[at], data[at + 3 : at + 3 + size]))
        at += 3 + size
    return records


async def test_a_tap_copies_both_sides_only_while_someone_listens_and_never_waits_for_them() -> None:
    tap = CallTap("CA1")
    tap.twilio_received(media(b"\x01" * 160))
    assert tap.frames[CALLER] == 0  # nobody listening: nothing parsed or kept
    slow = tap.listen()
    tap.twilio_received(media(b"\x01" * 160))
    tap.twilio_sent(media(b"\x02" * 160))
    tap.twilio_sent(json.dumps({"event": "clear", "streamSid": "MZ1"}))
    tap.twilio_sent(json.dumps({"event": "mark", "streamSid": "MZ1", "mark": {"name": "m1"}}))
    for bad in ("not json", "[]", '{"event": "media"}', '{"event": "media", "media": {"payload": "%%%"}}'):
        tap.twilio_received(bad)  # malformed input is ignored, never raised into the call
    first = [item async for item in _take(slow, 3)]
    assert first == [record(CALLER, b"\x01" * 160), record(BOT, b"\x02" * 160), record(CLEAR)]
    for _ in range(QUEUE_FRAMES + 100):  # a listener that never reads: bounded, oldest dropped
        tap.twilio_sent(media(b"\x03" * 160))
    assert slow.dropped == 100
    others = [tap.listen() for _ in range(3)]
    try:
        tap.listen()
        raise AssertionError("a fifth listener was let in")
    except ListenerLimit:
        pass
    await tap.call_ended("done", "caller")
    assert all(listener.closed for listener in [slow, *others]) and tap.listeners == []


async def _take(listener: object, count: int):  # type: ignore[no-untyped-def]
    records = listener.records(keepalive_s=0.05)  # type: ignore[attr-defined]
    for _ in range(count):
        yield await anext(records)


async def test_listening_in_on_a_twilio_call_hears_the_caller_and_the_bot() -> None:
    # The bot speaks once the caller has: a listener hears what is sent after it joined.
    script = [WaitForAudio(0.3), Say("Hello from the bot.", 1.0, tone_hz=600), Hold()]
    async with harness(script, settings=CONSOLE) as h, h.caller() as call:
        await call.connect()
        base = f"http://{h.base}"
        async with httpx.AsyncClient(base_url=base, timeout=10.0) as client:
            path = f"/console/api/live/{call.call_sid}/listen"
            for _ in range(100):  # the call's stream has started once its tap exists
                if h.app.state.console.listen.tap(call.call_sid) is not None:
                    break
                await asyncio.sleep(0.05)
            assert (await client.get(path)).status_code == 401  # the console token, like every route
            assert (await client.get(path, headers={"Authorization": "Bearer nope"})).status_code == 401
            assert (await client.get("/console/api/live/CAnope/listen", headers=BEARER)).status_code == 404
            assert (await client.post(path, headers=BEARER)).status_code == 405  # read-only
            data = b""
            async with client.stream("GET", path, headers=BEARER) as response:
                assert response.status_code == 200
                talking = asyncio.create_task(call.silence(3.0))
                try:
                    async for chunk in response.aiter_bytes():
                        data += chunk
                        kinds = [kind for kind, _ in parse(data)]
                        if kinds.count(CALLER) >= 20 and kinds.count(BOT) >= 20:
                            break
                finally:
                    await talking
        kinds = [kind for kind, _ in parse(data)]
        assert kinds.count(CALLER) >= 20 and kinds.count(BOT) >= 20, kinds[:40]
        assert all(len(payload) == 160 for kind, payload in parse(data) if kind in (CALLER, BOT))
        assert set(kinds) <= {CALLER, BOT, CLEAR, KEEPALIVE}
        await call.stop()
    tap = h.app.state.console.listen.tap(call.call_sid)
    assert tap is not None and tap.ended and tap.listeners == []

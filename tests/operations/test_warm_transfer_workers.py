"""A warm transfer with ``voicebot serve --workers 2``, end to end, in real processes.

The server runs as users run it (its own nginx on the public port, two workers), with scripted models
(tests/operations/warm_agents.py) and its REST requests sent to Twilio's stand-in through the SDK's own HTTP
layer (``VOICEBOT_TWILIO_API_URL``): the stateful fake of api.twilio.com the in-process warm-transfer tests
use (tests.fakes.twilio_calls), served here over HTTP. That fake rings the person, runs the TwiML it is
given, opens media streams and posts signed status callbacks, all at the server's public port, so every
request takes nginx's routing: ``/w/<n>/...`` to worker n, the rest to any worker.

Two calls, one whose webhook nginx hands to either worker and one posted to the other worker's own port, so
both workers hold a transfer. Checked for each: what the worker handed Twilio (the caller's stream, the
person's briefing stream, the person-call and conference callbacks) names that same worker; the person is
briefed and accepts, and caller and person end up talking in the conference; every callback is accepted and
none reaches a worker that does not hold the transfer; ``/metrics`` counts both transfers as connected.
"""

from __future__ import annotations

import asyncio
import re
import signal
import time
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import httpx
import pytest
from aiohttp import BasicAuth, web

from telephony.simulation.local_app.nginx import nginx_binary

from ..audio import frame_hz
from ..fakes.twilio import ULAW_SILENCE
from ..fakes.twilio_calls import FakeCall, FakeTwilio
from ..waiting import until
from .test_workers import free_ports, metric, workers

PUBLIC = "https://voice.example.com"
TOKEN = "test-auth-token-for-warm-workers"
ACCOUNT = "AC" + "7" * 32
OUR_NUMBER = "+15550002222"
CALLER_NUMBER = "+15550001111"
PERSON_NUMBER = "+15557654321"
BRIEF_TONE = 700  # tests/bridge/test_warm_transfer.py's BRIEF_BY_VOICE speaks the briefing at 700 Hz

pytestmark = pytest.mark.skipif(
    nginx_binary() is None,
    reason="nginx is not installed: `apt-get install nginx-light` (Debian's package; .ci/run installs it)",
)


class TwilioOverHttp(FakeTwilio):
    """The fake Twilio, also placing an inbound call's webhook at a chosen address (a worker's own port)."""

    async def incoming_at(self, server: str, call_sid: str, from_: str, to: str) -> FakeCall:
        """As :meth:`FakeTwilio.incoming`, but /twiml is fetched from ``server``; the rest goes to the app base."""
        call = self.calls[call_sid] = FakeCall(call_sid, to=to, from_=from_, status="in-progress")
        form = {"CallSid": call_sid, "From": from_, "To": to, "AccountSid": self.account_sid, "CallStatus": "ringing"}
        signature = self._sign(f"{self.public_url}/twiml", form)
        async with httpx.AsyncClient(base_url=server, timeout=10) as client:
            response = await client.post("/twiml", data=form, headers={"X-Twilio-Signature": signature})
        assert response.status_code == 200, response.text
        await self._run_twiml(call, response.text)
        return call


@asynccontextmanager
async def rest_api(twilio: FakeTwilio) -> AsyncIterator[str]:
    """api.twilio.com played by ``twilio`` on a loopback port: every request to ``FakeTwilio.request``."""

    async def answer(request: web.Request) -> web.Response:
        posted = await request.post()
        data = {key: [str(value) for value in posted.getall(key)] for key in dict.fromkeys(posted.keys())}
        header = request.headers.get("Authorization")
        auth = BasicAuth.decode(header) if header else None
        reply = await twilio.request(
            request.method,
            f"https://api.twilio.com{request.path}",  # as the SDK addressed it, before VOICEBOT_TWILIO_API_URL
            params=dict(request.query),
            data=data,
            headers=dict(request.headers),
            auth=(auth.login, auth.password) if auth else None,
        )
        return web.Response(status=reply.status_code, text=reply.text, content_type="application/json")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


def warm_workers(base: int, api_url: str, log: Path) -> AbstractAsyncContextManager[asyncio.subprocess.Process]:
    """``voicebot serve --workers 2`` with warm transfer on, its REST requests to ``api_url``."""
    return workers(
        base,
        log,
        agent="tests.operations.warm_agents:caller_agent",
        TWILIO_ACCOUNT_SID=ACCOUNT,
        TWILIO_AUTH_TOKEN=TOKEN,
        TWILIO_PHONE_NUMBER=OUR_NUMBER,
        VOICEBOT_TRANSFER_TO=PERSON_NUMBER,
        VOICEBOT_TRANSFER_MODE="warm",
        VOICEBOT_BRIEFING_AGENT="tests.operations.warm_agents:briefing_agent",
        VOICEBOT_TWILIO_API_URL=api_url,
        VOICEBOT_HANGUP_GRACE="0.2",
        NO_PROXY="127.0.0.1,localhost",
    )


def worker_in(url: str, scheme: str, path: str) -> int:
    """The worker ``n`` a public URL handed to Twilio names: ``<scheme>://voice.example.com/w/<n>/<path>``."""
    match = re.fullmatch(rf"{scheme}://voice\.example\.com/w/(\d)/{path}(\?transfer=[\w-]+)?", url)
    assert match, f"{url} does not name a worker's {path}"
    return int(match.group(1))


def stream_url_of(twiml: str) -> str:
    stream = ET.fromstring(twiml).find("Connect/Stream")
    assert stream is not None, twiml
    return str(stream.get("url"))


def conference_callback_of(twiml: str) -> str:
    conference = ET.fromstring(twiml).find("Dial/Conference")
    assert conference is not None, twiml
    return str(conference.get("statusCallback"))


def heard_tones(call: FakeCall) -> set[int]:
    """The tones (rounded to 100 Hz) a party heard from the bot, on all its streams."""
    return {
        round(frame_hz(frame.payload), -2)
        for stream in call.streams
        for frame in stream.heard
        if frame.payload != ULAW_SILENCE
    }


async def transfer(twilio: TwilioOverHttp, caller_sid: str, webhook_at: str | None) -> tuple[int, FakeCall, FakeCall]:
    """One inbound call whose agent asks for a warm transfer that the person accepts.

    Returns the worker the caller's stream was sent to, the caller's call and the person's."""
    people = {sid for sid, call in twilio.calls.items() if call.to == PERSON_NUMBER}
    if webhook_at is None:
        caller = await twilio.incoming(caller_sid, CALLER_NUMBER, OUR_NUMBER)  # through nginx: either worker
    else:
        caller = await twilio.incoming_at(webhook_at, caller_sid, CALLER_NUMBER, OUR_NUMBER)
    [caller_stream] = caller.streams
    match = re.fullmatch(r"ws://127\.0\.0\.1:\d+/w/(\d)/media-stream", caller_stream.url)
    assert match, f"the caller's stream went to {caller_stream.url}, not to a worker's /w/<n>/media-stream"
    worker = int(match.group(1))

    def person_call() -> FakeCall | None:
        new = [call for sid, call in twilio.calls.items() if call.to == PERSON_NUMBER and sid not in people]
        return new[0] if new else None

    await until(lambda: person_call() is not None, 15, f"the person's phone to ring ({caller_sid})")
    person = person_call()
    assert person is not None
    await until(
        lambda: caller.hearing == "conference" and person.hearing == "conference",
        15,
        f"caller and person in the conference ({caller_sid}: caller {caller.hearing!r}, person {person.hearing!r})",
    )
    return worker, caller, person


async def test_a_warm_transfer_stays_on_the_worker_that_holds_it(tmp_path: Path) -> None:
    base, log = free_ports(3), tmp_path / "serve.log"
    twilio = TwilioOverHttp(PUBLIC, TOKEN, ACCOUNT)
    async with rest_api(twilio) as api_url, warm_workers(base, api_url, log) as server:
        public = f"http://127.0.0.1:{base}"
        twilio.attach(f"127.0.0.1:{base}")  # Twilio reaches the server at its public port: nginx
        started = time.monotonic()
        try:
            first = await transfer(twilio, "CA" + "c" * 32, webhook_at=None)
            other = 1 - first[0]
            second = await transfer(twilio, "CA" + "d" * 32, webhook_at=f"http://127.0.0.1:{base + 1 + other}")
            assert {first[0], second[0]} == {0, 1}, "the second webhook went to the other worker's own port"

            for worker, caller, person in (first, second):
                # The caller's move to hold: a conference whose callbacks come back to this worker.
                [hold] = twilio.updates(caller.sid)
                assert worker_in(conference_callback_of(hold["Twiml"][0]), "https", "status/conference") == worker
                # The person's call: its callbacks and its briefing stream name this worker too.
                [create] = [form for form in twilio.created() if f'value="{caller.sid}"' in form["Twiml"][0]]
                assert worker_in(create["StatusCallback"][0], "https", "status/transfer") == worker
                assert worker_in(stream_url_of(create["Twiml"][0]), "wss", "media-stream") == worker
                [briefing] = person.streams
                assert briefing.url == f"ws://127.0.0.1:{base}/w/{worker}/media-stream"
                assert BRIEF_TONE in heard_tones(person), "the person heard the briefing"
                # Accepting moved the person into the caller's room; the bot left both calls.
                [join] = twilio.updates(person.sid)
                assert ET.fromstring(join["Twiml"][0]).findtext("Dial/Conference") == ET.fromstring(
                    hold["Twiml"][0]
                ).findtext("Dial/Conference")
                assert len(caller.streams) == 1 and all(s.closed.is_set() for s in [*caller.streams, *person.streams])
                # REST reached Twilio's stand-in with the account's credentials, through the SDK.
                assert all(r["auth"] == (ACCOUNT, TOKEN) for r in twilio.requests)

            # The person hangs up: the conference ends (endConferenceOnExit), its callbacks reach the worker.
            for _, caller, person in (first, second):
                await twilio.hang_up_person(person)
                await until(lambda c=caller: c.status == "completed", 10, f"the conference to end ({caller.sid})")  # type: ignore[misc]
            await twilio.settle(10)
        finally:
            await twilio.aclose()
        # A figure, not a threshold (a loaded machine stretches it): benchmarks/warm_transfer.py times transfers.
        print(f"the two warm transfers across workers took {time.monotonic() - started:.1f} s")

        # Every callback was accepted, and each went to the worker named in its URL, which held the transfer.
        assert twilio.callbacks, "Twilio posted no status callbacks"
        assert all(status == 204 for _, _, status in twilio.callbacks), twilio.callbacks
        assert {worker_in(url, "https", "status/(?:transfer|conference)") for url, _, _ in twilio.callbacks} == {0, 1}

        async with httpx.AsyncClient(base_url=public) as client:
            deadline = time.monotonic() + 10
            while True:  # figures are written as calls end: a loaded machine writes them late
                text = (await client.get("/metrics")).text
                if metric(text, "voicebot_transfers_total", mode="warm", outcome="connected") >= 2:
                    break
                assert time.monotonic() < deadline, "voicebot_transfers_total{outcome=connected} never reached 2"
                await asyncio.sleep(0.2)
        assert metric(text, "voicebot_transfers_total", mode="warm") == 2  # both connected, nothing else
        assert metric(text, "voicebot_prewarm_total", outcome="miss") == 0  # every stream reached its worker

        output = log.read_text()
        assert "callback for an unknown or forgotten transfer" not in output, output
        assert "pre-warm miss" not in output and "rejected media stream" not in output, output
        assert "Traceback" not in output, output
        server.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(server.wait(), 30) == 0

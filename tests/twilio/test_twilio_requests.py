"""Every request from Twilio is verified: webhooks, the stream upgrade, and the call token on start."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from dataclasses import replace

import httpx
import pytest
import websockets
from twilio.request_validator import RequestValidator

from agent.tools import transfer_tool
from telephony.bridge.session import DIAL_PARAMETER
from telephony.cli import main
from telephony.twilio.security import PARAMETER_NAME, CallTokens, token_secret

from ..bridge.test_bridge import frame_hz
from ..conftest import TEST_SETTINGS, harness
from ..fakes.model import CallTool, Hold, Say, WaitForText
from ..fakes.rest import FakeCallControl

TOKEN = "auth-token-for-tests"
SECURE = replace(TEST_SETTINGS, twilio_account_sid="AC" + "3" * 32, twilio_auth_token=TOKEN)
CALL_SID = "CA" + "1" * 32
FORM = {"CallSid": CALL_SID, "From": "+15550001111", "To": "+15550002222", "AccountSid": "AC" + "3" * 32}


def sign(url: str, params: dict[str, str]) -> str:
    return RequestValidator(TOKEN).compute_signature(url, params)


async def post(base: str, path: str, form: dict[str, str], signature: str | None) -> httpx.Response:
    headers = {"X-Twilio-Signature": signature} if signature else {}
    async with httpx.AsyncClient(base_url=f"http://{base}") as client:
        return await client.post(path, data=form, headers=headers)


def stream_parameters(twiml: str) -> dict[str, str]:
    stream = ET.fromstring(twiml).find("Connect/Stream")
    assert stream is not None
    return {p.get("name", ""): p.get("value", "") for p in stream.findall("Parameter")}


async def test_webhooks_need_a_valid_signature() -> None:
    async with harness([Hold()], settings=SECURE, hangup=FakeCallControl()) as h:
        good = await post(h.base, "/twiml", FORM, sign("https://bot.example.com/twiml", FORM))
        assert good.status_code == 200
        stream = ET.fromstring(good.text).find("Connect/Stream")
        assert stream is not None and stream.get("statusCallback") == "https://bot.example.com/status/stream"
        assert PARAMETER_NAME in stream_parameters(good.text)
        assert (await post(h.base, "/twiml", FORM, None)).status_code == 403
        assert (await post(h.base, "/twiml", FORM, sign("https://evil.example.com/twiml", FORM))).status_code == 403
        tampered = {**FORM, "From": "+15559999999"}
        assert (await post(h.base, "/twiml", tampered, sign("https://bot.example.com/twiml", FORM))).status_code == 403
        status = {"CallSid": CALL_SID, "CallStatus": "completed", "CallDuration": "12"}
        assert (
            await post(h.base, "/status/call", status, sign("https://bot.example.com/status/call", status))
        ).status_code == 204
        assert (await post(h.base, "/status/call", status, "bogus")).status_code == 403


async def test_stream_upgrade_without_a_valid_signature_is_refused_before_accept() -> None:
    async with harness([Hold()], settings=SECURE) as h:
        for headers in ({}, {"X-Twilio-Signature": "AAAA"}):
            with pytest.raises(websockets.InvalidStatus) as refused:
                async with h.caller(headers=headers):
                    pass
            assert refused.value.response.status_code == 403
        assert h.models == []


async def _signed_call(h, token: str | None, call_sid: str = CALL_SID):
    signature = RequestValidator(TOKEN).compute_signature("wss://bot.example.com/media-stream", {})
    parameters = {"From": "+15550001111"} | ({PARAMETER_NAME: token} if token else {})
    return h.caller(headers={"X-Twilio-Signature": signature}, parameters=parameters, call_sid=call_sid)


async def test_a_call_token_works_once_for_its_own_call() -> None:
    async with harness([Say("hello", 0.3, tone_hz=1000), Hold()], settings=replace(SECURE, prewarm=False)) as h:
        twiml = await post(h.base, "/twiml", FORM, sign("https://bot.example.com/twiml", FORM))
        token = stream_parameters(twiml.text)[PARAMETER_NAME]
        async with await _signed_call(h, token) as call:
            await call.connect()
            await call.silence(0.6)
            assert any(frame_hz(payload) == 1000 for payload in call.media_payloads())
            assert h.calls[0].parameters == {"From": "+15550001111"}  # the token is not handed to the agent
            await call.stop()
        for forged, sid in ((token, CALL_SID), (token[:-2] + "AA", CALL_SID), (None, CALL_SID)):
            async with await _signed_call(h, forged, sid) as replay:
                await replay.connect()
                await replay.wait_closed(3)
        other = await post(h.base, "/twiml", FORM, sign("https://bot.example.com/twiml", FORM))
        other_token = stream_parameters(other.text)[PARAMETER_NAME]
        async with await _signed_call(h, other_token, "CA" + "7" * 32) as wrong_call:
            await wrong_call.connect()
            await wrong_call.wait_closed(3)
        assert len(h.models) == 1  # no agent was built for any refused stream


def test_serve_refuses_to_listen_unprotected(monkeypatch: pytest.MonkeyPatch, tmp_path, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("TWILIO_AUTH_TOKEN", "TWILIO_ACCOUNT_SID"):
        monkeypatch.delenv(name, raising=False)
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "TWILIO_AUTH_TOKEN is not set: requests cannot be verified" in capsys.readouterr().err
    started: list[str] = []
    monkeypatch.setattr(
        "telephony.operations.shutdown.DrainingServer.run", lambda self, sockets=None: started.append(self.config.host)
    )
    assert main(["serve", "--host", "0.0.0.0", "--allow-unsigned", "--workers", "1"]) == 0
    assert main(["serve", "--host", "127.0.0.1", "--workers", "1"]) == 0
    assert started == ["0.0.0.0", "127.0.0.1"]


async def test_answering_machine_result_reaches_the_agent() -> None:
    async with harness(
        [WaitForText("answered by a machine"), Say("leaving a message", 0.2, tone_hz=1000), Hold()]
    ) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(0.3)
            response = await post(
                h.base, "/status/amd", {"CallSid": call.call_sid, "AnsweredBy": "machine_end_beep"}, None
            )
            assert response.status_code == 204
            await call.silence(0.5)
            await call.stop()
        assert any("machine_end_beep" in text for text in h.model.texts)


# --- transfer ---------------------------------------------------------------------------------------


async def test_transfer_plays_the_hand_off_line_then_redirects_to_a_dial() -> None:
    rest = FakeCallControl()
    script = [
        Say("Transferring you now", 0.8, tone_hz=1000),
        CallTool("transfer_call", {"reason": "wants a human"}),
        Hold(),
    ]
    async with harness(script, hangup=rest, tools=[transfer_tool("+15557654321")]) as h:
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(6))
            await call.wait_closed(6)
            talker.cancel()
    assert len(rest.redirects) == 1 and rest.calls == []
    redirected_at, call_sid, twiml = rest.redirects[0]
    assert call_sid == call.call_sid
    assert ET.fromstring(twiml).findtext("Dial/Number") == "+15557654321"
    assert len(call.heard) == len(call.media_payloads())  # the whole hand-off line played first
    assert call.heard[-1].at + 0.02 <= redirected_at - call._t0


async def test_failed_transfer_tells_the_agent_and_the_call_goes_on() -> None:
    rest = FakeCallControl(error=RuntimeError("21210 invalid number"))
    script = [
        Say("Transferring you", 0.3, tone_hz=1000),
        CallTool("transfer_call", {"reason": "wants a human"}),
        WaitForText("transfer failed"),
        Say("Sorry, I could not transfer you", 0.3, tone_hz=400),
        Hold(),
    ]
    async with harness(script, hangup=rest, tools=[transfer_tool("sip:desk@example.com")]) as h:
        async with h.caller() as call:
            await call.connect()
            await call.silence(2.0)
            assert not call.closed.is_set()
            await call.stop()
    assert ET.fromstring(rest.redirects[0][2]).findtext("Dial/Sip") == "sip:desk@example.com"
    assert any(round(frame_hz(frame.payload), -2) == 400 for frame in call.heard)


async def test_an_outbound_call_token_is_bound_to_its_dial_id() -> None:
    tokens = CallTokens(token_secret(TOKEN, None))  # what `voicebot call` mints with the same account
    async with harness([Say("hello", 0.2, tone_hz=1000), Hold()], settings=SECURE) as h:
        signature = RequestValidator(TOKEN).compute_signature("wss://bot.example.com/media-stream", {})
        good = {DIAL_PARAMETER: "dial-1", PARAMETER_NAME: tokens.mint("dial:dial-1"), "purpose": "survey"}
        async with h.caller(headers={"X-Twilio-Signature": signature}, parameters=good) as call:
            await call.connect()
            await call.silence(0.4)
            await call.stop()
        assert h.calls[0].parameters == {"purpose": "survey"}
        stolen = {DIAL_PARAMETER: "dial-2", PARAMETER_NAME: tokens.mint("dial:dial-1")}
        async with h.caller(headers={"X-Twilio-Signature": signature}, parameters=stolen) as other:
            await other.connect()
            await other.wait_closed(3)
        assert len(h.models) == 1


def test_serve_runs_one_process_by_default_and_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path, capsys) -> None:
    """No flags, no VOICEBOT_WORKERS: one process on VOICEBOT_PORT, streams on /media-stream, the whole limit."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VOICEBOT_WORKERS", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda _: {0, 1, 2, 3})  # however many cores there are
    served: list[object] = []
    monkeypatch.setattr(
        "telephony.operations.shutdown.DrainingServer.run", lambda self, sockets=None: served.append(sockets)
    )
    monkeypatch.setattr("telephony.operations.workers.run_workers", lambda *_: pytest.fail("started workers"))
    assert main(["serve"]) == 0  # the start-up log goes to stderr (telephony.operations.logs)
    assert served == [None]  # uvicorn binds VOICEBOT_PORT itself: no supervisor, no proxy
    assert "one process, up to 50 calls (VOICEBOT_MAX_CALLS), streams on /media-stream" in capsys.readouterr().err


def test_serve_with_workers_refuses_without_a_proxy_and_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("telephony.operations.nginx.nginx_binary", lambda: None)
    monkeypatch.setattr("telephony.operations.workers.run_workers", lambda *_: pytest.fail("started workers"))
    assert main(["serve", "--workers", "2"]) == 2
    error = capsys.readouterr().err
    assert "--workers 2 needs a proxy" in error and "apt-get install nginx-light" in error
    assert "VOICEBOT_PROXY=external" in error and "--workers 1" in error
    started: list[int] = []
    monkeypatch.setattr("telephony.operations.workers.run_workers", lambda _s, _a, count: started.append(count) or 0)
    monkeypatch.setenv("VOICEBOT_PROXY", "external")  # your own proxy in front: nothing to install here
    assert main(["serve", "--workers", "2"]) == 0
    assert started == [2]

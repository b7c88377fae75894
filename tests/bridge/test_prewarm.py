"""Pre-warmed agents: the model connects while Twilio sets up the stream, and is never leaked."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import replace

import httpx
import pytest

from telephony.bridge.prewarm import WARM_PARAMETER
from telephony.twilio.stream_route import instance_name

from ..conftest import TEST_SETTINGS, harness
from ..fakes.model import Hold, Say, ScriptedModel
from ..fakes.rest import FakeCallControl
from .test_bridge import frame_hz

WARM = replace(TEST_SETTINGS, prewarm=True)
CALL_SID = "CA" + "1" * 32


def slow_model() -> ScriptedModel:
    """A model that takes 0.6 s to connect, then greets at once."""
    return ScriptedModel([Say("Hello!", 0.3, tone_hz=1000), Hold()], start_delay=0.6)


async def webhook(base: str, **form: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=f"http://{base}") as client:
        return await client.post("/twiml", data={"CallSid": CALL_SID, "From": "+15550001111", **form})


async def first_audio_after_start(prewarm: bool) -> float:
    async with harness(slow_model, settings=replace(WARM, prewarm=prewarm)) as h:
        await webhook(h.base)
        await asyncio.sleep(1.0)  # Twilio opens the stream about a second after the webhook
        async with h.caller() as call:
            await call.connect()
            await call.silence(1.2)
            await call.stop()
        first = next(item.at for item in call.received if item.message["event"] == "media")
        assert len(h.models) == 1 and h.calls[0].call_sid == CALL_SID
    return first


async def test_a_prewarmed_agent_speaks_without_the_connection_delay() -> None:
    warm = await first_audio_after_start(prewarm=True)
    cold = await first_audio_after_start(prewarm=False)
    assert cold >= 0.6  # the model's own connection time, paid after the stream started
    assert warm < 0.3  # paid while the phone was still connecting


async def test_a_prewarmed_agent_whose_stream_never_comes_is_stopped() -> None:
    async with harness(slow_model, settings=replace(WARM, prewarm_ttl_s=1.0)) as h:
        await webhook(h.base)
        await asyncio.sleep(0.2)
        assert h.app.state.prewarmer.pending == 1
        for _ in range(40):
            if h.models[0].stopped:
                break
            await asyncio.sleep(0.05)
        assert h.models[0].stopped and h.app.state.prewarmer.pending == 0


async def test_a_call_that_ends_before_its_stream_releases_its_agent() -> None:
    async with harness(slow_model, settings=WARM) as h:
        await webhook(h.base)
        async with httpx.AsyncClient(base_url=f"http://{h.base}") as client:
            assert h.app.state.prewarmer.pending == 1
            await client.post("/status/call", data={"CallSid": CALL_SID, "CallStatus": "no-answer"})
        assert h.app.state.prewarmer.pending == 0
        # harness(): on exit, the agent was stopped (or never got connected) and no task is left


async def test_a_prewarmed_agent_that_fails_to_start_gets_the_apology() -> None:
    rest = FakeCallControl()
    maker = lambda: ScriptedModel([Hold()], fail_start=ConnectionError("no credentials"))  # noqa: E731
    async with harness(maker, settings=WARM, hangup=rest) as h:
        await webhook(h.base)
        await asyncio.sleep(0.2)
        async with h.caller() as call:
            await call.connect()
            talker = asyncio.create_task(call.silence(10))
            await call.wait_closed(10)
            talker.cancel()
    assert len(rest.calls) == 1
    assert any(frame_hz(frame.payload) > 0 for frame in call.heard)  # the apology played


async def prewarm_counts(base: str) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=f"http://{base}") as client:
        text = (await client.get("/metrics")).text
    counts = {}
    for line in text.splitlines():
        if line.startswith("voicebot_prewarm_total{"):
            counts[line.split('outcome="')[1].split('"')[0]] = float(line.rsplit(" ", 1)[1])
    return counts


async def test_the_twiml_names_who_prewarmed_and_the_stream_that_comes_back_is_a_hit() -> None:
    async with harness(slow_model, settings=WARM) as h:
        response = await webhook(h.base)
        parameters = dict(re.findall(r'<Parameter name="([^"]+)" value="([^"]*)"', response.text))
        assert parameters[WARM_PARAMETER] == instance_name(WARM)
        await asyncio.sleep(1.0)
        async with h.caller(parameters=parameters) as call:
            await call.connect()
            await call.silence(0.6)
            await call.stop()
        assert len(h.models) == 1 and call.media_payloads()
        assert await prewarm_counts(h.base) == {"hit": 1.0}


async def test_a_stream_prewarmed_elsewhere_starts_cold_with_a_log_line_and_a_metric(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="telephony")
    async with harness(slow_model, settings=WARM) as h:
        # The webhook went to another replica (it named itself), the stream came here: no agent waits for it.
        parameters = {"From": "+15550001111", "To": "+15550002222", WARM_PARAMETER: "voicebot-7/w/1"}
        async with h.caller(parameters=parameters) as call:
            await call.connect()
            await call.silence(1.2)
            await call.stop()
        assert len(h.models) == 1 and call.media_payloads()  # built cold, and it spoke
        assert await prewarm_counts(h.base) == {"miss": 1.0}
    miss = [r.getMessage() for r in caplog.records if "pre-warm miss" in r.getMessage()]
    assert len(miss) == 1 and miss[0].startswith(f"call={CALL_SID} |") and "voicebot-7/w/1" in miss[0]


async def test_a_stream_after_its_prewarm_expired_is_counted_late_and_still_answered() -> None:
    async with harness(slow_model, settings=replace(WARM, prewarm_ttl_s=0.5)) as h:
        response = await webhook(h.base)
        parameters = dict(re.findall(r'<Parameter name="([^"]+)" value="([^"]*)"', response.text))
        await asyncio.sleep(1.5)  # the TTL passes: the warm agent is given up
        async with h.caller(parameters=parameters) as call:
            await call.connect()
            await call.silence(1.2)
            await call.stop()
        assert len(h.models) == 2 and call.media_payloads()
        assert await prewarm_counts(h.base) == {"discarded": 1.0, "late": 1.0}

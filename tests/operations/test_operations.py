"""What operators see and rely on: /metrics, the call limit, JSON logs."""

from __future__ import annotations

import io
import json
import logging

import httpx
import numpy as np
import pytest
import websockets

from telephony.app import create_app
from telephony.codec import pcm16_to_ulaw
from telephony.operations.logs import CallLog, JsonFormatter, configure_logging
from telephony.operations.tracing import setup_tracing
from telephony.simulation.local_app.loopback import serve_app

from ..conftest import TEST_SETTINGS, Harness, harness
from ..fakes.model import BargeIn, Hold, Say, UserSaid, WaitForAudio


def metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.rsplit(" ", 1)[0] == name:
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


BARGED_IN_TURN = [
    WaitForAudio(0.5),
    UserSaid("hello"),
    Say("hi there", 3.0, tone_hz=1000, stop=False),  # still playing when a loaded machine's barge-in comes late
    WaitForAudio(0.3),
    BargeIn(),
    Hold(),
]
"""One caller turn, answered, and the answer talked over."""
HELLO = pcm16_to_ulaw((0.3 * 32767 * np.sin(2 * np.pi * 300 * np.arange(2400) / 8000)).astype("<i2").tobytes())
"""0.3 s of caller "speech" (a tone): the bridge times the answer's latency from its end."""


async def answered_then_interrupted(h: Harness) -> None:
    async with h.caller() as call:
        await call.connect()
        await call.stream(HELLO)
        await call.silence(0.8)
        for _ in range(30):  # on a loaded machine the model takes the caller's audio late, and its barge-in with it
            if call.events("clear"):
                break
            await call.silence(0.1)
        await call.stop()
        await call.wait_closed(3)


async def test_metrics_count_calls_latency_and_barge_ins() -> None:
    async with harness(BARGED_IN_TURN) as h:
        await answered_then_interrupted(h)
        async with httpx.AsyncClient(base_url=f"http://{h.base}") as client:
            response = await client.get("/metrics")
    text = response.text
    assert response.headers["content-type"].startswith("text/plain")
    assert metric(text, 'voicebot_calls_total{ended_by="caller"}') == 1
    assert metric(text, "voicebot_calls_active") == 0
    assert metric(text, "voicebot_turn_latency_seconds_count") == 1
    assert metric(text, "voicebot_barge_ins_per_call_sum") == 1
    assert metric(text, "voicebot_call_duration_seconds_count") == 1


async def test_beyond_the_call_limit_callers_hear_a_polite_busy_message() -> None:
    async with harness([Hold()], max_calls=1) as h:
        async with httpx.AsyncClient(base_url=f"http://{h.base}") as client:
            first = await client.post("/twiml", data={"CallSid": "CA" + "1" * 32})
            assert "<Connect>" in first.text
            second = await client.post("/twiml", data={"CallSid": "CA" + "2" * 32})
            assert "all our lines are busy" in second.text and "<Hangup" in second.text
            async with h.caller() as call:
                await call.connect()
                await call.silence(0.2)
                with pytest.raises(websockets.InvalidStatus):  # a stream beyond the limit is refused outright
                    async with h.caller(call_sid="CA" + "3" * 32):
                        pass
                await call.stop()
            text = (await client.get("/metrics")).text
    assert metric(text, 'voicebot_calls_refused_total{reason="busy"}') == 1
    assert metric(text, 'voicebot_calls_refused_total{reason="stream_over_limit"}') == 1


def test_json_logs_carry_the_call_sid() -> None:
    record = logging.LogRecord("telephony.bridge.session", logging.INFO, __file__, 1, "hello %s", ("world",), None)
    adapter = CallLog(logging.getLogger("x"), "CA123")
    message, kwargs = adapter.process("hello %s", {})
    record.msg = message
    record.__dict__.update(kwargs["extra"])
    entry = json.loads(JsonFormatter().format(record))
    assert entry["call_sid"] == "CA123" and entry["message"] == "call=CA123 | hello world"
    assert entry["level"] == "INFO" and entry["logger"] == "telephony.bridge.session"


async def test_request_lines_mask_the_console_key_and_stream_ticket(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("uvicorn", "uvicorn.access", "uvicorn.error"):  # as in a fresh `voicebot serve` process
        monkeypatch.setattr(logging.getLogger(name), "handlers", [])
        monkeypatch.setattr(logging.getLogger(name), "propagate", True)
    configure_logging("INFO")
    out = io.StringIO()
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(out)
    async with serve_app(create_app(TEST_SETTINGS), log_level="info", log_config=None) as base:
        async with httpx.AsyncClient(base_url=f"http://{base}") as client:
            await client.get("/console/events", params={"call": "CA1", "key": "s3cret-key"})
        with pytest.raises(websockets.InvalidStatus):
            async with websockets.connect(f"ws://{base}/console/stream?console=t1cket&call=CA1"):
                pass
    text = out.getvalue()
    assert "/console/events?call=CA1&key=[redacted]" in text and "console=[redacted]&call=CA1" in text, text
    assert "s3cret-key" not in text and "t1cket" not in text


def test_tracing_is_off_unless_an_otlp_endpoint_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert setup_tracing() is False


def test_tracing_without_the_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    try:
        import opentelemetry.exporter.otlp.proto.http  # noqa: F401
    except ImportError:
        pass
    else:  # pragma: no cover - only when the otel extra is installed
        pytest.skip("the otel extra is installed")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert setup_tracing() is False
    assert "uv sync --extra otel" in caplog.text


async def test_stats_report_the_bridge_latencies(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="telephony")
    async with harness(BARGED_IN_TURN) as h:
        await answered_then_interrupted(h)
        async with httpx.AsyncClient(base_url=f"http://{h.base}") as client:
            stats = (await client.get("/stats")).json()
    latency = stats["latency"]
    assert set(latency) == {
        "frame_to_send",
        "caller_audio_to_model",
        "speech_audio_to_model",
        "audio_to_frame",
        "barge_in_to_clear",
        "start_to_first_audio",
        "turn",
    }
    assert latency["frame_to_send"]["count"] >= 10 and latency["barge_in_to_clear"]["count"] == 1
    # Ordered, and in milliseconds (the scripted turn answers after a few hundred); how fast is benchmarks' business.
    assert all(0 <= row["p50_ms"] <= row["p99_ms"] <= row["max_ms"] < 10_000 for row in latency.values())
    assert latency["turn"]["p50_ms"] > 50
    summary = next(record.getMessage() for record in caplog.records if "call ended" in record.getMessage())
    assert "turns=1 barge_ins=1" in summary and "barge_in_to_clear=" in summary

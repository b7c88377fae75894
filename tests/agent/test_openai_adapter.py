"""The OpenAI Realtime adapter's own parts: the endpoint, the operator's hints, the audio items, the start-up line."""

from __future__ import annotations

import ssl
from dataclasses import replace

import pytest
from strands.bidi.models.model import ConnectionTimeoutError

from agent.heard import HeardAudio
from agent.models import create_model, describe_model
from agent.openai import DEFAULT_REALTIME_URL, OpenAIRealtime, OpenAIRealtimeError, RealtimeEndpoint
from agent.openai.audio_items import KEEP, AudioItems
from agent.openai.endpoint import realtime_url
from agent.openai.errors import RealtimeTarget, operator_hint

from ..conftest import TEST_SETTINGS

TARGET = RealtimeTarget(model_id="gpt-realtime", endpoint="wss://example.invalid/v1/realtime")


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("https://api.openai.com/v1", "wss://api.openai.com/v1/realtime"),
        ("http://127.0.0.1:8080/v1/", "ws://127.0.0.1:8080/v1/realtime"),
        ("https://proxy.example/openai/v1", "wss://proxy.example/openai/v1/realtime"),
        ("wss://host/v1/realtime", "wss://host/v1/realtime"),
    ],
)
def test_the_realtime_url_sits_beside_the_rest_base(base: str, url: str) -> None:
    assert realtime_url(base) == url


def test_the_endpoint_comes_from_the_sdk_variables() -> None:
    assert RealtimeEndpoint.from_env({}) == RealtimeEndpoint(DEFAULT_REALTIME_URL, None)
    endpoint = RealtimeEndpoint.from_env({"OPENAI_BASE_URL": "https://h/v1", "SSL_CERT_FILE": "/ca.pem"})
    assert endpoint.url == "wss://h/v1/realtime" and endpoint.describe() == "wss://h/v1/realtime (trusting /ca.pem)"
    with pytest.raises(ValueError, match="OPENAI_BASE_URL"):
        RealtimeEndpoint.from_env({"OPENAI_BASE_URL": "api.openai.com"})


def test_the_factory_builds_the_adapter_and_describes_its_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    settings = replace(TEST_SETTINGS, model="openai", model_id=None)
    model = create_model(settings)
    assert isinstance(model, OpenAIRealtime) and isinstance(model, HeardAudio)
    assert model.get_audio_config()["input"]["sample_rate"] == 24000
    assert (
        describe_model(settings)
        == "model=openai model_id=gpt-realtime voice=alloy endpoint=ws://127.0.0.1:9/v1/realtime"
    )


def test_fatal_errors_and_the_session_limit_are_raised_from_the_events(monkeypatch: pytest.MonkeyPatch) -> None:
    model = OpenAIRealtime(model_id="gpt-realtime", transcription_model_id=None, api_key="sk-test")
    with pytest.raises(OpenAIRealtimeError, match="rate_limit_exceeded"):
        model._convert_openai_event({"type": "error", "error": {"code": "rate_limit_exceeded", "message": "slow"}})
    with pytest.raises(ConnectionTimeoutError):
        model._convert_openai_event({"type": "error", "error": {"code": "session_expired", "message": "hour"}})
    assert not model._convert_openai_event({"type": "error", "error": {"code": "response_cancel_not_active"}})


@pytest.mark.parametrize(
    ("error", "hint"),
    [
        (OpenAIRealtimeError("invalid_api_key", ""), "check OPENAI_API_KEY"),
        (OpenAIRealtimeError("model_not_found", ""), "does not offer gpt-realtime"),
        (OpenAIRealtimeError("insufficient_quota", ""), "limiting this key (insufficient_quota)"),
        (ssl.SSLCertVerificationError("self-signed"), "set SSL_CERT_FILE"),
        (ConnectionRefusedError(111, "refused"), "check OPENAI_BASE_URL"),
    ],
)
def test_each_failure_gets_the_operators_next_step(error: BaseException, hint: str) -> None:
    assert hint in (operator_hint(error, TARGET) or "")


def test_audio_items_remember_the_recent_answers_and_how_much_audio_each_has() -> None:
    items = AudioItems()
    items.audio("content-1", "item_a", 0, 48_000)
    items.audio("content-1", "item_a", 0, 24_000)
    found = items.find("content-1")
    assert found is not None and (found.item_id, found.content_index, found.audio_ms) == ("item_a", 0, 1500.0)
    for index in range(KEEP):
        items.audio(f"later-{index}", f"item_{index}", 0, 48)
    assert items.find("content-1") is None and items.find(f"later-{KEEP - 1}") is not None


def test_strands_still_reads_the_url_constant_before_its_first_await() -> None:
    """The endpoint seam (``agent.openai.model._AtEndpoint``) relies on this: if strands moves the URL, this fails."""
    import inspect

    from strands.bidi.models.openai.realtime import OpenAIRealtimeModel

    source = inspect.getsource(OpenAIRealtimeModel.start)
    assert "OPENAI_REALTIME_URL" in source
    assert source.index("OPENAI_REALTIME_URL") < source.index("await ")

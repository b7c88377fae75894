"""Stream URLs that name the worker or replica holding the call's pre-warmed agent."""

from __future__ import annotations

from telephony.config import Settings
from telephony.simulation.caller.simulated_caller import twilio_signature
from telephony.twilio.security import verify_websocket_signature_over
from telephony.twilio.stream_route import instance_name, signed_urls, stream_path, stream_url


def sign_websocket(token: str, url: str) -> str:
    return twilio_signature(token, url, {})


def test_one_process_streams_to_the_plain_path() -> None:
    settings = Settings(public_url="https://bot.example.com")
    assert stream_path(settings) == "/media-stream"
    assert stream_url(settings) == "wss://bot.example.com/media-stream"
    assert stream_url(Settings(), "127.0.0.1:9000") == "wss://127.0.0.1:9000/media-stream"


def test_each_worker_names_itself_in_the_path() -> None:
    settings = Settings(public_url="https://bot.example.com", workers=3, worker_index=2)
    assert stream_url(settings) == "wss://bot.example.com/w/2/media-stream"
    assert instance_name(settings).endswith("/w/2")


def test_a_replica_url_carries_the_stream_to_that_replica() -> None:
    settings = Settings(
        public_url="https://voice.example.com",
        replica_url="https://voice.example.com/replicas/voicebot-2",
        workers=2,
        worker_index=1,
    )
    assert stream_url(settings) == "wss://voice.example.com/replicas/voicebot-2/w/1/media-stream"
    assert instance_name(settings) == "replicas/voicebot-2/w/1"


def test_signatures_are_accepted_over_urls_this_deployment_produces_only() -> None:
    settings = Settings(public_url="https://voice.example.com", workers=2, worker_index=1)
    urls = signed_urls(settings, "/w/0/media-stream")  # worker 0's stream, landed here
    token = "12345"
    for url in ("wss://voice.example.com/w/1/media-stream", "wss://voice.example.com/w/0/media-stream"):
        assert verify_websocket_signature_over(token, urls, sign_websocket(token, url))
    assert not verify_websocket_signature_over(
        token, urls, sign_websocket(token, "wss://evil.example/w/0/media-stream")
    )
    assert "wss://voice.example.com/other" not in signed_urls(settings, "/other")

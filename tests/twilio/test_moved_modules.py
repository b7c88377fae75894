"""Modules that moved keep their old import paths, and names that changed keep their old names."""

from __future__ import annotations

from ..conftest import TEST_SETTINGS


def test_the_media_streams_wire_format_still_imports_from_the_bridge() -> None:
    from telephony.bridge import protocol
    from telephony.bridge.protocol import ProtocolError, Start, parse_message
    from telephony.twilio import media_streams

    assert parse_message is media_streams.parse_message and Start is media_streams.Start
    assert ProtocolError is media_streams.ProtocolError
    assert all(getattr(protocol, name) is getattr(media_streams, name) for name in protocol.__all__)


def test_the_calls_api_client_still_imports_as_call_control() -> None:
    from telephony.twilio import call_control, calls_api
    from telephony.twilio.call_control import CallControlClient, TwilioCallControl

    assert TwilioCallControl is calls_api.TwilioCallsApi and CallControlClient is calls_api.CallsApi
    assert calls_api.TwilioCallControl is calls_api.TwilioCallsApi  # the old class names, in the new module too
    assert all(getattr(call_control, name) is getattr(calls_api, name) for name in call_control.__all__)


def test_the_app_module_keeps_its_helpers() -> None:
    from telephony.app import STREAM_PATH, answered_by_note, create_app, status_url, stream_url, warm_transfers

    assert STREAM_PATH == "/media-stream" and callable(create_app) and callable(warm_transfers)
    assert stream_url(TEST_SETTINGS) == "wss://bot.example.com/media-stream"
    assert status_url(TEST_SETTINGS, "call") == "https://bot.example.com/status/call"
    assert answered_by_note("human") == "Answering machine detection: a person answered this call."


def test_the_console_state_still_imports_from_its_routes_module() -> None:
    from telephony.console import state
    from telephony.console.routes import Console, console_for

    assert Console is state.Console and console_for is state.console_for

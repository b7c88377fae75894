"""The Gemini adapter without a server: where it says it connects, and what it tells the operator."""

from __future__ import annotations

import ssl
from dataclasses import replace

import pytest
from google.genai import errors
from strands.bidi.types import BidiMessage, BidiToolUseBlocksEvent
from strands.types.content import TextBlock
from strands.types.tools import ToolResultBlock, ToolUse

from agent.gemini import GeminiEndpoint, GeminiLiveModel, GeminiTarget, operator_hint
from agent.gemini.tool_results import ToolCalls
from agent.models import create_model, describe_model
from telephony.config import Settings

LIVE_PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
TARGET = GeminiTarget("gemini-live-2.5-flash-preview", "wss://127.0.0.1:1" + LIVE_PATH)


def test_the_endpoint_comes_from_the_environment_as_google_genai_reads_it() -> None:
    # google-genai's default base URL ends in "/", and the SDK appends "/ws/...": it dials "//ws/..."
    assert GeminiEndpoint.from_env({}) == GeminiEndpoint("wss://generativelanguage.googleapis.com/" + LIVE_PATH)
    local = GeminiEndpoint.from_env({"GOOGLE_GEMINI_BASE_URL": "https://127.0.0.1:8443", "SSL_CERT_FILE": "/ca.pem"})
    assert local == GeminiEndpoint("wss://127.0.0.1:8443" + LIVE_PATH, "/ca.pem")
    assert GeminiEndpoint.from_env({"GOOGLE_GEMINI_BASE_URL": "http://gw:80"}).url.startswith("wss://gw:80/ws/")


def test_the_model_built_for_gemini_is_strands_class_and_knows_its_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "fake")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "https://127.0.0.1:8443")
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    settings = replace(Settings(), model="gemini")
    model = create_model(settings)
    assert isinstance(model, GeminiLiveModel)
    assert model.endpoint.url == "wss://127.0.0.1:8443" + LIVE_PATH
    assert model.get_audio_config()["input"]["sample_rate"] == 16000
    assert model.get_audio_config()["output"]["sample_rate"] == 24000
    assert describe_model(settings).startswith("model=gemini model_id=gemini-live-2.5-flash-preview")
    # a base URL in client_args wins over the environment, as in google-genai
    moved = GeminiLiveModel(model_id="m", client_args={"http_options": {"base_url": "https://10.0.0.1:9"}})
    assert moved.endpoint.url == "wss://10.0.0.1:9" + LIVE_PATH


def test_no_key_says_which_variable_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="No API key") as raised:
        GeminiLiveModel(model_id="m")
    assert "what to do: Gemini found no API key: set GOOGLE_API_KEY" in raised.value.__notes__[0]


@pytest.mark.parametrize(
    ("error", "hint"),
    [
        (errors.APIError(1007, "API key not valid. Please pass a valid API key."), "rejected the API key"),
        (errors.APIError(1008, "models/x is not found for API version v1beta"), "does not offer gemini-live-2.5"),
        (errors.APIError(1011, "You exceeded your current quota"), "(quota or rate)"),
        (ssl.SSLCertVerificationError("certificate verify failed"), "set SSL_CERT_FILE"),
        (ConnectionRefusedError(111, "Connect call failed"), "cannot reach the Gemini Live API at wss://127.0.0.1:1"),
    ],
    ids=["bad-key", "no-such-model", "quota", "untrusted", "unreachable"],
)
def test_refusals_get_the_operators_next_step(error: BaseException, hint: str) -> None:
    assert hint in (operator_hint(error, TARGET) or "")


def test_other_errors_get_no_hint() -> None:
    assert operator_hint(errors.APIError(1000, "bye"), TARGET) is None
    assert operator_hint(RuntimeError("boom"), TARGET) is None


def test_a_result_for_a_call_another_connection_made_goes_as_text() -> None:
    calls = ToolCalls()
    use = ToolUse(toolUseId="call-1", name="lookup", input={"query": "523"})
    calls.seen(BidiToolUseBlocksEvent(tool_uses=[use]))
    result = ToolResultBlock(tool_use_id="call-1", status="success", content=[{"text": "found 523"}])
    message = BidiMessage(content=[result])
    assert calls.for_this_connection(message) == [message]  # the connection that made the call takes the result
    calls.new_connection()
    [as_text] = calls.for_this_connection(message)  # the one that replaced it never saw the call
    [block] = as_text.content
    assert isinstance(block, TextBlock) and "tool call finished" in block.text
    assert 'Tool: lookup\nArguments: {"query": "523"}\nStatus: success\nResult:\nfound 523' in block.text
    # a result of its own and a late one: strands' messages may not mix results with text, so two messages
    calls.seen(BidiToolUseBlocksEvent(tool_uses=[ToolUse(toolUseId="call-2", name="lookup", input={})]))
    own = ToolResultBlock(tool_use_id="call-2", status="success", content=[{"json": {"n": 1}}])
    first, second = calls.for_this_connection(BidiMessage(content=[result, own]))
    assert first.content == [own] and isinstance(second.content[0], TextBlock)

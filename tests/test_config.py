"""Configuration: one validated place; errors name the variable and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from telephony.config import ConfigError, Settings, load_settings


def test_defaults() -> None:
    settings = load_settings({})
    assert settings == Settings()
    assert settings.host == "127.0.0.1" and settings.port == 8080 and settings.model == "nova"
    assert not settings.can_use_rest


def test_reads_the_environment() -> None:
    settings = load_settings(
        {
            "PUBLIC_URL": "https://abc.ngrok.app",
            "VOICEBOT_PORT": "9000",
            "TWILIO_ACCOUNT_SID": "AC123",
            "TWILIO_AUTH_TOKEN": "tok",
            "TWILIO_PHONE_NUMBER": "+15551234567",
            "VOICEBOT_TRANSFER_TO": "sip:desk@example.com",
            "VOICEBOT_HANGUP_GRACE": "0.25",
            "VOICEBOT_MODEL": "openai",
        }
    )
    assert settings.public_host == "abc.ngrok.app" and settings.port == 9000
    assert settings.can_use_rest and settings.hangup_grace_s == 0.25 and settings.model == "openai"


def test_secrets_stay_out_of_repr() -> None:
    settings = load_settings(
        {
            "TWILIO_ACCOUNT_SID": "AC123",
            "TWILIO_AUTH_TOKEN": "super-secret",
            "VOICEBOT_TOKEN_SECRET": "also-secret",
            "PUBLIC_URL": "https://x.example",
        }
    )
    assert "super-secret" not in repr(settings) and "also-secret" not in repr(settings)
    assert settings.verifies_twilio


@pytest.mark.parametrize(
    "environ, names",
    [
        ({"VOICEBOT_PORT": "eighty"}, "VOICEBOT_PORT"),
        ({"VOICEBOT_PORT": "70000"}, "VOICEBOT_PORT"),
        ({"PUBLIC_URL": "abc.ngrok.app"}, "PUBLIC_URL"),
        ({"VOICEBOT_MODEL": "gpt"}, "VOICEBOT_MODEL"),
        ({"TWILIO_ACCOUNT_SID": "AC1"}, "TWILIO_AUTH_TOKEN is not set"),
        ({"TWILIO_AUTH_TOKEN": "x"}, "TWILIO_ACCOUNT_SID is not set"),
        ({"TWILIO_ACCOUNT_SID": "XX1", "TWILIO_AUTH_TOKEN": "x"}, "TWILIO_ACCOUNT_SID must start"),
        ({"VOICEBOT_AGENT": "no_colon"}, "VOICEBOT_AGENT"),
        ({"VOICEBOT_HANGUP_GRACE": "0"}, "VOICEBOT_HANGUP_GRACE"),
        ({"TWILIO_ACCOUNT_SID": "AC1", "TWILIO_AUTH_TOKEN": "x"}, "PUBLIC_URL is not set"),
        ({"TWILIO_PHONE_NUMBER": "555-1234"}, "TWILIO_PHONE_NUMBER"),
        ({"VOICEBOT_TRANSFER_TO": "front desk"}, "VOICEBOT_TRANSFER_TO"),
        ({"VOICEBOT_RESTART_HOLD_MS": "500"}, "VOICEBOT_RESTART_HOLD_MS"),
    ],
)
def test_bad_values_name_the_variable(environ: dict[str, str], names: str) -> None:
    with pytest.raises(ConfigError, match=names):
        load_settings(environ)


def test_dotenv_is_loaded_without_overriding_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("VOICEBOT_PORT=9123\nVOICEBOT_VOICE=tiffany\n")
    monkeypatch.setenv("VOICEBOT_VOICE", "matthew")
    monkeypatch.delenv("VOICEBOT_PORT", raising=False)
    settings = load_settings(dotenv=dotenv)
    assert settings.port == 9123 and settings.voice == "matthew"

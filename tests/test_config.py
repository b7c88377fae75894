"""Configuration: one validated place; errors name the variable and the fix."""

from __future__ import annotations

import re
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
        ({"VOICEBOT_NOVA_OUTPUT_RATE": "22050"}, "VOICEBOT_NOVA_OUTPUT_RATE=22050 is not a rate Nova Sonic speaks"),
        ({"VOICEBOT_NOVA_OUTPUT_RATE": "24k"}, "VOICEBOT_NOVA_OUTPUT_RATE"),
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


WARM_ENV = {
    "PUBLIC_URL": "https://abc.ngrok.app",
    "TWILIO_ACCOUNT_SID": "AC123",
    "TWILIO_AUTH_TOKEN": "tok",
    "VOICEBOT_TRANSFER_TO": "+15557654321",
    "VOICEBOT_TRANSFER_MODE": "warm",
}


def test_warm_transfer_settings() -> None:
    settings = load_settings({**WARM_ENV, "VOICEBOT_TRANSFER_TARGETS": "sales=+15550009999, desk=sip:desk@example.com"})
    assert settings.transfer_mode == "warm" and settings.transfer_ring_timeout_s == 25
    assert settings.transfer_destinations == {"sales": "+15550009999", "desk": "sip:desk@example.com"}
    assert settings.transfer_hold_url.startswith("https://twimlets.com/holdmusic")
    assert load_settings({}).transfer_mode == "cold"


@pytest.mark.parametrize(
    "change, names",
    [
        ({"VOICEBOT_TRANSFER_MODE": "lukewarm"}, "VOICEBOT_TRANSFER_MODE"),
        ({"VOICEBOT_TRANSFER_TO": ""}, "VOICEBOT_TRANSFER_TO"),
        ({"TWILIO_ACCOUNT_SID": "", "TWILIO_AUTH_TOKEN": ""}, "TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN"),
        ({"VOICEBOT_TRANSFER_RING_TIMEOUT": "2"}, "VOICEBOT_TRANSFER_RING_TIMEOUT"),
        ({"VOICEBOT_TRANSFER_RING_TIMEOUT": "115"}, "VOICEBOT_CALL_TOKEN_TTL"),
        ({"VOICEBOT_TRANSFER_ACCEPT_TIMEOUT": "0"}, "VOICEBOT_TRANSFER_ACCEPT_TIMEOUT"),
        ({"VOICEBOT_TRANSFER_HOLD_URL": "music.mp3"}, "VOICEBOT_TRANSFER_HOLD_URL"),
        ({"VOICEBOT_TRANSFER_TARGETS": "sales=5551234"}, "VOICEBOT_TRANSFER_TARGETS"),
        ({"VOICEBOT_BRIEFING_AGENT": "nocolon"}, "VOICEBOT_BRIEFING_AGENT"),
    ],
)
def test_bad_warm_transfer_settings_name_the_variable(change: dict[str, str], names: str) -> None:
    with pytest.raises(ConfigError, match=names):
        load_settings({**WARM_ENV, **change})


def test_nova_output_rate_reaches_the_model() -> None:
    from agent.models import create_model
    from telephony.config import load_settings

    settings = load_settings({"VOICEBOT_NOVA_OUTPUT_RATE": "24000"}, dotenv=None)
    model = create_model(settings)
    assert model.get_audio_config()["output"]["sample_rate"] == 24000  # type: ignore[attr-defined]
    assert model.get_audio_config()["input"]["sample_rate"] == 16000  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "environ, names",
    [
        ({"VOICEBOT_SEND_CHUNK_MS": "50"}, "VOICEBOT_SEND_CHUNK_MS=50 must be a multiple of 20"),
        ({"VOICEBOT_SEND_CHUNK_MS": "0"}, "VOICEBOT_SEND_CHUNK_MS"),
        ({"VOICEBOT_SEND_CHUNK_SPEAKING_MS": "220"}, "VOICEBOT_SEND_CHUNK_SPEAKING_MS"),
        ({"VOICEBOT_WORKERS": "9"}, "VOICEBOT_WORKERS=9 must be between 1 and 8"),
        ({"VOICEBOT_WORKERS": "2", "VOICEBOT_WORKER_INDEX": "2"}, "VOICEBOT_WORKER_INDEX"),
        ({"VOICEBOT_WORKERS": "2", "VOICEBOT_PORT": "65534"}, "no room for the workers"),
        ({"VOICEBOT_REPLICA_URL": "voicebot-2.internal"}, "VOICEBOT_REPLICA_URL"),
        ({"VOICEBOT_REPLICA_URL": "https://v.example.com/r/2?x=1"}, "no query"),
        ({"VOICEBOT_CRT_THREADS": "-1"}, "VOICEBOT_CRT_THREADS"),
        ({"VOICEBOT_WORKERS": "2", "VOICEBOT_PROXY": "haproxy"}, "VOICEBOT_PROXY='haproxy' is unknown"),
    ],
)
def test_scaling_settings_are_checked(environ: dict[str, str], names: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(names)):
        load_settings(environ)


def test_one_process_by_default_and_zero_means_one_worker_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda _: set(range(64)))
    assert Settings().worker_count == 1  # the default needs no proxy: /media-stream, every pre-warm used
    assert load_settings({}).worker_count == 1
    assert Settings(workers=0).worker_count == 8  # one per core, capped
    monkeypatch.setattr("os.sched_getaffinity", lambda _: {0, 1})
    assert load_settings({"VOICEBOT_WORKERS": "0"}).worker_count == 2
    assert Settings(workers=3).worker_count == 3
    assert Settings().proxy == "nginx"
    assert load_settings({"VOICEBOT_SEND_CHUNK_MS": "100"}).send_chunk_ms == 100


ROOT = Path(__file__).resolve().parents[1]


def test_the_configuration_page_is_current() -> None:
    from telephony.config import configuration_markdown
    from telephony.config.reference import REGENERATE

    page = ROOT / "docs" / "configuration.md"
    assert page.is_file() and page.read_text(encoding="utf-8") == configuration_markdown(), (
        f"docs/configuration.md is not what the settings' declarations say: regenerate it with `{REGENERATE}`"
    )


def test_the_configuration_page_names_every_variable() -> None:
    from telephony.config import EXTERNAL, configuration_markdown, specs

    page = configuration_markdown()
    missing = [name for name in [spec.env for spec in specs()] + list(EXTERNAL) if f"`{name}`" not in page]
    assert missing == []


def test_env_example_sets_only_known_variables() -> None:
    from telephony.config import EXTERNAL, specs

    known = {spec.env for spec in specs()} | set(EXTERNAL)
    named = re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(encoding="utf-8"), re.MULTILINE)
    assert named, ".env.example names no variables: the pattern above no longer reads it"
    assert sorted(set(named) - known) == [], "unknown in .env.example: declare it in telephony/config or EXTERNAL"


def test_every_setting_is_declared_once_with_a_description() -> None:
    from dataclasses import fields

    from telephony.config import env_name, specs

    declared = specs()
    assert {spec.name for spec in declared} == {item.name for item in fields(Settings)}
    assert len({spec.env for spec in declared}) == len(declared) == len(fields(Settings))
    assert all(spec.about.strip() for spec in declared)
    assert env_name("port") == "VOICEBOT_PORT" and env_name("twilio_auth_token") == "TWILIO_AUTH_TOKEN"


def test_the_markdown_command_prints_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    from telephony.config import configuration_markdown
    from telephony.config.__main__ import main

    assert main(["--markdown"]) == 0
    assert capsys.readouterr().out == configuration_markdown()


def test_the_package_keeps_the_modules_public_names() -> None:
    """``telephony.config`` was one module; code importing any of its names keeps working."""
    import telephony.config as config

    before = (
        "DEFAULT_AGENT DEFAULT_BRIEFING_AGENT TRANSFER_MODES TWILIO_HOLD_MUSIC MAX_WORKERS PROXIES FRAME_MS "
        "MODEL_PROVIDERS NOVA_RATES E164 RING_TIMEOUT_RANGE ConfigError Settings env_name load_settings validate "
        "is_destination parse_targets"
    )
    assert [name for name in before.split() if not hasattr(config, name)] == []

"""The one place configuration is read: the environment (and a `.env` file), validated at start-up.

Every setting has an environment variable; a bad value stops the command with a message that names
the variable and how to fix it. Secrets never appear in ``repr`` or logs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_AGENT = "agent.factory:create_agent"
DEFAULT_BRIEFING_AGENT = "agent.briefing:create_briefing_agent"
TRANSFER_MODES = ("cold", "warm")
TWILIO_HOLD_MUSIC = "https://twimlets.com/holdmusic?Bucket=com.twilio.music.classical"
"""Twilio's own hold-music twimlet: what a conference plays while waiting when no waitUrl is given."""
MAX_WORKERS = 8
"""Cap on worker processes: the shipped nginx config routes /w/0/ to /w/7/ (VOICEBOT_PORT + 1 to + 8)."""
PROXIES = ("nginx", "external")
"""Who routes each call's requests to its worker with ``--workers N``: nginx started by ``serve``, or yours."""
FRAME_MS = 20
"""Twilio sends caller audio in 20 ms frames, so chunk sizes for the model are multiples of it."""
MODEL_PROVIDERS = ("nova", "openai", "gemini", "local")
NOVA_RATES = (8000, 16000, 24000)
E164 = re.compile(r"\+[1-9][0-9]{7,14}")


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names the variable and the fix."""


@dataclass(frozen=True)
class Settings:
    # Where Twilio reaches us.
    public_url: str | None = None
    host: str = "127.0.0.1"
    port: int = 8080
    # Twilio account (optional: without it, hang-up closes the socket instead of calling REST).
    twilio_account_sid: str | None = None
    twilio_auth_token: str | None = field(default=None, repr=False)
    twilio_phone_number: str | None = None
    twilio_api_url: str | None = None
    """Where Twilio REST requests go instead of https://api.twilio.com (for local mocks and tests only)."""
    token_secret: str | None = field(default=None, repr=False)
    call_token_ttl_s: float = 120.0
    transfer_to: str | None = None
    transfer_targets: str | None = None
    """``name=destination`` pairs, comma-separated: the transfer tool may name one of these instead."""
    transfer_mode: str = "cold"
    transfer_hold_url: str = TWILIO_HOLD_MUSIC
    transfer_ring_timeout_s: float = 25.0
    transfer_accept_timeout_s: float = 60.0
    briefing_agent: str = DEFAULT_BRIEFING_AGENT
    # The agent.
    agent: str = DEFAULT_AGENT
    model: str = "nova"
    model_id: str | None = None
    voice: str | None = None
    aws_region: str = "us-east-1"
    nova_output_rate: int = 16000
    system_prompt: str | None = None
    greeting: str = "The caller has just been connected. Greet them in one short sentence."
    # Call behaviour.
    start_timeout_s: float = 10.0
    agent_start_timeout_s: float = 15.0
    hangup_grace_s: float = 0.6
    hangup_mark_timeout_s: float = 3.0
    inbound_buffer_ms: int = 2000
    send_chunk_ms: int = 60
    send_chunk_speaking_ms: int = 40
    restart_hold_ms: int = 15000
    """Caller audio held while the model's connection is replaced (telephony.bridge.continuity)."""
    mark_interval_ms: int = 500
    # Limits: every call ends, however the caller, Twilio or the model behave.
    max_calls: int = 50
    max_call_s: float = 3600.0
    call_warning_s: float = 60.0
    wrap_up_s: float = 20.0
    tool_timeout_s: float = 20.0
    prewarm: bool = True
    prewarm_ttl_s: float = 30.0
    pace_lead_ms: int = 0
    caller_silence_timeout_s: float = 15.0
    agent_silence_timeout_s: float = 20.0
    max_message_bytes: int = 64 * 1024
    max_bad_messages: int = 500
    shutdown_grace_s: float = 30.0
    log_level: str = "INFO"
    log_format: str = "text"
    # Recording every call to disk (off unless a folder is given).
    record_dir: str | None = None
    # Scaling out: worker processes, this replica's own address, the model client's I/O threads.
    workers: int = 1
    """1: one process (the default: nothing to route). N: N workers behind a proxy. 0: one per core."""
    worker_index: int = 0
    proxy: str = "nginx"
    run_dir: str | None = None
    """Set by ``serve --workers N`` for its workers: the folder where they share the call table and messages."""
    replica_url: str | None = None
    crt_threads: int = 1
    # The browser call console (off unless enabled; then it needs its own secret).
    console: bool = False
    console_token: str | None = field(default=None, repr=False)

    @property
    def public_host(self) -> str | None:
        """Host (and port) of PUBLIC_URL, used to build the ``wss://`` stream URL."""
        return urlsplit(self.public_url).netloc if self.public_url else None

    @property
    def transfer_destinations(self) -> dict[str, str]:
        """The named destinations of VOICEBOT_TRANSFER_TARGETS (empty when unset; validated at start-up)."""
        return parse_targets(self.transfer_targets or "")

    @property
    def can_transfer(self) -> bool:
        return bool(self.transfer_to or self.transfer_targets)

    @property
    def worker_count(self) -> int:
        """Worker processes ``serve`` runs: VOICEBOT_WORKERS, or one per core this process may use (capped)."""
        if self.workers:
            return self.workers
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        return max(1, min(cores, MAX_WORKERS))

    @property
    def can_use_rest(self) -> bool:
        return bool(self.twilio_account_sid and self.twilio_auth_token)

    @property
    def verifies_twilio(self) -> bool:
        """Signatures and call tokens are checked whenever the auth token is known."""
        return bool(self.twilio_auth_token)


_ENV_NAMES: dict[str, str] = {
    "public_url": "PUBLIC_URL",
    "host": "VOICEBOT_HOST",
    "port": "VOICEBOT_PORT",
    "twilio_account_sid": "TWILIO_ACCOUNT_SID",
    "twilio_auth_token": "TWILIO_AUTH_TOKEN",
    "twilio_phone_number": "TWILIO_PHONE_NUMBER",
    "twilio_api_url": "VOICEBOT_TWILIO_API_URL",
    "token_secret": "VOICEBOT_TOKEN_SECRET",
    "call_token_ttl_s": "VOICEBOT_CALL_TOKEN_TTL",
    "transfer_to": "VOICEBOT_TRANSFER_TO",
    "transfer_targets": "VOICEBOT_TRANSFER_TARGETS",
    "transfer_mode": "VOICEBOT_TRANSFER_MODE",
    "transfer_hold_url": "VOICEBOT_TRANSFER_HOLD_URL",
    "transfer_ring_timeout_s": "VOICEBOT_TRANSFER_RING_TIMEOUT",
    "transfer_accept_timeout_s": "VOICEBOT_TRANSFER_ACCEPT_TIMEOUT",
    "briefing_agent": "VOICEBOT_BRIEFING_AGENT",
    "agent": "VOICEBOT_AGENT",
    "model": "VOICEBOT_MODEL",
    "model_id": "VOICEBOT_MODEL_ID",
    "voice": "VOICEBOT_VOICE",
    "aws_region": "AWS_REGION",
    "nova_output_rate": "VOICEBOT_NOVA_OUTPUT_RATE",
    "system_prompt": "VOICEBOT_SYSTEM_PROMPT",
    "greeting": "VOICEBOT_GREETING",
    "start_timeout_s": "VOICEBOT_START_TIMEOUT",
    "agent_start_timeout_s": "VOICEBOT_AGENT_START_TIMEOUT",
    "hangup_grace_s": "VOICEBOT_HANGUP_GRACE",
    "hangup_mark_timeout_s": "VOICEBOT_HANGUP_MARK_TIMEOUT",
    "inbound_buffer_ms": "VOICEBOT_INBOUND_BUFFER_MS",
    "restart_hold_ms": "VOICEBOT_RESTART_HOLD_MS",
    "mark_interval_ms": "VOICEBOT_MARK_INTERVAL_MS",
    "send_chunk_ms": "VOICEBOT_SEND_CHUNK_MS",
    "send_chunk_speaking_ms": "VOICEBOT_SEND_CHUNK_SPEAKING_MS",
    "workers": "VOICEBOT_WORKERS",
    "worker_index": "VOICEBOT_WORKER_INDEX",
    "proxy": "VOICEBOT_PROXY",
    "run_dir": "VOICEBOT_RUN_DIR",
    "replica_url": "VOICEBOT_REPLICA_URL",
    "crt_threads": "VOICEBOT_CRT_THREADS",
    "max_calls": "VOICEBOT_MAX_CALLS",
    "max_call_s": "VOICEBOT_MAX_CALL_SECONDS",
    "call_warning_s": "VOICEBOT_CALL_WARNING_SECONDS",
    "wrap_up_s": "VOICEBOT_WRAP_UP_SECONDS",
    "tool_timeout_s": "VOICEBOT_TOOL_TIMEOUT",
    "prewarm": "VOICEBOT_PREWARM",
    "prewarm_ttl_s": "VOICEBOT_PREWARM_TTL",
    "pace_lead_ms": "VOICEBOT_PACE_LEAD_MS",
    "caller_silence_timeout_s": "VOICEBOT_CALLER_SILENCE_TIMEOUT",
    "agent_silence_timeout_s": "VOICEBOT_AGENT_SILENCE_TIMEOUT",
    "max_message_bytes": "VOICEBOT_MAX_MESSAGE_BYTES",
    "max_bad_messages": "VOICEBOT_MAX_BAD_MESSAGES",
    "shutdown_grace_s": "VOICEBOT_SHUTDOWN_GRACE",
    "log_format": "VOICEBOT_LOG_FORMAT",
    "record_dir": "VOICEBOT_RECORD_DIR",
    "log_level": "VOICEBOT_LOG_LEVEL",
    "console": "VOICEBOT_CONSOLE",
    "console_token": "VOICEBOT_CONSOLE_TOKEN",
}


def env_name(setting: str) -> str:
    """The environment variable behind a setting (for error messages and docs)."""
    return _ENV_NAMES[setting]


def load_settings(environ: Mapping[str, str] | None = None, dotenv: Path | None = Path(".env")) -> Settings:
    """Read settings from ``environ`` (default: the process environment after loading ``.env``)."""
    if environ is None:
        if dotenv is not None and dotenv.is_file():
            from dotenv import load_dotenv

            load_dotenv(dotenv, override=False)
        environ = os.environ
    defaults = Settings()
    values: dict[str, object] = {}
    for item in fields(Settings):
        raw = environ.get(_ENV_NAMES[item.name])
        if raw is None or raw.strip() == "":
            continue
        values[item.name] = _convert(item.name, raw.strip(), type(getattr(defaults, item.name)))
    settings = Settings(**values)  # type: ignore[arg-type]
    validate(settings)
    return settings


def _convert(name: str, raw: str, kind: type) -> object:
    variable = _ENV_NAMES[name]
    if kind is bool:
        return _flag(variable, raw)
    try:
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
    except ValueError:
        raise ConfigError(f"{variable}={raw!r} is not a number: set it to a plain {kind.__name__}") from None
    return raw


def _flag(variable: str, raw: str) -> bool:
    value = raw.lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{variable}={raw!r} is not on or off: set it to 1 or 0")


_POSITIVE_SECONDS = (
    "start_timeout_s",
    "agent_start_timeout_s",
    "hangup_grace_s",
    "hangup_mark_timeout_s",
    "call_token_ttl_s",
    "max_call_s",
    "wrap_up_s",
    "tool_timeout_s",
    "prewarm_ttl_s",
    "caller_silence_timeout_s",
    "agent_silence_timeout_s",
    "shutdown_grace_s",
    "transfer_accept_timeout_s",
)
RING_TIMEOUT_RANGE = (5, 600)
"""What Twilio accepts for ``Timeout`` on a new call (seconds)."""


def is_destination(value: str) -> bool:
    """An E.164 number or a ``sip:`` URI: what a transfer may dial."""
    return bool(E164.fullmatch(value) or (value.startswith("sip:") and len(value) > 4 and " " not in value))


def parse_targets(raw: str) -> dict[str, str]:
    """``sales=+15551234567, desk=sip:desk@example.com`` as a dict; raises ConfigError on a bad pair."""
    targets: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        name, sep, destination = (piece.strip() for piece in item.partition("="))
        if not sep or not re.fullmatch(r"[A-Za-z0-9_-]+", name) or not is_destination(destination):
            raise ConfigError(
                f"VOICEBOT_TRANSFER_TARGETS entry {item!r} must look like name=+15551234567 or "
                "name=sip:desk@example.com (names: letters, digits, _ and -)"
            )
        if name in targets:
            raise ConfigError(f"VOICEBOT_TRANSFER_TARGETS names {name!r} twice")
        targets[name] = destination
    return targets


def validate(settings: Settings) -> None:
    """Reject values that would only fail later, mid-call."""
    if settings.public_url is not None:
        parts = urlsplit(settings.public_url)
        if parts.scheme not in ("https", "http") or not parts.netloc:
            raise ConfigError(
                f"PUBLIC_URL={settings.public_url!r} is not a URL: set it to your public HTTPS base, "
                "e.g. https://abc123.ngrok.app"
            )
    if not 0 < settings.port < 65536:
        raise ConfigError(f"VOICEBOT_PORT={settings.port} is out of range: use 1-65535")
    if settings.model not in MODEL_PROVIDERS:
        raise ConfigError(f"VOICEBOT_MODEL={settings.model!r} is unknown: choose one of {', '.join(MODEL_PROVIDERS)}")
    if settings.nova_output_rate not in NOVA_RATES:
        raise ConfigError(
            f"VOICEBOT_NOVA_OUTPUT_RATE={settings.nova_output_rate} is not a rate Nova Sonic speaks: use 8000, 16000 "
            "or 24000"
        )
    if ":" not in settings.agent:
        raise ConfigError(f"VOICEBOT_AGENT={settings.agent!r} must look like 'package.module:function'")
    if bool(settings.twilio_account_sid) != bool(settings.twilio_auth_token):
        missing = "TWILIO_AUTH_TOKEN" if settings.twilio_account_sid else "TWILIO_ACCOUNT_SID"
        raise ConfigError(f"{missing} is not set: set both TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN, or neither")
    if settings.twilio_account_sid and not settings.twilio_account_sid.startswith("AC"):
        raise ConfigError("TWILIO_ACCOUNT_SID must start with 'AC' (find it on the Twilio console's home page)")
    if settings.twilio_auth_token and not settings.public_url:
        raise ConfigError(
            "PUBLIC_URL is not set: Twilio signs requests over the public URL, so they cannot be verified "
            "without it (set it to your https:// ngrok or load-balancer address)"
        )
    if settings.twilio_phone_number and not E164.fullmatch(settings.twilio_phone_number):
        raise ConfigError(
            f"TWILIO_PHONE_NUMBER={settings.twilio_phone_number!r} is not in E.164 form: write it like +15551234567"
        )
    if settings.twilio_api_url is not None:
        parts = urlsplit(settings.twilio_api_url)
        if parts.scheme not in ("https", "http") or not parts.netloc or parts.path not in ("", "/") or parts.query:
            raise ConfigError(
                f"VOICEBOT_TWILIO_API_URL={settings.twilio_api_url!r} must be a bare http(s) base with no path or "
                "query, e.g. http://127.0.0.1:4010 (a local Twilio mock; leave it unset to use Twilio)"
            )
    if settings.transfer_to and not (E164.fullmatch(settings.transfer_to) or settings.transfer_to.startswith("sip:")):
        raise ConfigError(
            f"VOICEBOT_TRANSFER_TO={settings.transfer_to!r} must be an E.164 number (+15551234567) or a sip: URI"
        )
    parse_targets(settings.transfer_targets or "")
    _validate_warm_transfer(settings)
    for name in _POSITIVE_SECONDS:
        if getattr(settings, name) <= 0:
            raise ConfigError(f"{_ENV_NAMES[name]} must be greater than 0 (seconds)")
    if not 100 <= settings.inbound_buffer_ms <= 60_000:
        raise ConfigError("VOICEBOT_INBOUND_BUFFER_MS must be between 100 and 60000")
    if not 1000 <= settings.restart_hold_ms <= 120_000:
        raise ConfigError(
            "VOICEBOT_RESTART_HOLD_MS must be between 1000 and 120000: the caller audio held while the model's "
            "connection is replaced (set it above the longest connection set-up you expect)"
        )
    if not 0 <= settings.call_warning_s < settings.max_call_s:
        raise ConfigError("VOICEBOT_CALL_WARNING_SECONDS must be at least 0 and less than VOICEBOT_MAX_CALL_SECONDS")
    if not 0 <= settings.pace_lead_ms <= 10_000:
        raise ConfigError("VOICEBOT_PACE_LEAD_MS must be between 0 (off: send as fast as the model speaks) and 10000")
    if settings.max_calls < 1:
        raise ConfigError("VOICEBOT_MAX_CALLS must be at least 1")
    if not 1024 <= settings.max_message_bytes <= 1024 * 1024:
        raise ConfigError("VOICEBOT_MAX_MESSAGE_BYTES must be between 1024 and 1048576 (Twilio's messages are < 1 KiB)")
    if settings.max_bad_messages < 1:
        raise ConfigError("VOICEBOT_MAX_BAD_MESSAGES must be at least 1")
    if settings.log_format not in ("text", "json"):
        raise ConfigError(f"VOICEBOT_LOG_FORMAT={settings.log_format!r} is unknown: use text or json")
    if settings.record_dir and Path(settings.record_dir).exists() and not Path(settings.record_dir).is_dir():
        raise ConfigError(
            f"VOICEBOT_RECORD_DIR={settings.record_dir!r} is a file: point it at a folder (it is created if missing)"
        )
    for name in ("send_chunk_ms", "send_chunk_speaking_ms"):
        value = getattr(settings, name)
        if not (FRAME_MS <= value <= 200 and value % FRAME_MS == 0):
            raise ConfigError(
                f"{_ENV_NAMES[name]}={value} must be a multiple of {FRAME_MS} between {FRAME_MS} and 200 "
                "(milliseconds of caller audio per send to the model; Twilio's frames are 20 ms)"
            )
    if not 0 <= settings.workers <= MAX_WORKERS:
        raise ConfigError(
            f"VOICEBOT_WORKERS={settings.workers} must be between 1 and {MAX_WORKERS} (0: one per core, "
            f"at most {MAX_WORKERS})"
        )
    if settings.proxy not in PROXIES:
        raise ConfigError(
            f"VOICEBOT_PROXY={settings.proxy!r} is unknown: use nginx (serve starts it in front of the workers) or "
            "external (you run a proxy with deploy/nginx/voicebot.conf)"
        )
    if settings.workers > 1 and settings.port + settings.workers > 65535:
        raise ConfigError(f"VOICEBOT_PORT={settings.port} leaves no room for the workers' own ports above it")
    if not 0 <= settings.worker_index < max(1, settings.workers):
        raise ConfigError("VOICEBOT_WORKER_INDEX is set by `voicebot serve --workers`: do not set it yourself")
    if settings.replica_url is not None:
        parts = urlsplit(settings.replica_url)
        if parts.scheme not in ("https", "http") or not parts.netloc or parts.query:
            raise ConfigError(
                f"VOICEBOT_REPLICA_URL={settings.replica_url!r} is not a URL: set it to this replica's own public "
                "base, e.g. https://voice.example.com/replicas/voicebot-2 (no query: Twilio drops it)"
            )
    if not 0 <= settings.crt_threads <= 16:
        raise ConfigError(
            "VOICEBOT_CRT_THREADS must be between 0 (one I/O thread per call, as the AWS SDK does) and 16"
        )
    if not 100 <= settings.mark_interval_ms <= 10_000:
        raise ConfigError("VOICEBOT_MARK_INTERVAL_MS must be between 100 and 10000")
    if settings.console and len(settings.console_token or "") < 16:
        raise ConfigError(
            "VOICEBOT_CONSOLE is on but VOICEBOT_CONSOLE_TOKEN is not set (or shorter than 16 characters): set it "
            "to a long random secret, e.g. the output of `python -c 'import secrets; print(secrets.token_urlsafe(24))'`"
        )


def _validate_warm_transfer(settings: Settings) -> None:
    """Warm transfer dials a second call and moves calls between streams and a conference: it needs REST."""
    if settings.transfer_mode not in TRANSFER_MODES:
        raise ConfigError(
            f"VOICEBOT_TRANSFER_MODE={settings.transfer_mode!r} is unknown: "
            "use cold (a <Dial>) or warm (brief a person first)"
        )
    low, high = RING_TIMEOUT_RANGE
    if not low <= settings.transfer_ring_timeout_s <= high:
        raise ConfigError(f"VOICEBOT_TRANSFER_RING_TIMEOUT must be between {low} and {high} seconds (Twilio's limits)")
    if settings.transfer_mode != "warm":
        return
    if not settings.can_transfer:
        raise ConfigError(
            "VOICEBOT_TRANSFER_MODE=warm needs someone to transfer to: "
            "set VOICEBOT_TRANSFER_TO (or VOICEBOT_TRANSFER_TARGETS)"
        )
    if not settings.can_use_rest:
        raise ConfigError(
            "VOICEBOT_TRANSFER_MODE=warm moves calls through Twilio's REST API: "
            "set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN"
        )
    parts = urlsplit(settings.transfer_hold_url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ConfigError(
            f"VOICEBOT_TRANSFER_HOLD_URL={settings.transfer_hold_url!r} is not a URL: point it at an MP3/WAV or at "
            f"TwiML that plays music (default {TWILIO_HOLD_MUSIC})"
        )
    if settings.transfer_ring_timeout_s + 10 > settings.call_token_ttl_s:
        raise ConfigError(
            "VOICEBOT_TRANSFER_RING_TIMEOUT must be at least 10 s shorter than VOICEBOT_CALL_TOKEN_TTL: the briefing "
            "call's token has to outlive its ringing (raise the TTL or shorten the ring timeout)"
        )
    if ":" not in settings.briefing_agent:
        raise ConfigError(
            f"VOICEBOT_BRIEFING_AGENT={settings.briefing_agent!r} must look like 'package.module:function'"
        )

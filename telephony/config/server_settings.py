"""Settings for how the server runs: where Twilio reaches it, the Twilio account, workers, recording, console."""

from __future__ import annotations

from dataclasses import dataclass

from .declare import Rule, setting
from .rules import E164_NUMBER, FOLDER, MAX_WORKERS, POSITIVE_SECONDS, PROXIES, between, http_url, one_of


@dataclass(frozen=True)
class ReachSettings:
    """Where Twilio reaches us"""

    public_url: str | None = setting(
        "PUBLIC_URL",
        None,
        "Public HTTPS base Twilio reaches (e.g. your ngrok URL); stream URLs and signatures are built on it. "
        "Required with `TWILIO_AUTH_TOKEN`.",
        rule=http_url(
            "{variable}={value!r} is not a URL: set it to your public HTTPS base, e.g. https://abc123.ngrok.app"
        ),
    )
    host: str = setting("VOICEBOT_HOST", "127.0.0.1", "Interface `serve` listens on.", flag="--host")
    port: int = setting(
        "VOICEBOT_PORT",
        8080,
        "Port `serve` listens on (with several workers, theirs are the next ones up).",
        rule=between(1, 65535, "{variable}={value} is out of range: use 1-65535"),
        flag="--port",
    )


@dataclass(frozen=True)
class TwilioSettings:
    """Twilio account and security

    Without an account the bot still answers calls; hang-up then closes the stream instead of calling REST.
    """

    twilio_account_sid: str | None = setting(
        "TWILIO_ACCOUNT_SID",
        None,
        "With the auth token: turns on signature checks, REST hang-up, transfer, `call` and `setup`.",
        rule=Rule(
            lambda value: not value or value.startswith("AC"),
            "{variable} must start with 'AC' (find it on the Twilio console's home page)",
            "starts with `AC`",
        ),
    )
    twilio_auth_token: str | None = setting(
        "TWILIO_AUTH_TOKEN", None, "Your account's auth token: Twilio's requests are verified with it.", secret=True
    )
    twilio_phone_number: str | None = setting(
        "TWILIO_PHONE_NUMBER",
        None,
        "Your Twilio number: the caller ID for `call` and warm transfers, the number `setup` configures.",
        rule=E164_NUMBER,
    )
    twilio_api_url: str | None = setting(
        "VOICEBOT_TWILIO_API_URL",
        None,
        "For local mocks and tests only: Twilio REST requests go to this base instead of https://api.twilio.com "
        "(e.g. `python -m telephony.simulation.local_twilio_api`).",
        rule=http_url(
            "{variable}={value!r} must be a bare http(s) base with no path or query, e.g. http://127.0.0.1:4010 "
            "(a local Twilio mock; leave it unset to use Twilio)",
            bare=True,
            query=False,
        ),
    )
    token_secret: str | None = setting(
        "VOICEBOT_TOKEN_SECRET",
        None,
        "Key for call tokens (set it only to rotate it independently of the auth token).",
        secret=True,
        shown_default="derived from the auth token",
    )
    call_token_ttl_s: float = setting(
        "VOICEBOT_CALL_TOKEN_TTL",
        120.0,
        "Seconds a call token stays valid (covers ringing for outbound calls).",
        rule=POSITIVE_SECONDS,
    )


@dataclass(frozen=True)
class OperationsSettings:
    """Operations and workers

    Worker processes, this replica's own address, the model client's I/O threads, and logging.
    """

    workers: int = setting(
        "VOICEBOT_WORKERS",
        1,
        "Processes serving calls: 1 (one process, nothing to route), N (behind a proxy) or 0 (one per core).",
        rule=between(
            0,
            MAX_WORKERS,
            f"{{variable}}={{value}} must be between 1 and {MAX_WORKERS} (0: one per core, at most {MAX_WORKERS})",
        ),
        flag="--workers",
    )
    worker_index: int = setting(
        "VOICEBOT_WORKER_INDEX", 0, "Set by `serve --workers N` for each worker: do not set it yourself."
    )
    proxy: str = setting(
        "VOICEBOT_PROXY",
        "nginx",
        "With more than one worker: `nginx` (serve runs nginx on `VOICEBOT_PORT` in front of them) or `external` "
        "(your own proxy with `deploy/nginx/voicebot.conf`).",
        rule=one_of(
            PROXIES,
            "{variable}={value!r} is unknown: use nginx (serve starts it in front of the workers) or external (you "
            "run a proxy with deploy/nginx/voicebot.conf)",
        ),
    )
    run_dir: str | None = setting(
        "VOICEBOT_RUN_DIR",
        None,
        "Set by `serve --workers N` for its workers: the folder where they share the call table and messages.",
    )
    replica_url: str | None = setting(
        "VOICEBOT_REPLICA_URL",
        None,
        "This replica's own public base (e.g. `https://voice.example.com/replicas/voicebot-2`): stream URLs are "
        "built on it, so a call's stream reaches the replica that pre-warmed its agent.",
        rule=http_url(
            "{variable}={value!r} is not a URL: set it to this replica's own public base, e.g. "
            "https://voice.example.com/replicas/voicebot-2 (no query: Twilio drops it)",
            query=False,
        ),
        shown_default="`PUBLIC_URL`",
    )
    crt_threads: int = setting(
        "VOICEBOT_CRT_THREADS",
        1,
        "I/O threads the Nova Sonic client shares across all calls of a process (0: one per call, the SDK's way).",
        rule=between(
            0, 16, "{variable} must be between 0 (one I/O thread per call, as the AWS SDK does) and 16", "0 to 16"
        ),
    )
    log_level: str = setting(
        "VOICEBOT_LOG_LEVEL", "INFO", "Log level. Every line about a call starts with `call=<CallSid>`."
    )
    log_format: str = setting(
        "VOICEBOT_LOG_FORMAT",
        "text",
        "`json` for one JSON object per line (with `call_sid` as a field).",
        rule=one_of(("text", "json"), "{variable}={value!r} is unknown: use text or json"),
    )


@dataclass(frozen=True)
class RecordingSettings:
    """Recording

    Every call recorded to disk: events, WAVs and transcript (off unless a folder is given).
    """

    record_dir: str | None = setting(
        "VOICEBOT_RECORD_DIR", None, "Record every call in a folder under this one.", rule=FOLDER, flag="--record"
    )


@dataclass(frozen=True)
class ConsoleSettings:
    """Call console

    The browser call console: off unless enabled, and then it needs its own secret.
    """

    console: bool = setting("VOICEBOT_CONSOLE", False, "Serve the call console at `/console`.")
    console_token: str | None = setting(
        "VOICEBOT_CONSOLE_TOKEN",
        None,
        "The console's password: 16 characters or more, required with the console.",
        secret=True,
    )

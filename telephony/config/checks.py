"""Validation: each setting's own rule, then the checks that tie settings of a group to others.

Everything here rejects a value that would otherwise only fail later, mid-call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .call_settings import TWILIO_HOLD_MUSIC, DeadAirSettings, LimitSettings, TransferSettings
from .declare import ConfigError, specs_of
from .rules import AGENT_SPEC, http_url
from .server_settings import ConsoleSettings, OperationsSettings, TwilioSettings
from .settings import GROUPS, Settings


def check_twilio_account(settings: Settings) -> None:
    """The account SID and auth token come together, and signatures need the public URL they are made over."""
    if bool(settings.twilio_account_sid) != bool(settings.twilio_auth_token):
        missing = "TWILIO_AUTH_TOKEN" if settings.twilio_account_sid else "TWILIO_ACCOUNT_SID"
        raise ConfigError(f"{missing} is not set: set both TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN, or neither")
    if settings.twilio_auth_token and not settings.public_url:
        raise ConfigError(
            "PUBLIC_URL is not set: Twilio signs requests over the public URL, so they cannot be verified "
            "without it (set it to your https:// ngrok or load-balancer address)"
        )


def check_dead_air(settings: Settings) -> None:
    """The apology comes after the nudge and the reconnect, not before them."""
    if settings.agent_silence_timeout_s <= 2 * settings.answer_timeout_s:
        raise ConfigError(
            f"VOICEBOT_AGENT_SILENCE_TIMEOUT ({settings.agent_silence_timeout_s:g} s) must be more than twice "
            f"VOICEBOT_ANSWER_TIMEOUT ({settings.answer_timeout_s:g} s): the agent is nudged at one, its connection "
            "replaced at two, and only then apologised for"
        )


def check_limits(settings: Settings) -> None:
    """The wrap-up warning must come before the call's end."""
    if not 0 <= settings.call_warning_s < settings.max_call_s:
        raise ConfigError("VOICEBOT_CALL_WARNING_SECONDS must be at least 0 and less than VOICEBOT_MAX_CALL_SECONDS")


HOLD_URL = http_url(
    "{variable}={value!r} is not a URL: point it at an MP3/WAV or at TwiML that plays music "
    f"(default {TWILIO_HOLD_MUSIC})"
)


def check_warm_transfer(settings: Settings) -> None:
    """Warm transfer dials a second call and moves calls between streams and a conference: it needs REST."""
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
    HOLD_URL.check("VOICEBOT_TRANSFER_HOLD_URL", settings.transfer_hold_url)
    if settings.transfer_ring_timeout_s + 10 > settings.call_token_ttl_s:
        raise ConfigError(
            "VOICEBOT_TRANSFER_RING_TIMEOUT must be at least 10 s shorter than VOICEBOT_CALL_TOKEN_TTL: the briefing "
            "call's token has to outlive its ringing (raise the TTL or shorten the ring timeout)"
        )
    AGENT_SPEC.check("VOICEBOT_BRIEFING_AGENT", settings.briefing_agent)


def check_workers(settings: Settings) -> None:
    """Workers listen on the ports above VOICEBOT_PORT; their index is the supervisor's to give."""
    if settings.workers > 1 and settings.port + settings.workers > 65535:
        raise ConfigError(f"VOICEBOT_PORT={settings.port} leaves no room for the workers' own ports above it")
    if not 0 <= settings.worker_index < max(1, settings.workers):
        raise ConfigError("VOICEBOT_WORKER_INDEX is set by `voicebot serve --workers`: do not set it yourself")


def check_console(settings: Settings) -> None:
    """The console shows every call and can end them: never without its own password."""
    if settings.console and len(settings.console_token or "") < 16:
        raise ConfigError(
            "VOICEBOT_CONSOLE is on but VOICEBOT_CONSOLE_TOKEN is not set (or shorter than 16 characters): set it "
            "to a long random secret, e.g. the output of `python -c 'import secrets; print(secrets.token_urlsafe(24))'`"
        )


GROUP_CHECKS: Mapping[type, tuple[Callable[[Settings], None], ...]] = {
    TwilioSettings: (check_twilio_account,),
    LimitSettings: (check_limits,),
    DeadAirSettings: (check_dead_air,),
    TransferSettings: (check_warm_transfer,),
    OperationsSettings: (check_workers,),
    ConsoleSettings: (check_console,),
}
"""The checks across settings, run after the group's own settings are checked one by one."""


def validate(settings: Settings) -> None:
    """Reject values that would only fail later, mid-call: group by group, each setting, then the group."""
    for group in GROUPS:
        for spec in specs_of(group):
            spec.check(getattr(settings, spec.name))
        for check in GROUP_CHECKS.get(group, ()):
            check(settings)

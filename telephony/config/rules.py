"""The values settings may take: the allowed sets and ranges, and the rules that check one value each.

Rules for optional settings that are off when empty (a number, a destination, a folder) accept ``""``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from telephony.codec import FRAME_MS, SoundFileError, load_sound_file

from .declare import ConfigError, Rule

MODEL_PROVIDERS = ("nova", "openai", "gemini", "local")
NOVA_RATES = (8000, 16000, 24000)
TRANSFER_MODES = ("cold", "warm")
MAX_WORKERS = 8
"""Cap on worker processes: the shipped nginx config routes /w/0/ to /w/7/ (VOICEBOT_PORT + 1 to + 8)."""
PROXIES = ("nginx", "external")
"""Who routes each call's requests to its worker with ``--workers N``: nginx started by ``serve``, or yours."""
RING_TIMEOUT_RANGE = (5, 600)
"""What Twilio accepts for ``Timeout`` on a new call (seconds)."""
E164 = re.compile(r"\+[1-9][0-9]{7,14}")


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


def is_http_url(value: str, *, bare: bool = False, query: bool = True) -> bool:
    """An http(s) URL with a host; ``bare``: no path beyond ``/``; ``query``: a query string is allowed."""
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        return False
    return not (bare and parts.path not in ("", "/")) and (query or not parts.query)


def between(low: float, high: float, problem: str = "", allowed: str = "") -> Rule:
    """``low <= value <= high``; the default message is ``VAR must be between low and high``."""
    return Rule(
        lambda value: low <= value <= high,
        problem or f"{{variable}} must be between {low} and {high}",
        allowed or f"{low} to {high}",
    )


def at_least(low: int) -> Rule:
    return Rule(lambda value: value >= low, f"{{variable}} must be at least {low}", f"{low} or more")


POSITIVE_SECONDS = Rule(lambda value: value > 0, "{variable} must be greater than 0 (seconds)", "seconds, more than 0")


def one_of(choices: Iterable[object], problem: str) -> Rule:
    allowed = tuple(choices)
    return Rule(lambda value: value in allowed, problem, " or ".join(f"`{choice}`" for choice in allowed))


def http_url(problem: str, *, bare: bool = False, query: bool = True) -> Rule:
    allowed = "an http(s) base, no path or query" if bare else "an http(s) URL" + ("" if query else ", no query")
    return Rule(lambda value: is_http_url(value, bare=bare, query=query), problem, allowed)


AGENT_SPEC = Rule(
    lambda value: ":" in value, "{variable}={value!r} must look like 'package.module:function'", "`module:function`"
)
E164_NUMBER = Rule(
    lambda value: not value or bool(E164.fullmatch(value)),
    "{variable}={value!r} is not in E.164 form: write it like +15551234567",
    "E.164, e.g. +15551234567",
)
DIAL_DESTINATION = Rule(
    lambda value: not value or bool(E164.fullmatch(value) or value.startswith("sip:")),
    "{variable}={value!r} must be an E.164 number (+15551234567) or a sip: URI",
    "E.164 number or `sip:` URI",
)
TRANSFER_TARGETS = Rule(
    lambda value: isinstance(parse_targets(value), dict),  # parse_targets says which entry is wrong
    "{variable}={value!r} is malformed",
    "`name=destination`, comma-separated",
)
FRAME_MULTIPLE = Rule(
    lambda value: FRAME_MS <= value <= 200 and value % FRAME_MS == 0,
    f"{{variable}}={{value}} must be a multiple of {FRAME_MS} between {FRAME_MS} and 200 "
    "(milliseconds of caller audio per send to the model; Twilio's frames are 20 ms)",
    f"a multiple of {FRAME_MS} from {FRAME_MS} to 200",
)
_LOW, _HIGH = RING_TIMEOUT_RANGE
RING_TIMEOUT = between(
    _LOW,
    _HIGH,
    f"{{variable}} must be between {_LOW} and {_HIGH} seconds (Twilio's limits)",
    f"{_LOW} to {_HIGH} seconds",
)
FOLDER = Rule(
    lambda value: not value or not (Path(value).exists() and not Path(value).is_dir()),
    "{variable}={value!r} is a file: point it at a folder (it is created if missing)",
    "a folder (created if missing)",
)


def _playable(value: str) -> bool:
    """Empty (the shipped sound), ``off``, or a sound file the bridge can play (else a ConfigError saying why)."""
    if value in ("", "off"):
        return True
    try:
        load_sound_file(value)
    except SoundFileError as error:
        raise ConfigError(f"VOICEBOT_HOLD_SOUND={value!r}: {error}") from error
    return True


HOLD_SOUND = Rule(_playable, "{variable}={value!r} is not a sound file", "a WAV or raw μ-law file, or `off`")

"""Every setting, declared once: environment variable, default, type, description and check, in groups.

Each group is a small frozen dataclass (``call_settings``, ``server_settings``); ``Settings`` is all of them at
once. A group's first docstring line is its heading in ``docs/configuration.md``, the rest its introduction.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from urllib.parse import urlsplit

from .call_settings import (
    AudioSettings,
    CallStartSettings,
    DeadAirSettings,
    LimitSettings,
    ModelSettings,
    TransferSettings,
)
from .declare import Spec, specs_of
from .rules import MAX_WORKERS, parse_targets
from .server_settings import (
    ConsoleSettings,
    OperationsSettings,
    ReachSettings,
    RecordingSettings,
    TwilioSettings,
)

GROUPS: tuple[type, ...] = (
    ReachSettings,
    TwilioSettings,
    ModelSettings,
    AudioSettings,
    CallStartSettings,
    LimitSettings,
    DeadAirSettings,
    TransferSettings,
    OperationsSettings,
    RecordingSettings,
    ConsoleSettings,
)
"""Every group, in the order the reference page lists them."""


@dataclass(frozen=True)
class Settings(
    ConsoleSettings,
    RecordingSettings,
    OperationsSettings,
    TransferSettings,
    DeadAirSettings,
    LimitSettings,
    CallStartSettings,
    AudioSettings,
    ModelSettings,
    TwilioSettings,
    ReachSettings,
):
    """Every setting (bases listed last group first: a dataclass puts the last base's fields first)."""

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


@cache
def specs() -> tuple[Spec, ...]:
    """Every setting's declaration, group by group."""
    return tuple(spec for group in GROUPS for spec in specs_of(group))


@cache
def env_names() -> Mapping[str, str]:
    return {spec.name: spec.env for spec in specs()}


def env_name(setting: str) -> str:
    """The environment variable behind a setting (for error messages and docs)."""
    return env_names()[setting]

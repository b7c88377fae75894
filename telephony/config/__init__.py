"""The one place configuration is read: the environment (and a `.env` file), validated at start-up.

Every setting has an environment variable; a bad value stops the command with a message that names
the variable and how to fix it. Secrets never appear in ``repr`` or logs. Each setting is declared once
(``call_settings``, ``server_settings``); loading, validation, ``env_name`` and ``docs/configuration.md``
are read from those declarations. Agent factories get ``AgentSettings``, a view without the secrets.
"""

from __future__ import annotations

from .agent_view import AgentSettings, agent_settings
from .call_settings import DEFAULT_AGENT, DEFAULT_BRIEFING_AGENT, TWILIO_HOLD_MUSIC
from .checks import GROUP_CHECKS, validate
from .declare import ConfigError, Rule, Spec, setting
from .loading import load_settings
from .reference import EXTERNAL, configuration_markdown
from .rules import (
    E164,
    FRAME_MS,
    MAX_WORKERS,
    MODEL_PROVIDERS,
    NOVA_RATES,
    PROXIES,
    RING_TIMEOUT_RANGE,
    TRANSFER_MODES,
    is_destination,
    parse_targets,
)
from .settings import GROUPS, Settings, env_name, specs

__all__ = [
    "DEFAULT_AGENT",
    "DEFAULT_BRIEFING_AGENT",
    "E164",
    "EXTERNAL",
    "FRAME_MS",
    "GROUPS",
    "GROUP_CHECKS",
    "MAX_WORKERS",
    "MODEL_PROVIDERS",
    "NOVA_RATES",
    "PROXIES",
    "RING_TIMEOUT_RANGE",
    "TRANSFER_MODES",
    "TWILIO_HOLD_MUSIC",
    "AgentSettings",
    "ConfigError",
    "Rule",
    "Settings",
    "Spec",
    "agent_settings",
    "configuration_markdown",
    "env_name",
    "is_destination",
    "load_settings",
    "parse_targets",
    "setting",
    "specs",
    "validate",
]

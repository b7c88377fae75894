"""What an agent factory is given: the model and conversation settings, never the server's secrets.

The server's ``Settings`` hold the Twilio auth token, the call-token key and the console password; an agent
author needs none of them. ``AgentSettings.from_settings`` is the one place the view is cut from them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from .loading import load_settings
from .rules import parse_targets
from .settings import Settings, env_names

SECRETS = frozenset({"twilio_auth_token", "token_secret", "console_token"})
"""Settings no agent ever sees (the Twilio account SID, host, ports etc. are left out too: not the agent's)."""

_DEFAULTS = Settings()


@dataclass(frozen=True)
class AgentSettings:
    """The agent-side view of the settings: which model, how it sounds, what it may say and do.

    Its attributes keep the names they have on ``Settings``, so a factory written for ``settings.model`` works
    with either. Reading a server setting from it raises an AttributeError naming the setting.
    """

    model: str = _DEFAULTS.model
    model_id: str | None = _DEFAULTS.model_id
    voice: str | None = _DEFAULTS.voice
    aws_region: str = _DEFAULTS.aws_region
    nova_output_rate: int = _DEFAULTS.nova_output_rate
    crt_threads: int = _DEFAULTS.crt_threads
    """I/O threads the Nova Sonic client shares (a property of the model client the factory builds)."""
    system_prompt: str | None = _DEFAULTS.system_prompt
    greeting: str = _DEFAULTS.greeting
    tool_timeout_s: float = _DEFAULTS.tool_timeout_s
    transfer_to: str | None = _DEFAULTS.transfer_to
    transfer_targets: str | None = _DEFAULTS.transfer_targets
    transfer_mode: str = _DEFAULTS.transfer_mode

    @classmethod
    def from_settings(cls, settings: Settings) -> AgentSettings:
        """The view of the server's settings an agent factory gets."""
        return cls(**{item.name: getattr(settings, item.name) for item in fields(cls)})

    @property
    def transfer_destinations(self) -> dict[str, str]:
        """The named destinations of VOICEBOT_TRANSFER_TARGETS (empty when unset)."""
        return parse_targets(self.transfer_targets or "")

    @property
    def can_transfer(self) -> bool:
        return bool(self.transfer_to or self.transfer_targets)

    if not TYPE_CHECKING:  # a type checker should flag ``view.port`` itself, not accept it as Any

        def __getattr__(self, name: str) -> Any:
            """Only called for names the view lacks: say why a server setting is not here."""
            variable = env_names().get(name)
            if variable is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            if name in SECRETS:
                raise AttributeError(
                    f"settings.{name} ({variable}) is a server secret: agent factories never receive it"
                )
            raise AttributeError(
                f"settings.{name} ({variable}) is a server setting, not part of the AgentSettings agent factories "
                f"receive ({', '.join(item.name for item in fields(self))}); if your agent needs it, read it with "
                "telephony.config.load_settings()"
            )


def agent_settings(settings: Settings | AgentSettings | None = None) -> AgentSettings:
    """The agent's view of ``settings``; without any, of the environment's (for a factory run outside a server)."""
    if isinstance(settings, AgentSettings):
        return settings
    if settings is None:
        settings = load_settings()
    return AgentSettings.from_settings(settings)

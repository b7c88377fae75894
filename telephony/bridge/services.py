"""What every call on this server shares: settings, the agent factory, Twilio's REST client, token checkers,
observers, metrics and the warm-transfer desk. Built once per stream by the app, handed to ``CallSession``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from telephony.bridge.agent_factory import AgentFactory
from telephony.bridge.observer import ObserverFactory
from telephony.bridge.prewarm import Prewarmer
from telephony.bridge.transfer import WarmTransfers
from telephony.config import Settings
from telephony.operations.latency import LatencySamples
from telephony.operations.metrics import Metrics
from telephony.twilio.calls_api import CallsApi
from telephony.twilio.security import CallTokens


@dataclass(frozen=True)
class CallServices:
    """Server-wide dependencies of one call (``None``: the server runs without that feature)."""

    settings: Settings
    agent_factory: AgentFactory
    call_control: CallsApi | None = None
    """Twilio's REST API: hang-ups, transfers (None: a console call, or no credentials)."""
    apology: bytes | None = None
    """The clip played when the agent fails (None: the one shipped with the package)."""
    tokens: CallTokens | None = None
    console_tokens: CallTokens | None = None
    observers: Sequence[ObserverFactory] = ()
    metrics: Metrics | None = None
    latency_book: LatencySamples | None = None
    prewarmer: Prewarmer | None = None
    transfers: WarmTransfers | None = None

    def count_error(self, kind: str) -> None:
        if self.metrics is not None:
            self.metrics.errors.labels(kind=kind).inc()


__all__ = ["CallServices"]

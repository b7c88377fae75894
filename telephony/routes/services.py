"""The server-wide services the routes share, built once per app by ``telephony.app.create_app``.

A route asks for them with the :data:`Services` dependency, which reads ``app.state.services``; a test can
mount one router on a bare app and set ``app.state.services`` to fakes (or override :func:`services`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import Depends
from starlette.requests import HTTPConnection

from telephony.bridge.agent_factory import AgentFactory
from telephony.bridge.observer import ObserverFactory
from telephony.bridge.prewarm import Prewarmer
from telephony.bridge.server_calls import ServerCalls
from telephony.bridge.session import CallSession
from telephony.bridge.transfer import WarmTransfers
from telephony.config import Settings
from telephony.console.state import Console
from telephony.operations.admission import Admission
from telephony.operations.latency import LatencySamples
from telephony.operations.metrics import Metrics
from telephony.recording.recovery import StartupRecovery
from telephony.twilio.calls_api import CallsApi
from telephony.twilio.security import CallTokens


@dataclass(frozen=True, slots=True)
class AppServices:
    """What every route of one server shares: settings, the agent factory, the REST client, checkers, counters."""

    settings: Settings
    agent_factory: AgentFactory
    """The caller's agent, already given the server's settings (``with_settings``)."""
    metrics: Metrics
    admission: Admission
    """Lines in use and whether the server is draining: who may call now."""
    latency: LatencySamples
    calls: ServerCalls
    """The calls this server holds (their sessions) and the word with the other workers."""
    call_control: CallsApi | None = None
    """Twilio's Calls REST API (hang-ups, transfers); None without Twilio credentials."""
    tokens: CallTokens | None = None
    """Mints and checks the call tokens that tie a stream to its webhook; None without a Twilio auth token."""
    prewarmer: Prewarmer | None = None
    transfers: WarmTransfers | None = None
    console: Console | None = None
    observers: Sequence[ObserverFactory] = ()
    """Per-call observers every session gets (the recorder, the console's event feed, the caller's own)."""
    instance: str = ""
    """This worker or replica, as the TwiML's pre-warm parameter names it."""
    recovery: StartupRecovery | None = None
    """Finishes, at start-up, the recordings a killed server left unfinished (with ``VOICEBOT_RECORD_DIR``)."""

    @property
    def sessions(self) -> set[CallSession]:
        return self.calls.sessions

    async def start(self) -> None:
        """What needs the running event loop: with several workers, the word with the others."""
        settings = self.settings
        if self.recovery is not None:
            self.recovery.start()
        if settings.run_dir and settings.workers > 1:
            await self.calls.connect_peers(Path(settings.run_dir), settings.worker_index, settings.workers)

    async def aclose(self) -> None:
        """Stop what the services own, at shutdown (after the calls have drained)."""
        self.calls.close()
        if self.recovery is not None:
            await self.recovery.aclose()
        if self.prewarmer is not None:
            await self.prewarmer.aclose()
        if self.transfers is not None:
            await self.transfers.aclose()
        close = getattr(self.call_control, "aclose", None)
        if close is not None:
            await close()
        self.admission.lines.close()


async def services(connection: HTTPConnection) -> AppServices:
    """The app's services (a FastAPI dependency, for HTTP routes and WebSockets alike).

    ``async`` so FastAPI calls it on the event loop: a plain ``def`` dependency runs in a worker thread, and
    the hop would let requests overtake one another (status callbacks must be handled in arrival order)."""
    found: AppServices = connection.app.state.services
    return found


Services = Annotated[AppServices, Depends(services)]
"""A route parameter annotated ``Services`` receives the app's :class:`AppServices`."""

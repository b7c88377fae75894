"""The HTTP and WebSocket application Twilio talks to: the server's services, and the routers that use them.

``create_app`` builds the server-wide services once (:class:`telephony.routes.services.AppServices`: settings,
agent factory, REST client, token checker, metrics, pre-warmer, warm-transfer desk, the call table, the
console) and mounts the routers of :mod:`telephony.routes`:

- ``POST /twiml``: Twilio's voice webhook (:mod:`telephony.routes.voice`);
- ``WS /media-stream``: one ``CallSession`` per connection, signature-checked before ``accept()``
  (:mod:`telephony.routes.media_stream`);
- ``POST /status/call``, ``/status/stream``, ``/status/amd``: Twilio's status callbacks; with warm transfer
  also ``/status/transfer`` and ``/status/conference`` (:mod:`telephony.routes.status`);
- ``GET /health``, ``/stats``, ``/metrics`` (:mod:`telephony.routes.health`);
- ``/console/...`` with ``VOICEBOT_CONSOLE`` on (:mod:`telephony.console.routes`).

With ``TWILIO_AUTH_TOKEN`` set, every request from Twilio must carry a valid signature.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from fastapi import FastAPI

from agent.models import load_model_code
from telephony.bridge.agent_factory import AgentFactory, load_agent_factory, with_settings
from telephony.bridge.observer import ObserverFactory
from telephony.bridge.prewarm import Prewarmer
from telephony.bridge.server_calls import ServerCalls
from telephony.bridge.transfer import WarmTransfers
from telephony.config import Settings
from telephony.console import routes as console_routes
from telephony.console.state import console_for
from telephony.operations.admission import Admission
from telephony.operations.latency import app_samples
from telephony.operations.lines import Lines, lines_path
from telephony.operations.metrics import Metrics
from telephony.recording.recorder import recorder_factory
from telephony.recording.recovery import StartupRecovery
from telephony.routes import health, media_stream, status, voice
from telephony.routes.services import AppServices
from telephony.routes.twilio_form import FORBIDDEN
from telephony.routes.voice import FORWARDED_PARAMETERS, status_url, stream_url
from telephony.twilio.calls_api import CallsApi, TwilioCallsApi
from telephony.twilio.security import CallTokens, token_secret
from telephony.twilio.stream_route import STREAM_PATH, instance_name
from telephony.twilio.stream_route import stream_path as route_stream_path

__all__ = [
    "FORBIDDEN",
    "FORWARDED_PARAMETERS",
    "STREAM_PATH",
    "answered_by_note",
    "build_services",
    "create_app",
    "status_url",
    "stream_url",
    "warm_transfers",
]

log = logging.getLogger(__name__)

ROUTERS = (voice.router, status.router, media_stream.router, health.router)
"""The server's own routers, in the order they are matched (the console's comes after them)."""


def create_app(
    settings: Settings,
    agent_factory: AgentFactory | None = None,
    call_control: CallsApi | None = None,
    tokens: CallTokens | None = None,
    observers: Sequence[ObserverFactory] = (),
    metrics: Metrics | None = None,
    briefing_factory: AgentFactory | None = None,
) -> FastAPI:
    """Build the app. Tests pass fakes for the agent factories and the REST client."""
    services = build_services(settings, agent_factory, call_control, tokens, observers, metrics, briefing_factory)
    app = FastAPI(title="voicebot", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.services = services
    # The pieces tests, the shutdown hook and the simulations read directly.
    app.state.sessions = services.sessions
    app.state.settings = settings
    app.state.tokens = services.tokens
    app.state.metrics = services.metrics
    app.state.admission = services.admission
    app.state.console = services.console
    app.state.latency = services.latency
    app.state.prewarmer = services.prewarmer
    app.state.transfers = services.transfers
    for router in ROUTERS:
        app.include_router(router)
    if services.console is not None:
        console_routes.install(app)
    return app


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Start what needs the running event loop; at shutdown, close what the app's services own."""
    services: AppServices = app.state.services
    await services.start()
    yield
    await services.aclose()


def build_services(
    settings: Settings,
    agent_factory: AgentFactory | None = None,
    call_control: CallsApi | None = None,
    tokens: CallTokens | None = None,
    observers: Sequence[ObserverFactory] = (),
    metrics: Metrics | None = None,
    briefing_factory: AgentFactory | None = None,
) -> AppServices:
    """The server-wide services, each built once (what ``create_app`` is not given comes from the settings)."""
    factory = with_settings(agent_factory or load_agent_factory(settings.agent), settings)
    load_model_code(settings)
    call_control = call_control if call_control is not None else calls_api(settings)
    tokens = call_tokens(settings, tokens)
    metrics = metrics or Metrics()
    admission = Admission(settings.max_calls, Lines(lines_path(settings.run_dir), worker=settings.worker_index))
    prewarmer = Prewarmer(factory, settings.prewarm_ttl_s, metrics.prewarm_outcome) if settings.prewarm else None
    call_observers = list(observers)
    if settings.record_dir:
        call_observers.append(recorder_factory(settings.record_dir))
        log.info("recording every call under %s", settings.record_dir)
    console = console_for(settings, admission, metrics, route_stream_path(settings))
    transfers = warm_transfers(settings, call_control, briefing_factory, tokens, metrics, admission)
    if console is not None:
        call_observers.append(console.events.observer)
        call_observers.append(console.listen.observer)
    return AppServices(
        settings=settings,
        agent_factory=factory,
        metrics=metrics,
        admission=admission,
        latency=app_samples(),
        calls=ServerCalls(admission, prewarmer, transfers, answered_by_note),
        call_control=call_control,
        tokens=tokens,
        prewarmer=prewarmer,
        transfers=transfers,
        console=console,
        observers=tuple(call_observers),
        instance=instance_name(settings),
        recovery=StartupRecovery(settings.record_dir) if settings.record_dir else None,
    )


def calls_api(settings: Settings) -> CallsApi | None:
    """Twilio's Calls API client when the settings allow REST calls (VOICEBOT_TWILIO_API_URL: a local mock)."""
    if not settings.can_use_rest:
        return None
    assert settings.twilio_account_sid and settings.twilio_auth_token
    if settings.twilio_api_url:
        log.warning(
            "VOICEBOT_TWILIO_API_URL is set: Twilio REST requests go to %s, not Twilio (for local mocks and "
            "tests only)",
            settings.twilio_api_url,
        )
    return TwilioCallsApi(settings.twilio_account_sid, settings.twilio_auth_token, api_url=settings.twilio_api_url)


def call_tokens(settings: Settings, given: CallTokens | None = None) -> CallTokens | None:
    """The call-token checker (``given``, else one when Twilio's signatures are verified); unverified, a warning."""
    if not settings.verifies_twilio:
        log.warning(
            "TWILIO_AUTH_TOKEN is not set: Twilio signatures are NOT verified; anyone who can reach "
            "this server can start calls on your model account"
        )
    if given is not None or not settings.verifies_twilio:
        return given
    return CallTokens(token_secret(settings.twilio_auth_token, settings.token_secret), settings.call_token_ttl_s)


def warm_transfers(
    settings: Settings,
    call_control: CallsApi | None,
    briefing_factory: AgentFactory | None,
    tokens: CallTokens | None,
    metrics: Metrics,
    admission: Admission,
) -> WarmTransfers | None:
    """The warm-transfer desk when VOICEBOT_TRANSFER_MODE=warm (config has checked its settings), else None."""
    if settings.transfer_mode != "warm":
        return None
    if call_control is None or not callable(getattr(call_control, "dial", None)):
        raise RuntimeError("VOICEBOT_TRANSFER_MODE=warm needs a REST client that can place calls (TwilioCallControl)")
    log.info("warm transfer on: the caller waits on hold while the person is briefed")
    return WarmTransfers(
        settings,
        call_control,  # type: ignore[arg-type]
        with_settings(briefing_factory or load_agent_factory(settings.briefing_agent), settings),
        stream_url=stream_url(settings),
        status_url=lambda kind: status_url(settings, kind),
        tokens=tokens,
        metrics=metrics,
        draining=lambda: admission.draining,
    )


def answered_by_note(answered_by: str) -> str:
    """What the agent hears when answering-machine detection finishes."""
    if answered_by.startswith("machine") or answered_by == "fax":
        return (
            f"Answering machine detection: this call was answered by a machine ({answered_by}). "
            "Leave a short message, then end the call."
        )
    if answered_by == "human":
        return "Answering machine detection: a person answered this call."
    return "Answering machine detection was inconclusive: treat the callee as a person."

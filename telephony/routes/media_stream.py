"""``WS /media-stream``: one ``CallSession`` per connection, also under a worker's or replica's own path.

The upgrade is refused before ``accept()`` (HTTP 403) when Twilio's signature does not match, unless it
is a console stream with a valid upgrade token; and refused when every line is taken.
"""

from __future__ import annotations

import functools
import logging

from fastapi import APIRouter, WebSocket

from telephony.bridge.session import CallSession
from telephony.routes.services import AppServices, Services
from telephony.twilio.security import verify_websocket_signature_over
from telephony.twilio.stream_route import STREAM_PATHS, signed_urls

log = logging.getLogger(__name__)

router = APIRouter()


async def media_stream(websocket: WebSocket, services: Services) -> None:
    console = services.console
    from_console = console is not None and console.admits_stream(websocket.query_params)
    if not from_console and not await _signed_by_twilio(websocket, services):
        return
    line, refusal = services.admission.open_stream()
    if line is None:
        services.metrics.calls_refused.labels(reason="stream_over_limit").inc()
        log.warning("refused a media stream: %s", refusal)
        await websocket.close(code=1013)  # before accept(): the upgrade is refused
        return
    try:
        await websocket.accept()
        session = CallSession(
            websocket,
            services.settings,
            services.agent_factory,
            None if from_console else services.call_control,  # a console call has no Twilio call to hang up
            tokens=services.tokens,
            console_tokens=console.access.tokens if from_console and console else None,
            observers=[functools.partial(services.calls.stream_started, line), *services.observers],
            metrics=services.metrics,
            latency_book=services.latency,
            prewarmer=services.prewarmer,
            transfers=None if from_console else services.transfers,
        )
        await _run(session, services)
    finally:
        services.admission.stream_ended(line)


async def _signed_by_twilio(websocket: WebSocket, services: AppServices) -> bool:
    """True when the upgrade's signature matches (or is not checked); else the upgrade is refused."""
    settings = services.settings
    if not settings.verifies_twilio:
        return True
    assert settings.public_url and settings.twilio_auth_token
    signature = websocket.headers.get("x-twilio-signature")
    urls = signed_urls(settings, websocket.url.path)
    if verify_websocket_signature_over(settings.twilio_auth_token, urls, signature):
        return True
    client = websocket.client.host if websocket.client else "?"
    log.warning("rejected media stream from %s: %s X-Twilio-Signature", client, "invalid" if signature else "missing")
    await websocket.close(code=1008)  # before accept(): the upgrade is refused with HTTP 403
    return False


async def _run(session: CallSession, services: AppServices) -> None:
    """The call, counted among the server's sessions while it lasts."""
    sessions = services.sessions
    sessions.add(session)
    services.metrics.calls_active.set(len(sessions))
    try:
        await session.run()
    finally:
        sessions.discard(session)
        services.metrics.calls_active.set(len(sessions))


for _path in STREAM_PATHS:
    router.add_api_websocket_route(_path, media_stream)

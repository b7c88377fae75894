"""The HTTP and WebSocket application Twilio talks to.

- ``POST /twiml``: Twilio's voice webhook. Answers with TwiML that connects the call's audio to
  ``wss://<public host>/media-stream``, passing From, To and CallSid as ``<Parameter>``s
  (Twilio drops query strings from stream URLs). Nothing follows ``<Connect>``, so closing the
  socket ends the call.
- ``WS /media-stream``: one ``CallSession`` per connection.
- ``GET /health``: liveness and the number of calls in progress.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import JSONResponse, Response
from twilio.twiml.voice_response import Connect, Stream, VoiceResponse

from .agent_factory import AgentFactory, load_agent_factory
from .call_control import CallHangup, TwilioCallControl
from .config import Settings
from .session import CallSession

log = logging.getLogger(__name__)

STREAM_PATH = "/media-stream"
FORWARDED_PARAMETERS = ("From", "To", "CallSid")


def stream_url(settings: Settings, request: Request) -> str:
    """``wss://`` URL of our media stream, from PUBLIC_URL or else the request's own host."""
    host = settings.public_host or request.headers.get("x-forwarded-host") or request.headers.get("host")
    if not host:
        host = f"{settings.host}:{settings.port}"
    return f"wss://{host}{STREAM_PATH}"


def connect_twiml(url: str, parameters: dict[str, str]) -> str:
    """TwiML that streams the call to ``url``; the SDK builder escapes every value."""
    response = VoiceResponse()
    connect = Connect()
    stream = Stream(url=url)
    for name, value in parameters.items():
        stream.parameter(name=name, value=value)
    connect.append(stream)
    response.append(connect)
    return str(response)


def create_app(
    settings: Settings,
    agent_factory: AgentFactory | None = None,
    hangup: CallHangup | None = None,
) -> FastAPI:
    """Build the app. Tests pass fakes for the agent factory and the REST hang-up."""
    factory = agent_factory or load_agent_factory(settings.agent)
    if hangup is None and settings.can_use_rest:
        assert settings.twilio_account_sid and settings.twilio_auth_token
        hangup = TwilioCallControl(settings.twilio_account_sid, settings.twilio_auth_token)
    sessions: set[CallSession] = set()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        close = getattr(hangup, "aclose", None)
        if close is not None:
            await close()

    app = FastAPI(title="voicebot", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.sessions = sessions
    app.state.settings = settings

    @app.post("/twiml")
    async def twiml(request: Request) -> Response:
        form = await request.form()
        parameters = {name: str(form[name]) for name in FORWARDED_PARAMETERS if isinstance(form.get(name), str)}
        log.info("call=%s | incoming call from %s", parameters.get("CallSid", "?"), parameters.get("From", "?"))
        body = connect_twiml(stream_url(settings, request), parameters)
        return Response(content=body, media_type="application/xml")

    @app.websocket(STREAM_PATH)
    async def media_stream(websocket: WebSocket) -> None:
        await websocket.accept()
        session = CallSession(websocket, settings, factory, hangup)
        sessions.add(session)
        try:
            await session.run()
        finally:
            sessions.discard(session)

    @app.get("/health")
    async def health() -> JSONResponse:
        return JSONResponse({"status": "ok", "calls": len(sessions)})

    return app

"""The HTTP and WebSocket application Twilio talks to.

- ``POST /twiml``: Twilio's voice webhook. Answers with TwiML that connects the call's audio to
  ``wss://<public host>/media-stream``, passing From, To, CallSid and a call token as
  ``<Parameter>``s (Twilio drops query strings from stream URLs). Nothing follows ``<Connect>``,
  so closing the socket ends the call.
- ``WS /media-stream``: one ``CallSession`` per connection, signature-checked before ``accept()``.
- ``POST /status/call``, ``/status/stream``, ``/status/amd``: Twilio's status callbacks; with warm transfer
  also ``/status/transfer`` (the person's call) and ``/status/conference`` (the caller's hold conference).
- ``GET /health``: liveness and the number of calls in progress.

With ``TWILIO_AUTH_TOKEN`` set, every request from Twilio must carry a valid signature.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import FormData

from telephony.bridge.agent_factory import AgentFactory, load_agent_factory, with_settings
from telephony.bridge.observer import ObserverFactory
from telephony.bridge.prewarm import WARM_PARAMETER, Prewarmer, callinfo_from_webhook
from telephony.bridge.server_calls import ServerCalls
from telephony.bridge.session import CallSession
from telephony.bridge.transfer import WarmTransfers
from telephony.config import Settings
from telephony.console.routes import console_for
from telephony.operations.admission import Admission
from telephony.operations.latency import app_samples
from telephony.operations.lines import Lines, lines_path
from telephony.operations.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from telephony.operations.metrics import Metrics
from telephony.recording.recorder import recorder_factory
from telephony.twilio.call_control import CallControlClient, TwilioCallControl
from telephony.twilio.security import (
    PARAMETER_NAME,
    CallTokens,
    public_url_for,
    token_secret,
    verify_http_signature,
    verify_websocket_signature_over,
)
from telephony.twilio.stream_route import STREAM_PATH, callback_url, instance_name, signed_urls
from telephony.twilio.stream_route import stream_path as route_stream_path
from telephony.twilio.stream_route import stream_url as route_stream_url
from telephony.twilio.twiml import busy_twiml, connect_twiml

log = logging.getLogger(__name__)

FORWARDED_PARAMETERS = ("From", "To", "CallSid")
FORBIDDEN = Response(status_code=403, content="invalid or missing X-Twilio-Signature\n", media_type="text/plain")


def stream_url(settings: Settings, request: Request | None = None) -> str:
    """``wss://`` URL of this process's media stream (telephony.twilio.stream_route), else on the request's host."""
    host = request and (request.headers.get("x-forwarded-host") or request.headers.get("host"))
    return route_stream_url(settings, host or None)


def status_url(settings: Settings, kind: str) -> str | None:
    """Where Twilio should post ``kind`` status callbacks for this process's calls (only known with PUBLIC_URL)."""
    return callback_url(settings, kind)


def create_app(
    settings: Settings,
    agent_factory: AgentFactory | None = None,
    call_control: CallControlClient | None = None,
    tokens: CallTokens | None = None,
    observers: Sequence[ObserverFactory] = (),
    metrics: Metrics | None = None,
    briefing_factory: AgentFactory | None = None,
) -> FastAPI:
    """Build the app. Tests pass fakes for the agent factories and the REST client."""
    factory = with_settings(agent_factory or load_agent_factory(settings.agent), settings)
    if call_control is None and settings.can_use_rest:
        assert settings.twilio_account_sid and settings.twilio_auth_token
        call_control = TwilioCallControl(
            settings.twilio_account_sid, settings.twilio_auth_token, api_url=settings.twilio_api_url
        )
        if settings.twilio_api_url:
            log.warning(
                "VOICEBOT_TWILIO_API_URL is set: Twilio REST requests go to %s, not Twilio (for local mocks and "
                "tests only)",
                settings.twilio_api_url,
            )
    if tokens is None and settings.verifies_twilio:
        tokens = CallTokens(token_secret(settings.twilio_auth_token, settings.token_secret), settings.call_token_ttl_s)
    if not settings.verifies_twilio:
        log.warning(
            "TWILIO_AUTH_TOKEN is not set: Twilio signatures are NOT verified; anyone who can reach "
            "this server can start calls on your model account"
        )
    metrics = metrics or Metrics()
    admission = Admission(settings.max_calls, Lines(lines_path(settings.run_dir), worker=settings.worker_index))
    latency = app_samples()
    here = instance_name(settings)
    prewarmer = Prewarmer(factory, settings.prewarm_ttl_s, metrics.prewarm_outcome) if settings.prewarm else None

    call_observers = list(observers)
    if settings.record_dir:
        call_observers.append(recorder_factory(settings.record_dir))
        log.info("recording every call under %s", settings.record_dir)
    console = console_for(settings, admission, metrics, route_stream_path(settings))
    transfers = warm_transfers(settings, call_control, briefing_factory, tokens, metrics, admission)
    if console is not None:
        call_observers.append(console.events.observer)
    calls = ServerCalls(admission, prewarmer, transfers, answered_by_note)
    sessions = calls.sessions

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if settings.run_dir and settings.workers > 1:
            await calls.connect_peers(Path(settings.run_dir), settings.worker_index, settings.workers)
        yield
        calls.close()
        if prewarmer is not None:
            await prewarmer.aclose()
        if transfers is not None:
            await transfers.aclose()
        close = getattr(call_control, "aclose", None)
        if close is not None:
            await close()
        admission.lines.close()

    app = FastAPI(title="voicebot", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.sessions = sessions
    app.state.settings = settings
    app.state.tokens = tokens
    app.state.metrics = metrics
    app.state.admission = admission
    app.state.console = console
    app.state.latency = latency
    app.state.prewarmer = prewarmer
    app.state.transfers = transfers

    async def verified_form(request: Request) -> FormData | None:
        """The webhook's form fields, or None when the signature does not match (logged, no secrets)."""
        form = await request.form()
        if not settings.verifies_twilio:
            return form
        assert settings.public_url and settings.twilio_auth_token
        url = public_url_for(settings.public_url, request.url.path, request.url.query)
        signature = request.headers.get("x-twilio-signature")
        if verify_http_signature(settings.twilio_auth_token, url, form.multi_items(), signature):
            return form
        client = request.client.host if request.client else "?"
        why = "missing" if not signature else "invalid"
        log.warning("rejected %s %s from %s: %s X-Twilio-Signature", request.method, request.url.path, client, why)
        return None

    @app.post("/twiml")
    async def twiml(request: Request) -> Response:
        form = await verified_form(request)
        if form is None:
            return FORBIDDEN
        parameters = {name: value for name in FORWARDED_PARAMETERS if isinstance(value := form.get(name), str)}
        call_sid = parameters.get("CallSid", "")
        refusal = admission.reserve(call_sid)
        if refusal is not None:
            metrics.calls_refused.labels(reason=refusal).inc()
            log.warning("call=%s | turned away: %s (%d calls in progress)", call_sid or "?", refusal, len(sessions))
            return Response(content=busy_twiml(refusal), media_type="application/xml")
        if prewarmer is not None and call_sid:
            prewarmer.warm(callinfo_from_webhook(form.get, parameters))
            parameters[WARM_PARAMETER] = here  # so a stream landing elsewhere is known as a pre-warm miss
        if tokens is not None and call_sid:
            parameters[PARAMETER_NAME] = tokens.mint(call_sid)
        log.info("call=%s | incoming call from %s", call_sid or "?", parameters.get("From", "?"))
        body = connect_twiml(stream_url(settings, request), parameters, status_url(settings, "stream"))
        return Response(content=body, media_type="application/xml")

    @app.post("/status/{kind}")
    @app.post("/{route:path}/status/{kind}")  # a worker's or replica's own path (stream_route.callback_url)
    async def status(kind: str, request: Request) -> Response:
        form = await verified_form(request)
        if form is None:
            return FORBIDDEN
        call_sid = str(form.get("CallSid", "?"))
        if transfers is not None and kind in ("transfer", "conference"):
            transfers.on_status(kind, form, request.query_params.get("transfer"))
            return Response(status_code=204)
        if kind == "call":
            calls.call_status(form)
            log.info(
                "call=%s | call status %s (duration %ss)",
                call_sid,
                form.get("CallStatus"),
                form.get("CallDuration", "-"),
            )
        elif kind == "stream":
            log.info(
                "call=%s | stream %s %s %s",
                call_sid,
                form.get("StreamSid"),
                form.get("StreamEvent"),
                form.get("StreamError", ""),
            )
        elif kind == "amd":
            answered_by = str(form.get("AnsweredBy", "unknown"))
            log.info("call=%s | answered by %s", call_sid, answered_by)
            calls.answered_by(call_sid, answered_by)
        else:
            return Response(status_code=404)
        return Response(status_code=204)

    @app.websocket(STREAM_PATH)
    @app.websocket("/{route:path}" + STREAM_PATH)  # a worker's or replica's own path (stream_route)
    async def media_stream(websocket: WebSocket) -> None:
        from_console = console is not None and console.admits_stream(websocket.query_params)
        if settings.verifies_twilio and not from_console:  # a console stream carries its own token instead
            assert settings.public_url and settings.twilio_auth_token
            signature = websocket.headers.get("x-twilio-signature")
            urls = signed_urls(settings, websocket.url.path)
            if not verify_websocket_signature_over(settings.twilio_auth_token, urls, signature):
                client = websocket.client.host if websocket.client else "?"
                log.warning(
                    "rejected media stream from %s: %s X-Twilio-Signature",
                    client,
                    "invalid" if signature else "missing",
                )
                await websocket.close(code=1008)  # before accept(): the upgrade is refused with HTTP 403
                return
        line, refusal = admission.open_stream()
        if line is None:
            metrics.calls_refused.labels(reason="stream_over_limit").inc()
            log.warning("refused a media stream: %s", refusal)
            await websocket.close(code=1013)  # before accept(): the upgrade is refused
            return
        try:
            await websocket.accept()
            session = CallSession(
                websocket,
                settings,
                factory,
                None if from_console else call_control,  # a console call has no Twilio call to hang up
                tokens=tokens,
                console_tokens=console.access.tokens if from_console and console else None,
                observers=[functools.partial(calls.stream_started, line), *call_observers],
                metrics=metrics,
                latency_book=latency,
                prewarmer=prewarmer,
                transfers=None if from_console else transfers,
            )
            sessions.add(session)
            metrics.calls_active.set(len(sessions))
            try:
                await session.run()
            finally:
                sessions.discard(session)
                metrics.calls_active.set(len(sessions))
        finally:
            admission.stream_ended(line)

    @app.get("/health")
    async def health() -> JSONResponse:
        status = "draining" if admission.draining else "ok"
        body = {"status": status, "calls": len(sessions), "server_calls": admission.in_progress}
        return JSONResponse(body, status_code=503 if admission.draining else 200)

    @app.get("/stats")
    async def stats() -> JSONResponse:
        """Bridge latency percentiles over recent calls (what the load benchmark reads)."""
        return JSONResponse({"calls": len(sessions), "tasks": len(asyncio.all_tasks()), "latency": latency.summary()})

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(content=metrics.render(), media_type=METRICS_CONTENT_TYPE)

    if console is not None:
        console.install(app)
    return app


def warm_transfers(
    settings: Settings,
    call_control: CallControlClient | None,
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

"""``POST /twiml``: Twilio's voice webhook.

Answers with TwiML that connects the call's audio to ``wss://<public host>/media-stream``, passing From, To,
CallSid and a call token as ``<Parameter>``s (Twilio drops query strings from stream URLs). Nothing follows
``<Connect>``, so closing the socket ends the call. A call over the line limit, or one arriving while the
server drains, is turned away with a busy signal.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import Response

from telephony.bridge.prewarm import WARM_PARAMETER, callinfo_from_webhook
from telephony.config import Settings
from telephony.routes.services import Services
from telephony.routes.twilio_form import FORBIDDEN, verified_form
from telephony.twilio.security import PARAMETER_NAME
from telephony.twilio.stream_route import callback_url
from telephony.twilio.stream_route import stream_url as route_stream_url
from telephony.twilio.twiml import busy_twiml, connect_twiml

log = logging.getLogger(__name__)

FORWARDED_PARAMETERS = ("From", "To", "CallSid")
"""The webhook's fields the stream's ``start`` carries on to the session."""

router = APIRouter()


def stream_url(settings: Settings, request: Request | None = None) -> str:
    """``wss://`` URL of this process's media stream (telephony.twilio.stream_route), else on the request's host."""
    host = request and (request.headers.get("x-forwarded-host") or request.headers.get("host"))
    return route_stream_url(settings, host or None)


def status_url(settings: Settings, kind: str) -> str | None:
    """Where Twilio should post ``kind`` status callbacks for this process's calls (only known with PUBLIC_URL)."""
    return callback_url(settings, kind)


@router.post("/twiml")
async def twiml(request: Request, services: Services) -> Response:
    form = await verified_form(request, services.settings)
    if form is None:
        return FORBIDDEN
    parameters = {name: value for name in FORWARDED_PARAMETERS if isinstance(value := form.get(name), str)}
    call_sid = parameters.get("CallSid", "")
    refusal = services.admission.reserve(call_sid)
    if refusal is not None:
        services.metrics.calls_refused.labels(reason=refusal).inc()
        in_progress = len(services.sessions)
        log.warning("call=%s | turned away: %s (%d calls in progress)", call_sid or "?", refusal, in_progress)
        return Response(content=busy_twiml(refusal), media_type="application/xml")
    if services.prewarmer is not None and call_sid:
        services.prewarmer.warm(callinfo_from_webhook(form.get, parameters))
        parameters[WARM_PARAMETER] = services.instance  # so a stream landing elsewhere is known as a pre-warm miss
    if services.tokens is not None and call_sid:
        parameters[PARAMETER_NAME] = services.tokens.mint(call_sid)
    log.info("call=%s | incoming call from %s", call_sid or "?", parameters.get("From", "?"))
    settings = services.settings
    body = connect_twiml(stream_url(settings, request), parameters, status_url(settings, "stream"))
    return Response(content=body, media_type="application/xml")

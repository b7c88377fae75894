"""``POST /status/{kind}``: Twilio's status callbacks, also under a worker's or replica's own path.

``call`` (the call's progress: a call that is over ends its session), ``stream`` (logged), ``amd``
(answering-machine detection: the agent is told who answered); with warm transfer also ``transfer``
(the person's call) and ``conference`` (the caller's hold conference). Any other kind is a 404.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import Response

from telephony.routes.services import Services
from telephony.routes.twilio_form import FORBIDDEN, verified_form
from telephony.twilio.stream_route import STATUS_PATHS

log = logging.getLogger(__name__)

router = APIRouter()


async def status(kind: str, request: Request, services: Services) -> Response:
    form = await verified_form(request, services.settings)
    if form is None:
        return FORBIDDEN
    call_sid = str(form.get("CallSid", "?"))
    if services.transfers is not None and kind in ("transfer", "conference"):
        services.transfers.on_status(kind, form, request.query_params.get("transfer"))
        return Response(status_code=204)
    if kind == "call":
        services.calls.call_status(form)
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
        services.calls.answered_by(call_sid, answered_by)
    else:
        return Response(status_code=404)
    return Response(status_code=204)


for _path in STATUS_PATHS:
    router.add_api_route(_path, status, methods=["POST"])

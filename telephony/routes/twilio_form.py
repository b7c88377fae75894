"""Reading a Twilio webhook's form only once its ``X-Twilio-Signature`` matches (with TWILIO_AUTH_TOKEN set)."""

from __future__ import annotations

import logging

from fastapi import Request
from fastapi.responses import Response
from starlette.datastructures import FormData

from telephony.config import Settings
from telephony.twilio.security import public_url_for, verify_http_signature

log = logging.getLogger(__name__)

FORBIDDEN = Response(status_code=403, content="invalid or missing X-Twilio-Signature\n", media_type="text/plain")
"""The answer to a request whose signature does not match."""


async def verified_form(request: Request, settings: Settings) -> FormData | None:
    """The webhook's form fields, or None when the signature does not match (logged, no secrets)."""
    form = await request.form()
    if not settings.verifies_twilio:
        return form
    assert settings.public_url and settings.twilio_auth_token
    url = public_url_for(settings.public_url, request.url.path, request.url.query)
    signature = request.headers.get("x-twilio-signature")
    fields = [(name, value) for name, value in form.multi_items() if isinstance(value, str)]  # webhooks send no files
    if verify_http_signature(settings.twilio_auth_token, url, fields, signature):
        return form
    client = request.client.host if request.client else "?"
    why = "missing" if not signature else "invalid"
    log.warning("rejected %s %s from %s: %s X-Twilio-Signature", request.method, request.url.path, client, why)
    return None

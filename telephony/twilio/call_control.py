"""Acting on a live call through Twilio's REST API: hanging up and moving it elsewhere.

``calls(sid).update(status="completed")`` ends the call at once (cutting whatever audio Twilio
still buffers), so the session only calls it after the goodbye's last mark has come back. The
same holds for ``update(twiml=...)``, which a transfer uses to replace the stream with a ``<Dial>``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

from twilio.base.exceptions import TwilioRestException
from twilio.http import AsyncHttpClient
from twilio.rest import Client

from telephony.operations.logs import CallLog
from telephony.twilio.rest import rest_client

log = logging.getLogger(__name__)

ALREADY_ENDED_CODES = {20404, 21220}
"""20404: resource not found; 21220: call is not in-progress. Both mean the call is already over."""
REST_TIMEOUT_S = 5.0
"""Bound on a hang-up (all its attempts) or a transfer: past it, the session closes the socket instead."""
HANGUP_RETRY_PAUSES_S = (0.25, 0.75, 0.0)
"""Pauses after failed REST hang-up attempts (three attempts in all, within REST_TIMEOUT_S)."""


class CallControlClient(Protocol):
    async def hang_up(self, call_sid: str) -> None: ...

    async def redirect(self, call_sid: str, twiml: str) -> None: ...


class TwilioCallControl:
    """Hangs up calls over Twilio's REST API with the SDK's asynchronous HTTP client."""

    def __init__(self, account_sid: str, auth_token: str, http_client: AsyncHttpClient | None = None) -> None:
        self._account_sid = account_sid
        self._auth_token = auth_token
        self._http_client = http_client
        self._client: Client | None = None

    def _rest(self) -> Client:
        # Built on first use: aiohttp's session must be created inside the running event loop.
        if self._client is None:
            self._client = rest_client(self._account_sid, self._auth_token, self._http_client)
        return self._client

    async def hang_up(self, call_sid: str) -> None:
        """End the call; a call that is already over counts as success."""
        try:
            await self._rest().calls(call_sid).update_async(status="completed")
        except TwilioRestException as error:
            if error.status == 404 or error.code in ALREADY_ENDED_CODES:
                log.info("call=%s | already ended (Twilio %s)", call_sid, error.code or error.status)
                return
            raise

    async def redirect(self, call_sid: str, twiml: str) -> None:
        """Replace what the call is doing (our stream) with ``twiml``, e.g. a ``<Dial>``."""
        await self._rest().calls(call_sid).update_async(twiml=twiml)

    async def aclose(self) -> None:
        if self._client is not None and hasattr(self._client.http_client, "close"):
            await self._client.http_client.close()


async def hang_up_with_retries(control: CallControlClient, call_sid: str, log: CallLog) -> bool:
    """A few quick tries within ``REST_TIMEOUT_S``; False if all failed (closing the socket ends the call)."""
    deadline = time.monotonic() + REST_TIMEOUT_S
    for attempt, pause in enumerate(HANGUP_RETRY_PAUSES_S, start=1):
        try:
            await asyncio.wait_for(control.hang_up(call_sid), max(0.1, deadline - time.monotonic()))
            return True
        except Exception as error:  # noqa: BLE001 - closing the socket still ends the call
            log.warning("REST hang-up attempt %d failed: %r", attempt, error)
        if time.monotonic() + pause >= deadline:
            break
        await asyncio.sleep(pause)
    log.warning("REST hang-up gave up: closing the socket instead")
    return False

"""Twilio's Calls REST API, as the bridge uses it: hanging up a live call, moving it elsewhere, placing one.

(Not to be confused with ``telephony.controls``, what a call lets the agent's tools do.)

``calls(sid).update(status="completed")`` ends the call at once (cutting whatever audio Twilio
still buffers), so the session only calls it after the goodbye's last mark has come back. The
same holds for ``update(twiml=...)``, which a transfer uses to replace the stream with a ``<Dial>``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

import twilio.rest.api.v2010.account.call  # noqa: F401 - see below
from twilio.base.exceptions import TwilioRestException
from twilio.http import AsyncHttpClient
from twilio.rest import Client

from telephony.operations.logs import CallLog
from telephony.twilio.conference import dial_person
from telephony.twilio.rest import rest_client

log = logging.getLogger(__name__)
# The SDK imports its Calls API on first use of ``client.calls`` (about 0.5 s of module loading). Importing it
# here, at start-up, keeps that off the event loop in the middle of the first hang-up or transfer.

CALL_OVER = frozenset({"completed", "busy", "failed", "no-answer", "canceled"})
"""Twilio's ``CallStatus`` values for a call that has ended (status callbacks, call resources)."""
ALREADY_ENDED_CODES = {20404, 21220}
"""20404: resource not found; 21220: call is not in-progress. Both mean the call is already over."""
REST_TIMEOUT_S = 5.0
"""Bound on a hang-up (all its attempts) or a transfer: past it, the session closes the socket instead."""
HANGUP_RETRY_PAUSES_S = (0.25, 0.75, 0.0)
"""Pauses after failed REST hang-up attempts (three attempts in all, within REST_TIMEOUT_S)."""


class CallsApi(Protocol):
    """What the bridge needs from Twilio's Calls API to act on a live call."""

    async def hang_up(self, call_sid: str) -> None: ...

    async def redirect(self, call_sid: str, twiml: str) -> None: ...


class TransferClient(CallsApi, Protocol):
    """What a warm transfer needs on top: placing the call to the person being briefed."""

    async def dial(
        self, to: str, from_: str, twiml: str, status_callback: str | None, ring_timeout_s: float
    ) -> str: ...


class TwilioCallsApi:
    """Hangs up, redirects and places calls over Twilio's REST API with the SDK's asynchronous HTTP client.

    ``api_url`` (VOICEBOT_TWILIO_API_URL) sends its requests to a local mock instead of Twilio (see
    ``telephony.twilio.rest``); for tests only."""

    def __init__(
        self,
        account_sid: str,
        auth_token: str,
        http_client: AsyncHttpClient | None = None,
        api_url: str | None = None,
    ) -> None:
        if http_client is not None and api_url is not None:
            raise ValueError("TwilioCallsApi: pass api_url or http_client, not both")
        self._account_sid = account_sid
        self._auth_token = auth_token
        self._http_client = http_client
        self._api_url = api_url
        self._client: Client | None = None

    def _rest(self) -> Client:
        # Built on first use: aiohttp's session must be created inside the running event loop.
        if self._client is None:
            self._client = rest_client(self._account_sid, self._auth_token, self._http_client, api_url=self._api_url)
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

    async def dial(self, to: str, from_: str, twiml: str, status_callback: str | None, ring_timeout_s: float) -> str:
        """Ring ``to``; Twilio runs ``twiml`` once it answers. Returns the new call's SID."""
        return await dial_person(
            self._rest(),
            to=to,
            from_=from_,
            twiml=twiml,
            status_callback=status_callback,
            ring_timeout_s=ring_timeout_s,
        )

    async def aclose(self) -> None:
        if self._client is not None and hasattr(self._client.http_client, "close"):
            await self._client.http_client.close()


CallControlClient = CallsApi
"""The earlier name of :class:`CallsApi`."""
TwilioCallControl = TwilioCallsApi
"""The earlier name of :class:`TwilioCallsApi`."""


async def hang_up_with_retries(control: CallsApi, call_sid: str, log: CallLog) -> bool:
    """A few quick tries within ``REST_TIMEOUT_S``; False if all failed (closing the socket ends the call)."""
    if await with_retries(lambda: control.hang_up(call_sid), "REST hang-up", log):
        return True
    log.warning("REST hang-up gave up: closing the socket instead")
    return False


async def redirect_with_retries(control: CallsApi, call_sid: str, twiml: str, what: str, log: CallLog) -> bool:
    """Replace what ``call_sid`` is doing with ``twiml``, retried as a hang-up is; False if every attempt failed.

    Updating a call with the same TwiML twice is harmless, so a retry after a lost answer is safe."""
    return await with_retries(lambda: control.redirect(call_sid, twiml), what, log)


async def with_retries(attempt: Callable[[], Awaitable[None]], what: str, log: CallLog) -> bool:
    """Up to three tries of an idempotent REST request within ``REST_TIMEOUT_S``; True once one succeeds."""
    deadline = time.monotonic() + REST_TIMEOUT_S
    for number, pause in enumerate(HANGUP_RETRY_PAUSES_S, start=1):
        try:
            await asyncio.wait_for(attempt(), max(0.1, deadline - time.monotonic()))
            return True
        except Exception as error:  # noqa: BLE001 - the caller of this decides what failure means
            log.warning("%s attempt %d failed: %r", what, number, error)
        if time.monotonic() + pause >= deadline:
            break
        await asyncio.sleep(pause)
    return False

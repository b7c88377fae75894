"""Twilio's asynchronous REST client, with a timeout that really applies."""

from __future__ import annotations

import asyncio

from twilio.http import AsyncHttpClient
from twilio.http.async_http_client import AsyncTwilioHttpClient
from twilio.http.response import Response
from twilio.rest import Client

REST_TIMEOUT_S = 10.0


class TimedAsyncHttpClient(AsyncTwilioHttpClient):
    """``AsyncTwilioHttpClient`` whose ``timeout`` is actually applied.

    The SDK's client stores its ``timeout`` but passes each request's own (always ``None``) to
    aiohttp, which reads ``None`` as "no limit at all": a stalled connection would hang forever.
    """

    async def request(
        self,
        method: str,
        url: str,
        params: dict[str, object] | None = None,
        data: dict[str, object] | None = None,
        headers: dict[str, str] | None = None,
        auth: tuple[str, str] | None = None,
        timeout: float | None = None,
        allow_redirects: bool = False,
    ) -> Response:
        timeout = self.timeout if timeout is None else timeout
        return await super().request(method, url, params, data, headers, auth, timeout, allow_redirects)


def rest_client(account_sid: str, auth_token: str, http_client: AsyncHttpClient | None = None) -> Client:
    """A Twilio client for the ``*_async`` API; close it with ``await client.http_client.close()``.

    Call it from async code: the default transport opens an aiohttp session at once, and aiohttp
    binds a session to the event loop running when it is created (and refuses to create one
    outside a loop), so a client made before ``asyncio.run`` would be unusable inside it.
    """
    if http_client is None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError("rest_client() must be called inside a running event loop") from None
        http_client = TimedAsyncHttpClient(timeout=REST_TIMEOUT_S)
    return Client(account_sid, auth_token, http_client=http_client)

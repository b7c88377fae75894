"""Twilio's asynchronous REST client, with a timeout that really applies (and, for tests, another address)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from twilio.http import AsyncHttpClient
from twilio.http.async_http_client import AsyncTwilioHttpClient
from twilio.http.response import Response
from twilio.rest import Client

REST_TIMEOUT_S = 10.0
TWILIO_DOMAIN = ".twilio.com"


class TimedAsyncHttpClient(AsyncTwilioHttpClient):
    """``AsyncTwilioHttpClient`` whose ``timeout`` is actually applied.

    The SDK's client stores its ``timeout`` but passes each request's own (always ``None``) to
    aiohttp, which reads ``None`` as "no limit at all": a stalled connection would hang forever.

    With ``api_url`` (``http://127.0.0.1:4010``: VOICEBOT_TWILIO_API_URL, for local mocks and tests only),
    every request for ``https://<anything>.twilio.com/...`` goes to that scheme and host instead, with
    its path and query unchanged; still through the SDK's own HTTP layer (aiohttp).
    """

    def __init__(self, *args: Any, api_url: str | None = None, **kwargs: Any) -> None:
        base = urlsplit(api_url or "")
        if api_url is not None and (
            base.scheme not in ("http", "https") or not base.netloc or base.path not in ("", "/") or base.query
        ):
            raise ValueError(f"api_url={api_url!r} must be a bare http(s) base, e.g. http://127.0.0.1:4010")
        super().__init__(*args, **kwargs)  # opens the aiohttp session: only once nothing can fail
        self.api_url = api_url
        self._base = (base.scheme, base.netloc)

    def routed(self, url: str) -> str:
        """The URL a request for ``url`` is really sent to (``url`` itself unless ``api_url`` is set)."""
        if self.api_url is None:
            return url
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if parts.scheme != "https" or not host.endswith(TWILIO_DOMAIN):
            return url
        return urlunsplit((*self._base, parts.path, parts.query, parts.fragment))

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
        url = self.routed(url)
        return await super().request(method, url, params, data, headers, auth, timeout, allow_redirects)


def rest_client(
    account_sid: str, auth_token: str, http_client: AsyncHttpClient | None = None, api_url: str | None = None
) -> Client:
    """A Twilio client for the ``*_async`` API; close it with ``await client.http_client.close()``.

    Call it from async code: the default transport opens an aiohttp session at once, and aiohttp
    binds a session to the event loop running when it is created (and refuses to create one
    outside a loop), so a client made before ``asyncio.run`` would be unusable inside it.

    ``api_url`` sends the default transport's requests to that base instead of Twilio (see
    ``TimedAsyncHttpClient``); a transport passed as ``http_client`` is used as it is, so not both.
    """
    if http_client is None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError("rest_client() must be called inside a running event loop") from None
        http_client = TimedAsyncHttpClient(timeout=REST_TIMEOUT_S, api_url=api_url)
    elif api_url is not None:
        raise ValueError("rest_client(): pass api_url or http_client, not both (give your transport the address)")
    return Client(account_sid, auth_token, http_client=http_client)

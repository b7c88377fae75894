"""A fake HTTP transport for the real Twilio SDK: records every request, answers from a script.

The SDK builds URLs, form bodies and query strings itself and parses our answers into its
resource objects, so tests exercise the SDK exactly as production does, minus the network.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

from twilio.http import AsyncHttpClient
from twilio.http.response import Response

API = "https://api.twilio.com/2010-04-01"


@dataclass(frozen=True)
class Reply:
    """One scripted answer: an HTTP status and a JSON body (a str is sent as is)."""

    status: int = 200
    body: dict[str, Any] | str | None = None

    def response(self) -> Response:
        text = self.body if isinstance(self.body, str) else json.dumps(self.body or {})
        return Response(self.status, text)


def form_fields(fields: Any) -> dict[str, list[str]]:
    """Form fields as they go on the wire: aiohttp and requests both repeat a key for a list value."""
    return parse_qs(urlencode(dict(fields or {}), doseq=True), keep_blank_values=True)


class RecordingHttpClient(AsyncHttpClient):
    """Answers like api.twilio.com would, and records each request.

    Replies come from, in turn: the queue scripted for that (method, url) with ``script``, the
    queue scripted in call order with ``then``, and finally the default ``status``/``body``.
    Each recorded request is a dict with ``method``, ``url``, ``params``, ``data``, ``auth`` and
    ``form`` (the body as repeated form fields, see ``form_fields``).
    """

    def __init__(self, status: int = 200, body: dict[str, Any] | None = None) -> None:
        super().__init__(logger=logging.getLogger("fake-twilio-http"), is_async=True)
        self.status = status
        self.body = body or {"sid": "CA" + "0" * 32, "account_sid": "AC" + "0" * 32, "status": "completed"}
        self.requests: list[dict[str, Any]] = []
        self._by_route: dict[tuple[str, str], deque[Reply]] = {}
        self._in_order: deque[Reply] = deque()
        self.closed = False

    def script(self, method: str, url: str, *replies: Reply) -> RecordingHttpClient:
        """Answer the next requests to ``method url`` (no query string) with ``replies``, in turn."""
        self._by_route.setdefault((method.upper(), url), deque()).extend(replies)
        return self

    def then(self, *replies: Reply) -> RecordingHttpClient:
        """Answer the next requests not scripted by route with ``replies``, in turn."""
        self._in_order.extend(replies)
        return self

    async def request(
        self,
        method: str,
        url: str,
        params: Any = None,
        data: Any = None,
        headers: Any = None,
        auth: Any = None,
        timeout: Any = None,
        allow_redirects: bool = False,
    ) -> Response:
        self._record(method, url, params, data, auth)
        route = self._by_route.get((method.upper(), url))
        if route:
            return route.popleft().response()
        if self._in_order:
            return self._in_order.popleft().response()
        return Reply(self.status, self.body).response()

    def _record(self, method: str, url: str, params: Any, data: Any, auth: Any) -> None:
        """Keep the request as the SDK made it, for the test to read back."""
        self.requests.append(
            {
                "method": method,
                "url": url,
                "params": dict(params or {}),
                "data": dict(data or {}),
                "form": form_fields(data),
                "auth": auth,
            }
        )

    async def close(self) -> None:
        self.closed = True

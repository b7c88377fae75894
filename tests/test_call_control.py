"""REST hang-up through the real Twilio SDK, against a fake HTTP transport (no network)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from twilio.base.exceptions import TwilioRestException
from twilio.http import AsyncHttpClient
from twilio.http.response import Response

from telephony.call_control import TwilioCallControl

ACCOUNT = "AC" + "0" * 32
CALL = "CA" + "f" * 32


class RecordingHttpClient(AsyncHttpClient):
    """Answers like api.twilio.com would, and records each request."""

    def __init__(self, status: int = 200, body: dict[str, Any] | None = None) -> None:
        super().__init__(logger=logging.getLogger("fake-twilio-http"), is_async=True)
        self.status = status
        self.body = body or {"sid": CALL, "account_sid": ACCOUNT, "status": "completed"}
        self.requests: list[dict[str, Any]] = []

    async def request(self, method: str, url: str, params: Any = None, data: Any = None, headers: Any = None, auth: Any = None, timeout: Any = None, allow_redirects: bool = False) -> Response:
        self.requests.append({"method": method, "url": url, "data": dict(data or {}), "auth": auth})
        return Response(self.status, json.dumps(self.body))


async def test_hang_up_posts_status_completed_to_the_call() -> None:
    http = RecordingHttpClient()
    await TwilioCallControl(ACCOUNT, "secret-token", http_client=http).hang_up(CALL)
    [request] = http.requests
    assert request["method"] == "POST"
    assert request["url"] == f"https://api.twilio.com/2010-04-01/Accounts/{ACCOUNT}/Calls/{CALL}.json"
    assert request["data"] == {"Status": "completed"}
    assert request["auth"] == (ACCOUNT, "secret-token")


@pytest.mark.parametrize("status, code", [(404, 20404), (400, 21220)])
async def test_a_call_that_already_ended_is_not_an_error(status: int, code: int) -> None:
    http = RecordingHttpClient(status, {"code": code, "message": "gone", "status": status})
    await TwilioCallControl(ACCOUNT, "t", http_client=http).hang_up(CALL)


async def test_other_errors_propagate() -> None:
    http = RecordingHttpClient(500, {"code": 20500, "message": "Internal Server Error", "status": 500})
    with pytest.raises(TwilioRestException):
        await TwilioCallControl(ACCOUNT, "t", http_client=http).hang_up(CALL)

"""REST hang-up through the real Twilio SDK, against a fake HTTP transport (no network)."""

from __future__ import annotations

import pytest
from twilio.base.exceptions import TwilioRestException

from telephony.twilio.calls_api import TwilioCallsApi

from ..fakes.twilio_http import RecordingHttpClient

ACCOUNT = "AC" + "0" * 32
CALL = "CA" + "f" * 32


async def test_hang_up_posts_status_completed_to_the_call() -> None:
    http = RecordingHttpClient()
    await TwilioCallsApi(ACCOUNT, "secret-token", http_client=http).hang_up(CALL)
    [request] = http.requests
    assert request["method"] == "POST"
    assert request["url"] == f"https://api.twilio.com/2010-04-01/Accounts/{ACCOUNT}/Calls/{CALL}.json"
    assert request["data"] == {"Status": "completed"}
    assert request["auth"] == (ACCOUNT, "secret-token")


@pytest.mark.parametrize("status, code", [(404, 20404), (400, 21220)])
async def test_a_call_that_already_ended_is_not_an_error(status: int, code: int) -> None:
    http = RecordingHttpClient(status, {"code": code, "message": "gone", "status": status})
    await TwilioCallsApi(ACCOUNT, "t", http_client=http).hang_up(CALL)


async def test_other_errors_propagate() -> None:
    http = RecordingHttpClient(500, {"code": 20500, "message": "Internal Server Error", "status": 500})
    with pytest.raises(TwilioRestException):
        await TwilioCallsApi(ACCOUNT, "t", http_client=http).hang_up(CALL)

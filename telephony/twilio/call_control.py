"""The earlier home of Twilio's Calls REST API client: now :mod:`telephony.twilio.calls_api` (kept for old imports)."""

from telephony.twilio.calls_api import (
    ALREADY_ENDED_CODES,
    CALL_OVER,
    HANGUP_RETRY_PAUSES_S,
    REST_TIMEOUT_S,
    CallControlClient,
    CallsApi,
    TransferClient,
    TwilioCallControl,
    TwilioCallsApi,
    hang_up_with_retries,
    redirect_with_retries,
    with_retries,
)

__all__ = [
    "ALREADY_ENDED_CODES",
    "CALL_OVER",
    "HANGUP_RETRY_PAUSES_S",
    "REST_TIMEOUT_S",
    "CallControlClient",
    "CallsApi",
    "TransferClient",
    "TwilioCallControl",
    "TwilioCallsApi",
    "hang_up_with_retries",
    "redirect_with_retries",
    "with_retries",
]

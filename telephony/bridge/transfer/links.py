"""How a transfer's calls find their way back to it: the ``<Parameter>`` marks on their streams, the TwiML
that carries them, and the status-callback URLs that name the transfer."""

from __future__ import annotations

from collections.abc import Callable

from telephony.bridge.transfer.state import WarmTransfer
from telephony.twilio.parameters import BRIEFING, DIAL, RETURN, TRANSFER_OF
from telephony.twilio.security import PARAMETER_NAME, CallTokens
from telephony.twilio.twiml import connect_twiml

BRIEFING_PARAMETER = BRIEFING
RETURN_PARAMETER = RETURN
DIAL_PARAMETER = DIAL
"""The person's call token is bound to ``dial:<transfer id>`` (their call SID is unknown when it is minted)."""
LINKED_PARAMETER = TRANSFER_OF


class TransferLinks:
    """Builds the TwiML and callback URLs for both legs of a transfer (stream URL, signed tokens)."""

    def __init__(self, stream_url: str, status_url: Callable[[str], str | None], tokens: CallTokens | None) -> None:
        self._stream_url = stream_url
        self._status_url = status_url
        self._tokens = tokens

    def briefing_twiml(self, transfer: WarmTransfer) -> str:
        """The person's call: stream it back to us, marked as this transfer's briefing leg."""
        parameters = {
            LINKED_PARAMETER: transfer.caller.call_sid,
            BRIEFING_PARAMETER: transfer.id,
            DIAL_PARAMETER: transfer.id,
        }
        if self._tokens is not None:
            parameters[PARAMETER_NAME] = self._tokens.mint(f"dial:{transfer.id}")
        return connect_twiml(self._stream_url, parameters, self._status_url("stream"))

    def return_twiml(self, transfer: WarmTransfer) -> str:
        """The caller's call, back from hold: a fresh stream that names the transfer (so it finds its history)."""
        call = transfer.caller
        parameters = {"From": call.from_number, "To": call.to_number, "CallSid": call.call_sid}
        parameters = {name: value for name, value in parameters.items() if value}
        parameters[RETURN_PARAMETER] = transfer.id
        if self._tokens is not None:
            parameters[PARAMETER_NAME] = self._tokens.mint(call.call_sid)
        return connect_twiml(self._stream_url, parameters, self._status_url("stream"))

    def conference_url(self, transfer: WarmTransfer) -> str | None:
        url = self._status_url("conference")
        return f"{url}?transfer={transfer.id}" if url else None

    def person_url(self, transfer: WarmTransfer) -> str | None:
        url = self._status_url("transfer")
        return f"{url}?transfer={transfer.id}" if url else None

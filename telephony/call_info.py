"""What an agent factory learns about the call it is built for."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class CallInfo:
    """One phone call, as known when its media stream starts.

    ``parameters`` holds every ``<Parameter>`` of the TwiML ``<Stream>`` (Twilio's
    ``start.customParameters``), including the ones we add ourselves (From, To, CallSid), but not
    our internal ``voicebot*`` ones (see ``telephony.bridge.protocol.Start.call_info``).
    """

    call_sid: str
    stream_sid: str
    account_sid: str = ""
    from_number: str = ""
    to_number: str = ""
    parameters: dict[str, str] = field(default_factory=dict)

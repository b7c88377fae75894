"""What an agent factory learns about the call it is built for."""

from __future__ import annotations

from dataclasses import dataclass, field

from .protocol import Start


@dataclass(frozen=True, slots=True)
class CallInfo:
    """One phone call, as known when its media stream starts.

    ``parameters`` holds every ``<Parameter>`` of the TwiML ``<Stream>`` (Twilio's
    ``start.customParameters``), including the ones we add ourselves (From, To, CallSid), but not
    our internal ``voicebot*`` ones.
    """

    call_sid: str
    stream_sid: str
    account_sid: str = ""
    from_number: str = ""
    to_number: str = ""
    parameters: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_start(cls, start: Start) -> CallInfo:
        """Internal parameters (call tokens) are not passed on to the agent."""
        params = {name: value for name, value in start.custom_parameters.items() if not name.startswith("voicebot")}
        return cls(
            call_sid=start.call_sid,
            stream_sid=start.stream_sid,
            account_sid=start.account_sid,
            from_number=params.get("From", ""),
            to_number=params.get("To", ""),
            parameters=dict(params),
        )

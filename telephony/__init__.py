"""The Twilio side of the phone line: the app, the call bridge, Twilio integration, recording, console, simulation."""

from telephony.call_info import CallInfo

__all__ = ["CallInfo"]

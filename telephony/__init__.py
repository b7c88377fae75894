"""The Twilio side: HTTP and WebSocket app, Media Streams protocol, codec, call session, CLI."""

from .call_info import CallInfo

__all__ = ["CallInfo"]

"""A local Twilio REST API (2010-04-01) on 127.0.0.1: ``python -m telephony.simulation.local_twilio``."""

from .api import ApiRequest, LocalCall, LocalNumber, LocalTwilioApi, main

__all__ = ["ApiRequest", "LocalCall", "LocalNumber", "LocalTwilioApi", "main"]

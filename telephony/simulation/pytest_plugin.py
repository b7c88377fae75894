"""The ``pytest11`` entry point ``voicebot``: registers the ``phone_call`` fixture.

The fixture and its classes live in :mod:`telephony.simulation.scenarios.phone_call`; this module path is what
``pyproject.toml`` names, so it stays.
"""

from telephony.simulation.scenarios.phone_call import PhoneCall, PhoneCallResult, phone_call

__all__ = ["PhoneCall", "PhoneCallResult", "phone_call"]

"""The ``pytest11`` entry point ``voicebot``: registers the ``phone_call`` fixture, and runs ``async def`` tests
that use it when no async plugin does.

The fixture and its classes live in :mod:`telephony.simulation.scenarios.phone_call`; this module path is what
``pyproject.toml`` names, so it stays.
"""

from telephony.simulation.scenarios.phone_call import PhoneCall, PhoneCallResult, phone_call, pytest_pyfunc_call

__all__ = ["PhoneCall", "PhoneCallResult", "phone_call", "pytest_pyfunc_call"]

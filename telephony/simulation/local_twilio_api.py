"""Old path of :mod:`telephony.simulation.local_twilio` (``python -m telephony.simulation.local_twilio_api`` works)."""

from telephony.simulation.local_twilio.api import ApiRequest, LocalCall, LocalNumber, LocalTwilioApi, main

__all__ = ["ApiRequest", "LocalCall", "LocalNumber", "LocalTwilioApi", "main"]

if __name__ == "__main__":
    main()

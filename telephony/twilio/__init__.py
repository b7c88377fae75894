"""Talking to Twilio itself: signatures and call tokens, TwiML, the REST client, hang-up and transfer,
dialing out, number set-up."""

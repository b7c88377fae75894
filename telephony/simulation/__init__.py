"""Calls without a phone, one package per product:

- ``caller/``: the fake Twilio (a caller that answers TwiML and speaks Media Streams, caller scripts, its voice,
  Twilio's REST side of a simulated call);
- ``replay/``: replaying recorded calls, the report of what the caller heard, scenarios from recordings;
- ``scenarios/``: scenario testing (``voicebot test``, the ``phone_call`` pytest fixture);
- ``local_nova/``: a local Nova Sonic; ``local_twilio/``: a local Twilio REST API; ``local_app/``: the app
  served on loopback ports (in-process, or behind nginx);
- ``demo/``: ``voicebot demo``;
- ``fakes/``: test doubles for tests and benchmarks (a scripted model, fake Twilio peers, long-call fakes).

``pytest_plugin``, ``local_server`` and ``local_twilio_api`` are old module paths kept as re-exports.
"""

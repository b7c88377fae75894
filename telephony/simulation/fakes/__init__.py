"""Test doubles for the project's tests and benchmarks (importable, so benchmarks need not import ``tests``):

- ``scripted_model``: ``ScriptedModel`` and its script steps (``Say``, ``WaitForAudio``, ``CallTool`` …);
- ``twilio_call``: ``FakeTwilioCall``, the simulated caller with two test helpers;
- ``twilio_http``, ``twilio_calls``, ``twilio_resources``: the real Twilio SDK against a recording fake
  transport, and a stateful fake of api.twilio.com for warm transfers (``FakeTwilio``, ``Person``);
- ``turns``: a fast turn-taking fake agent for load runs (``--agent telephony.simulation.fakes.turns:…``);
- ``long_call``: long calls in tones (``ToneConversation``, ``LimitedModel``, ``talk``, ``score``);
- ``audio``: small signal measurements; ``settings``: the settings tests and benchmarks run the app with;
- ``crt_stream``: awscrt's HTTP/2 response stream without a connection (``CrtBodyStream``), for body readers.
"""

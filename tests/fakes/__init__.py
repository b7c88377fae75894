"""Test doubles for the project's tests and benchmarks (benchmarks import them as ``tests.fakes``, the repository's
root on their path; none is in the wheel):

- ``model``: ``ScriptedModel`` and its script steps (``Say``, ``WaitForAudio``, ``CallTool`` …);
- ``twilio``: ``FakeTwilioCall``, the simulated caller with two test helpers;
- ``twilio_http``, ``twilio_calls``, ``twilio_resources``: the real Twilio SDK against a recording fake
  transport, and a stateful fake of api.twilio.com for warm transfers (``FakeTwilio``, ``Person``);
- ``turns``: a fast turn-taking fake agent for load runs (``--agent tests.fakes.turns:…`` from the repository's root);
- ``long_call``: long calls in tones (``ToneConversation``, ``LimitedModel``, ``talk``, ``score``);
- ``responder``: a model that answers whatever it is given and goes quiet on purpose (the dead-air tests);
- ``agents``, ``rest``: agent factories for the tests and Twilio's REST side;
- ``audio``: small signal measurements; ``settings``: the settings tests and benchmarks run the app with;
- ``crt_stream``: awscrt's HTTP/2 response stream without a connection (``CrtBodyStream``), for body readers.
"""

"""The server's HTTP and WebSocket routes, one router per concern.

- :mod:`~telephony.routes.voice`: ``POST /twiml``, Twilio's voice webhook (admits the call, hands out the stream URL);
- :mod:`~telephony.routes.status`: ``POST /status/{kind}``, Twilio's status callbacks;
- :mod:`~telephony.routes.media_stream`: ``WS /media-stream``, one ``CallSession`` per connection;
- :mod:`~telephony.routes.health`: ``GET /health``, ``/stats`` and ``/metrics``.

Each route is a plain function that gets the server-wide :class:`~telephony.routes.services.AppServices`
through a dependency, so it can be read alone and tested on a bare app with fakes.
``telephony.app.create_app`` builds the services once and mounts these routers (and the console's).
"""

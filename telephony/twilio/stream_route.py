"""Where a call's media stream goes: the URL in the TwiML, so it reaches the process that pre-warmed it.

Twilio fetches ``/twiml`` from whichever worker or replica the balancer picks, and that one connects
the call's agent at once (pre-warm). The stream arrives about a second later on its own connection,
so the TwiML's ``<Stream url>`` names that same process:

- one process: ``wss://PUBLIC/media-stream``;
- ``--workers N``: worker *i*'s streams use ``wss://PUBLIC/w/<i>/media-stream`` (and its status callbacks
  ``/w/<i>/status/...``), and the proxy (``telephony.operations.nginx``) routes ``/w/<i>/`` to that worker;
- many replicas: ``VOICEBOT_REPLICA_URL`` is this replica's own public base (a per-pod Ingress path,
  say ``https://voice.example.com/replicas/voicebot-2``), and the stream URL is built on it.

Twilio drops query strings from stream URLs, hence path segments. The app (``telephony.routes``) serves
``STREAM_PATHS`` and ``STATUS_PATHS``: it accepts a stream on any path ending in ``/media-stream``, so a
stream that lands on another process still works (it starts cold); its signature is checked over the URLs
this deployment can have produced (``signed_urls``).
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from telephony.config import Settings
from telephony.twilio.security import public_url_for, websocket_url

STREAM_PATH = "/media-stream"
WORKER_PREFIX = "/w/{index}"
STREAM_PATHS = (STREAM_PATH, "/{route:path}" + STREAM_PATH)
"""The route patterns the media stream is served on: plain, and under a worker's or replica's own path."""
STATUS_PATHS = ("/status/{kind}", "/{route:path}/status/{kind}")
"""The route patterns status callbacks are served on (``callback_url`` hands out the second form)."""


def worker_prefix(settings: Settings) -> str:
    """``/w/<i>`` for worker *i* of several (``serve --workers`` gives each its explicit count), else nothing."""
    return WORKER_PREFIX.format(index=settings.worker_index) if settings.workers > 1 else ""


def stream_path(settings: Settings) -> str:
    """The path this process's streams use under its public base."""
    return worker_prefix(settings) + STREAM_PATH


def stream_url(settings: Settings, request_host: str | None = None) -> str:
    """The ``wss://`` URL for the TwiML: this replica's (or PUBLIC_URL's) base, this worker's path.

    Without either URL it is built on the webhook's Host header (local tools, tests)."""
    base = settings.replica_url or settings.public_url
    if base:
        return websocket_url(base, stream_path(settings))  # ws:// only for an http:// base (local tools)
    return f"wss://{request_host or f'{settings.host}:{settings.port}'}{stream_path(settings)}"


def callback_url(settings: Settings, kind: str) -> str | None:
    """Where Twilio posts ``kind`` status callbacks for calls this process handed out (None: no public URL).

    Under this replica's base and this worker's path, like the stream URL: a warm transfer's callbacks
    must reach the worker that holds the transfer."""
    base = settings.replica_url or settings.public_url
    return public_url_for(base, f"{worker_prefix(settings)}/status/{kind}") if base else None


def instance_name(settings: Settings) -> str:
    """This worker or replica, as the TwiML's pre-warm parameter and the pre-warm miss log name it."""
    replica = urlsplit(settings.replica_url).path.strip("/") if settings.replica_url else ""
    name = replica or socket.gethostname()
    return f"{name}{worker_prefix(settings)}"


def signed_urls(settings: Settings, request_path: str) -> list[str]:
    """Public URLs a stream reaching ``request_path`` here may have been signed over by Twilio.

    This process's own stream URL; the path it was reached on under PUBLIC_URL's host (a proxy that
    keeps the path, as the shipped nginx config does: a stream meant for another worker or replica
    that landed here); and the plain ``/media-stream`` of PUBLIC_URL. Signatures of the upgrade cover
    the URL only, so what makes a stream single-use is the call token it carries, checked by the session.
    """
    assert settings.public_url
    candidates = [stream_url(settings), websocket_url(settings.public_url, STREAM_PATH)]
    public = urlsplit(settings.public_url)
    if request_path.endswith(STREAM_PATH):
        candidates.append(websocket_url(f"{public.scheme}://{public.netloc}", request_path))
    return list(dict.fromkeys(candidates))

"""One CRT event-loop group for every Nova Sonic connection in the process, instead of one per call.

The AWS SDK's CRT HTTP client (``smithy_http.aio.crt.AWSCRTHTTPClient``) builds its own
``EventLoopGroup(1)`` when it is given none, and strands builds a new client for every connection, so
each call runs its own I/O thread: 40 calls, 40 threads, each waking for every event of its stream
and waiting on the GIL to hand it to asyncio (about 3,000 context switches a second at 20 calls).
The client takes an ``eventloop`` argument, so a connection can share one group instead; its threads
multiplex every socket with epoll. The clients stay one per call (strands closes its client, and with
it the transport, when a call's model stops), so a failing connection still takes one call down only.

Upstream: the SDK should share a default event-loop group across clients, as the CRT itself offers
(``EventLoopGroup.get_or_create_static_default()``), rather than build one per client.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from awscrt import io as crt_io

from .log import log

__all__ = ["SharedEventLoop", "on_shared_loop", "shared_event_loop"]


@dataclass(frozen=True)
class SharedEventLoop:
    """What ``AWSCRTHTTPClient(eventloop=...)`` reads: a client bootstrap over a shared event-loop group."""

    threads: int
    group: crt_io.EventLoopGroup
    bootstrap: crt_io.ClientBootstrap


_lock = threading.Lock()
_loops: dict[int, SharedEventLoop] = {}


def shared_event_loop(threads: int) -> SharedEventLoop:
    """The process's shared group of ``threads`` I/O threads (made on first use, then reused)."""
    if threads < 1:
        raise ValueError("a shared CRT event loop needs at least one thread")
    with _lock:
        loop = _loops.get(threads)
        if loop is None:
            group = crt_io.EventLoopGroup(threads)
            resolver = crt_io.DefaultHostResolver(group)
            loop = SharedEventLoop(threads, group, crt_io.ClientBootstrap(group, resolver))
            _loops[threads] = loop
        return loop


def on_shared_loop(transport: Any, threads: int) -> Any:
    """The same kind of CRT client as ``transport`` (strands' subclass), on the process's shared event loop."""
    try:
        return type(transport)(eventloop=shared_event_loop(threads))
    except TypeError:  # a transport that takes no event loop: leave it as strands made it
        log.warning("VOICEBOT_CRT_THREADS: %s takes no shared event loop; keeping its own", type(transport).__name__)
        return transport

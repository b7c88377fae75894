"""strands' CRT HTTP client built on what every Nova connection of the process can share: :func:`crt_client`.

strands makes a new ``_BedrockAWSCRTHTTPClient()`` at every start (each call, each 7-minute restart), and the
SDK's client builds a new TLS context in its constructor: the system's CA store parsed again, about 8 ms of
processor each time. The adapter then used to build a second client for the shared event loop, and a third
TLS context for ``AWS_CA_BUNDLE``. Here a connection's client is made once, on the process's shared event
loop (``crt_loop``) and a TLS context shared per trust store (made on first use). Clients stay one per
connection: strands closes its client, and with it the transport, when a call's model stops.

Upstream: ``AWSCRTHTTPClient`` could take a TLS context (or share a default one), as it takes an event loop.
"""

from __future__ import annotations

import threading
from typing import Any

from awscrt import io as crt_io
from smithy_http.aio.crt import AWSCRTHTTPClient, AWSCRTHTTPClientConfig, _AWSCRTEventLoop

from .crt_loop import shared_event_loop

__all__ = ["CLIENT_ATTRIBUTES", "build_on_shared", "shared_tls_context"]

CLIENT_ATTRIBUTES = frozenset(
    {"_config", "_eventloop", "_client_bootstrap", "_tls_ctx", "_socket_options", "_connections", "_closed"}
)
"""What ``AWSCRTHTTPClient.__init__`` sets (a test checks that the SDK still sets exactly these)."""

_lock = threading.Lock()
_contexts: dict[str | None, crt_io.ClientTlsContext] = {}


def shared_tls_context(ca_bundle: str | None = None) -> crt_io.ClientTlsContext:
    """The process's TLS context trusting ``ca_bundle`` (a PEM file), or the system store for None."""
    with _lock:
        context = _contexts.get(ca_bundle)
        if context is None:
            options = crt_io.TlsContextOptions()
            if ca_bundle is not None:
                options.override_default_trust_store_from_path(None, ca_bundle)
            context = _contexts[ca_bundle] = crt_io.ClientTlsContext(options)
        return context


def build_on_shared(client: AWSCRTHTTPClient, *, crt_threads: int, ca_bundle: str | None) -> None:
    """Set up ``client`` as ``AWSCRTHTTPClient.__init__`` does, on the shared event loop (``crt_threads`` > 0;
    else one of its own, as the SDK makes) and the shared TLS context, without building a TLS context."""
    loop: Any = shared_event_loop(crt_threads) if crt_threads else _AWSCRTEventLoop()
    client._config = AWSCRTHTTPClientConfig()
    client._eventloop = loop
    client._client_bootstrap = loop.bootstrap
    client._tls_ctx = shared_tls_context(ca_bundle)
    client._socket_options = crt_io.SocketOptions()
    client._connections = {}
    client._closed = False

"""The one seam into strands' Nova client set-up: the names its module looks up at each start.

strands' ``BedrockNovaSonicModel.start()`` builds the SDK client itself (always with
``https://bedrock-runtime.{region}.amazonaws.com``, the SDK's SigV4 scheme and a CRT transport of its own)
and takes no transport or client from the caller. It makes the transport with ``_BedrockAWSCRTHTTPClient()``
and resolves the client config through ``AsyncBedrockRuntimeConfig``, both looked up in its module at call
time, so :func:`install` replaces these names once with :class:`StartClient` and :class:`StartConfig`,
subclasses that apply what the model being started asks for (:class:`ModelStart`, carried in a context
variable set by :func:`starting`) and otherwise change nothing. Inside :func:`starting`:

- the transport is built on the process's shared CRT event loop and TLS context (``crt_client``);
- the endpoint and trusted CAs are the standard AWS settings (``endpoint``);
- events are signed by the caching signer (``event_signer``): the SDK's signatures and bytes, for less;
- audio chunks are written and read by the direct path of ``event_stream``: the SDK's messages and objects;
- the response body is read through a sink on the stream (``crt_body``), not a task and a wait per chunk;
- the request body is written one event at a time without a wait between threads per event (``crt_write``).

Instances of strands' own class, started with no context, behave exactly as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import strands.bidi.models.bedrock as strands_bedrock
from smithy_aws_core.auth.sigv4 import SigV4AuthScheme

from .crt_body import BodyResponse, reads_directly
from .crt_client import build_on_shared, shared_tls_context
from .crt_loop import on_shared_loop, settle_io_thread
from .crt_write import WriteBehind, writes_directly
from .endpoint import BedrockEndpoint
from .event_signer import CachingSigV4Scheme
from .event_stream import bedrock_protocol
from .stream_repair import watch_writers

__all__ = ["BODY_END_WAIT_S", "ModelStart", "StartClient", "StartConfig", "install", "starting", "trust_only"]


@dataclass(frozen=True)
class ModelStart:
    """What the model being started asks of its client: endpoint and trust, and shared I/O threads (0: none)."""

    endpoint: BedrockEndpoint
    crt_threads: int
    writers: set[asyncio.Task[Any]]
    """The model's CRT request-writer tasks (see ``stream_repair.watch_writers``)."""


BODY_END_WAIT_S = 0.25
"""How long closing a client waits for its streams' request bodies to finish writing (a few ms when healthy)."""

_starting: contextvars.ContextVar[ModelStart | None] = contextvars.ContextVar("nova_model_start", default=None)
_SDKConfig = strands_bedrock.AsyncBedrockRuntimeConfig
_StrandsClient = strands_bedrock._BedrockAWSCRTHTTPClient


class StartClient(_StrandsClient):  # type: ignore[misc, valid-type]
    """strands' CRT client; inside :func:`starting`, on the shared event loop and TLS context from the start."""

    def __init__(self, eventloop: Any = None, client_config: Any = None) -> None:
        start = _starting.get()
        self.on_shared_parts = start is not None and eventloop is None and client_config is None
        """Built inside a start, on the shared parts (else exactly as strands' client)."""
        shared_loop = self.on_shared_parts and start is not None and start.crt_threads > 0
        self._on_io_thread: Callable[[], None] | None = settle_io_thread if shared_loop else None
        """What awscrt's I/O thread runs first in our callbacks: a shared loop's threads settle in once."""
        self._body_writers: set[asyncio.Task[Any]] = set()
        """Request writers of this client's streams that write through :class:`WriteBehind` (see :meth:`close`)."""
        if not self.on_shared_parts:
            super().__init__(eventloop, client_config)
            return
        assert start is not None
        build_on_shared(self, crt_threads=start.crt_threads, ca_bundle=start.endpoint.ca_bundle)

    async def _await_response(self, stream: Any) -> Any:
        if self.on_shared_parts and writes_directly(stream):  # before the stream's writer task first runs
            writer = WriteBehind(stream, asyncio.get_running_loop(), on_io_thread=self._on_io_thread)
            stream._write_data = writer.write
            if isinstance(task := getattr(stream, "_writer", None), asyncio.Task):
                self._body_writers.add(task)
                task.add_done_callback(self._body_writers.discard)
        response = await super()._await_response(stream)  # strands' (it also watches the request writer)
        if not self.on_shared_parts or not reads_directly(stream):
            return response
        return BodyResponse(
            status=response.status, fields=response.fields, stream=stream, on_io_thread=self._on_io_thread
        )

    async def close(self) -> None:
        """Let request bodies finish writing before the connections close (at most ``BODY_END_WAIT_S``).

        The SDK's input stream counts an event as sent once the request writer has taken it; with
        :class:`WriteBehind` the last events of a closed input may still be on their way to the I/O thread, and
        closing the connection under them would drop the closing events and the end of the stream.
        """
        if pending := [task for task in self._body_writers if not task.done()]:
            await asyncio.wait(pending, timeout=BODY_END_WAIT_S)
        await super().close()


class StartConfig(_SDKConfig):  # type: ignore[misc, valid-type]
    """The SDK config, with the endpoint, trust and event loop of the model being started by this adapter."""

    @classmethod
    async def resolve(cls, **overrides: Any) -> Any:  # type: ignore[override]
        start = _starting.get()
        if start is not None:
            _apply(start, overrides)
        return await _SDKConfig.resolve(**overrides)


def _apply(start: ModelStart, overrides: dict[str, Any]) -> None:
    """Change the SDK's config ``overrides`` in place as ``start`` asks."""
    endpoint = start.endpoint
    if endpoint.url is not None:
        overrides["endpoint_uri"] = endpoint.url
    _sign_with_cache(overrides)
    if overrides.get("protocol") is None:
        overrides["protocol"] = bedrock_protocol()
    transport = overrides.get("transport")
    if transport is None:
        return
    if not getattr(transport, "on_shared_parts", False):  # made outside a start: bring it onto the shared parts
        if start.crt_threads:
            transport = overrides["transport"] = on_shared_loop(transport, start.crt_threads)
        if endpoint.ca_bundle is not None:
            trust_only(transport, endpoint.ca_bundle)
    watch_writers(transport, start.writers)


def _sign_with_cache(overrides: dict[str, Any]) -> None:
    """Swap the SDK's own SigV4 scheme (exactly that class: anything else is left alone) for the caching one."""
    schemes = overrides.get("auth_schemes")
    if not schemes:
        return
    overrides["auth_schemes"] = {
        key: CachingSigV4Scheme(service=scheme._service) if type(scheme) is SigV4AuthScheme else scheme
        for key, scheme in schemes.items()
    }


def trust_only(transport: Any, ca_bundle: str) -> None:
    """Make the CRT transport verify servers against ``ca_bundle`` (smithy-http builds its TLS context eagerly)."""
    if not hasattr(transport, "_tls_ctx"):
        raise RuntimeError(f"AWS_CA_BUNDLE: cannot set trust on transport {type(transport).__name__}")
    transport._tls_ctx = shared_tls_context(ca_bundle)


def install() -> None:
    """Put :class:`StartConfig` and :class:`StartClient` in strands' module (once; both are no-ops for starts
    outside :func:`starting`)."""
    if strands_bedrock.AsyncBedrockRuntimeConfig is not StartConfig:
        strands_bedrock.AsyncBedrockRuntimeConfig = StartConfig  # type: ignore[misc]
    if strands_bedrock._BedrockAWSCRTHTTPClient is not StartClient:
        strands_bedrock._BedrockAWSCRTHTTPClient = StartClient  # type: ignore[misc]


@contextlib.contextmanager
def starting(start: ModelStart) -> Iterator[None]:
    """Apply ``start`` to the SDK config resolved inside the block (in this task's context only)."""
    install()
    token = _starting.set(start)
    try:
        yield
    finally:
        _starting.reset(token)

"""The one seam into strands' Nova client set-up: the SDK config class its module looks up at each start.

strands' ``BedrockNovaSonicModel.start()`` builds the SDK client itself (always with
``https://bedrock-runtime.{region}.amazonaws.com`` and a CRT transport of its own) and takes no transport or
client from the caller. It resolves the client config through ``AsyncBedrockRuntimeConfig``, looked up in
its module at call time, so :func:`install` replaces that name once with :class:`StartConfig`, a subclass
that applies what the model being started asks for (:class:`ModelStart`, carried in a context variable set
by :func:`starting`) and otherwise changes nothing. Instances of strands' own class, started with no
context, behave exactly as before. ``SSL_CERT_FILE`` keeps working, since without ``AWS_CA_BUNDLE`` TLS is
untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import strands.bidi.models.bedrock as strands_bedrock
from awscrt import io as crt_io

from .crt_loop import on_shared_loop
from .endpoint import BedrockEndpoint
from .stream_repair import watch_writers

__all__ = ["ModelStart", "StartConfig", "install", "starting", "trust_only"]


@dataclass(frozen=True)
class ModelStart:
    """What the model being started asks of its client: endpoint and trust, and shared I/O threads (0: none)."""

    endpoint: BedrockEndpoint
    crt_threads: int
    writers: set[asyncio.Task[Any]]
    """The model's CRT request-writer tasks (see ``stream_repair.watch_writers``)."""


_starting: contextvars.ContextVar[ModelStart | None] = contextvars.ContextVar("nova_model_start", default=None)
_SDKConfig = strands_bedrock.AsyncBedrockRuntimeConfig


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
    transport = overrides.get("transport")
    if transport is None:
        return
    if start.crt_threads:
        transport = overrides["transport"] = on_shared_loop(transport, start.crt_threads)
    if endpoint.ca_bundle is not None:
        trust_only(transport, endpoint.ca_bundle)
    watch_writers(transport, start.writers)


def trust_only(transport: Any, ca_bundle: str) -> None:
    """Make the CRT transport verify servers against ``ca_bundle`` (smithy-http builds its TLS context eagerly)."""
    if not hasattr(transport, "_tls_ctx"):
        raise RuntimeError(f"AWS_CA_BUNDLE: cannot set trust on transport {type(transport).__name__}")
    options = crt_io.TlsContextOptions()
    options.override_default_trust_store_from_path(None, ca_bundle)
    transport._tls_ctx = crt_io.ClientTlsContext(options)


def install() -> None:
    """Put :class:`StartConfig` in strands' module (once; it is a no-op for starts outside :func:`starting`)."""
    if strands_bedrock.AsyncBedrockRuntimeConfig is not StartConfig:
        strands_bedrock.AsyncBedrockRuntimeConfig = StartConfig  # type: ignore[misc]


@contextlib.contextmanager
def starting(start: ModelStart) -> Iterator[None]:
    """Apply ``start`` to the SDK config resolved inside the block (in this task's context only)."""
    install()
    token = _starting.set(start)
    try:
        yield
    finally:
        _starting.reset(token)

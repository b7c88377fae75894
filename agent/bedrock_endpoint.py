"""Nova Sonic at a configured endpoint: ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` and ``AWS_CA_BUNDLE``.

strands' ``BedrockNovaSonicModel.start()`` always passes ``https://bedrock-runtime.{region}.amazonaws.com``
to the SDK, so the standard AWS endpoint variables are ignored. This module's ``BedrockNovaSonicModel``
(a subclass of strands' own) honours them (``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, then ``AWS_ENDPOINT_URL``;
``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` turns both off), plus ``AWS_CA_BUNDLE`` (a PEM of CAs to trust
instead of the system store), while keeping everything else of strands' start: its CRT HTTP client with
the lifecycle workarounds, its signing and credentials.

The seam is the SDK config class that strands' module looks up when it resolves the client config:
it is replaced once by a subclass that applies the endpoint of the model being started (carried in a
context variable) and otherwise changes nothing, so instances of strands' own class behave
exactly as before. ``SSL_CERT_FILE`` keeps working, since without ``AWS_CA_BUNDLE`` TLS is untouched.
"""

from __future__ import annotations

import contextvars
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import strands.bidi.models.bedrock as strands_bedrock
from awscrt import io as crt_io
from strands.bidi.models import BedrockNovaSonicModel as StrandsNovaSonicModel

from .quiet_switch import QuietSwitchover

__all__ = ["BedrockEndpoint", "BedrockNovaSonicModel"]

log = logging.getLogger(__name__)

_TRUTHY = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class BedrockEndpoint:
    """Where to reach Bedrock Runtime and which CAs to trust there (None: the SDK's defaults)."""

    url: str | None = None
    ca_bundle: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BedrockEndpoint:
        env = os.environ if env is None else env
        url = None
        if env.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").strip().lower() not in _TRUTHY:
            url = env.get("AWS_ENDPOINT_URL_BEDROCK_RUNTIME") or env.get("AWS_ENDPOINT_URL") or None
        return cls(url=url, ca_bundle=env.get("AWS_CA_BUNDLE") or None)

    @property
    def configured(self) -> bool:
        return self.url is not None or self.ca_bundle is not None


_starting: contextvars.ContextVar[BedrockEndpoint | None] = contextvars.ContextVar("bedrock_endpoint", default=None)
_SDKConfig = strands_bedrock.AsyncBedrockRuntimeConfig


class _EndpointConfig(_SDKConfig):  # type: ignore[misc, valid-type]
    """The SDK config, with the endpoint and trust of the model being started by this module (if any)."""

    @classmethod
    async def resolve(cls, **overrides: Any) -> Any:  # type: ignore[override]
        endpoint = _starting.get()
        if endpoint is not None:
            if endpoint.url is not None:
                overrides["endpoint_uri"] = endpoint.url
            transport = overrides.get("transport")
            if endpoint.ca_bundle is not None and transport is not None:
                _trust_only(transport, endpoint.ca_bundle)
        return await _SDKConfig.resolve(**overrides)


def _trust_only(transport: Any, ca_bundle: str) -> None:
    """Make the CRT transport verify servers against ``ca_bundle`` (smithy-http builds its TLS context eagerly)."""
    if not hasattr(transport, "_tls_ctx"):
        raise RuntimeError(f"AWS_CA_BUNDLE: cannot set trust on transport {type(transport).__name__}")
    options = crt_io.TlsContextOptions()
    options.override_default_trust_store_from_path(None, ca_bundle)
    transport._tls_ctx = crt_io.ClientTlsContext(options)


def _install() -> None:
    if strands_bedrock.AsyncBedrockRuntimeConfig is not _EndpointConfig:
        strands_bedrock.AsyncBedrockRuntimeConfig = _EndpointConfig  # type: ignore[misc]


class BedrockNovaSonicModel(QuietSwitchover, StrandsNovaSonicModel):
    """strands' ``BedrockNovaSonicModel``, connecting where the AWS endpoint environment says (read at each start),
    and replacing its connection at a quiet moment before the 7-minute restart (``agent.quiet_switch``).

    Same name as its parent on purpose: it is that model, plus the standard endpoint settings.
    """

    def __init__(self, *, endpoint: BedrockEndpoint | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._endpoint = endpoint

    async def start(self, *args: Any, **kwargs: Any) -> None:
        endpoint = self._endpoint or BedrockEndpoint.from_env()
        if not endpoint.configured:
            log.info("nova sonic endpoint: https://bedrock-runtime.%s.amazonaws.com", self.region)
            await super().start(*args, **kwargs)
            return
        _install()
        log.info(
            "nova sonic endpoint: %s%s",
            endpoint.url or f"https://bedrock-runtime.{self.region}.amazonaws.com",
            f" (trusting {endpoint.ca_bundle})" if endpoint.ca_bundle else "",
        )
        token = _starting.set(endpoint)
        try:
            await super().start(*args, **kwargs)
        finally:
            _starting.reset(token)

"""Where to reach Bedrock Runtime, from the standard AWS environment variables.

``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, then ``AWS_ENDPOINT_URL``, name the endpoint;
``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` turns both off; ``AWS_CA_BUNDLE`` is a PEM of CAs to trust instead
of the system store. strands' Nova client ignores all four, so the adapter reads them here at each start.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["BedrockEndpoint", "default_url"]

_TRUTHY = {"1", "true", "yes", "on"}


def default_url(region: str) -> str:
    """The public Bedrock Runtime endpoint of ``region`` (the one strands always passes to the SDK)."""
    return f"https://bedrock-runtime.{region}.amazonaws.com"


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

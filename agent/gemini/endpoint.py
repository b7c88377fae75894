"""Where the Gemini Live API is, as the google-genai client will reach it.

google-genai honours the endpoint settings itself (checked in google-genai 2.x):

- ``GOOGLE_GEMINI_BASE_URL`` (or ``client_args={"http_options": {"base_url": ...}}``) moves the API; for the
  Live API the client swaps the scheme for ``wss`` whatever it was, and appends
  ``/ws/google.ai.generativelanguage.<api version>.GenerativeService.BidiGenerateContent``;
- ``SSL_CERT_FILE`` (else certifi's bundle) and ``SSL_CERT_DIR`` are the CAs its WebSocket trusts, read once when
  the client is built (strands builds it in the model's constructor);
- the key (``GOOGLE_API_KEY``, else ``GEMINI_API_KEY``) goes in the ``x-goog-api-key`` header.

So no seam is needed to move it: this module only says where it goes, for the start-up log and the operator's hint.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

__all__ = ["DEFAULT_BASE_URL", "GeminiEndpoint", "live_path"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"
DEFAULT_API_VERSION = "v1beta"


def live_path(api_version: str = DEFAULT_API_VERSION) -> str:
    """The Live API's WebSocket path for an API key (not Vertex AI, not an ephemeral token)."""
    return f"/ws/google.ai.generativelanguage.{api_version}.GenerativeService.BidiGenerateContent"


@dataclass(frozen=True)
class GeminiEndpoint:
    """The Live API's WebSocket URL and the CA file its TLS trusts (None: certifi's bundle)."""

    url: str
    ca_file: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GeminiEndpoint:
        """What the client will use with no ``client_args``: the environment, else Google's endpoint."""
        env = os.environ if env is None else env
        return cls(_live_url(env.get("GOOGLE_GEMINI_BASE_URL") or DEFAULT_BASE_URL), env.get("SSL_CERT_FILE") or None)

    @classmethod
    def of_client(cls, client: Any, env: Mapping[str, str] | None = None) -> GeminiEndpoint:
        """What a built ``genai.Client`` will use (its resolved HTTP options), falling back to the environment."""
        options = getattr(getattr(client, "_api_client", None), "_http_options", None)
        base_url = getattr(options, "base_url", None)
        if not isinstance(base_url, str) or not base_url:
            return cls.from_env(env)
        version = getattr(options, "api_version", None) or DEFAULT_API_VERSION
        env = os.environ if env is None else env
        return cls(_live_url(base_url, version), env.get("SSL_CERT_FILE") or None)

    @property
    def is_google(self) -> bool:
        return (urlparse(self.url).hostname or "").endswith(".googleapis.com")


def _live_url(base_url: str, api_version: str = DEFAULT_API_VERSION) -> str:
    """As the SDK builds it: the base URL with its scheme swapped for ``wss``, then the path (a base URL ending in
    ``/`` gives ``//ws/...``, as the SDK sends it)."""
    return urlparse(base_url)._replace(scheme="wss").geturl() + live_path(api_version)

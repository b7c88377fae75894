"""Where the OpenAI Realtime API is, from the openai SDK's own environment variable.

``OPENAI_BASE_URL`` (``http(s)://host/v1``, as the SDK takes it) names the REST base; the Realtime WebSocket is
``ws(s)://host/v1/realtime`` beside it. strands' client always connects to ``wss://api.openai.com/v1/realtime``,
so the adapter reads the variable at each start. ``SSL_CERT_FILE`` is honoured as it is by every client built on
``ssl.create_default_context()`` (websockets' default for ``wss://``): OpenSSL reads it as its default CA file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

__all__ = ["DEFAULT_REALTIME_URL", "RealtimeEndpoint", "realtime_url"]

DEFAULT_REALTIME_URL = "wss://api.openai.com/v1/realtime"
_SCHEMES = {"https": "wss", "http": "ws", "wss": "wss", "ws": "ws"}


def realtime_url(base_url: str) -> str:
    """The Realtime WebSocket URL for the REST base ``base_url`` (``https://host/v1`` -> ``wss://host/v1/realtime``).

    A base that already ends in ``/realtime`` or uses a WebSocket scheme is taken as it is, bar the scheme."""
    parts = urlsplit(base_url.strip())
    scheme = _SCHEMES.get(parts.scheme.lower())
    if scheme is None or not parts.netloc:
        raise ValueError(f"OPENAI_BASE_URL={base_url!r} is not an http(s):// or ws(s):// URL")
    path = parts.path.rstrip("/")
    if not path.endswith("/realtime"):
        path += "/realtime"
    return urlunsplit((scheme, parts.netloc, path, "", ""))


@dataclass(frozen=True)
class RealtimeEndpoint:
    """The Realtime WebSocket URL (without ``?model=``) and the CA file trusted for it (None: the system's)."""

    url: str = DEFAULT_REALTIME_URL
    ca_file: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RealtimeEndpoint:
        env = os.environ if env is None else env
        base = env.get("OPENAI_BASE_URL", "").strip()
        return cls(url=realtime_url(base) if base else DEFAULT_REALTIME_URL, ca_file=env.get("SSL_CERT_FILE") or None)

    def describe(self) -> str:
        """For the start-up log: the URL, and the CAs trusted when they are not the system's."""
        trusting = f" (trusting {self.ca_file})" if self.ca_file and self.url.startswith("wss:") else ""
        return f"{self.url}{trusting}"

"""strands' Gemini Live model as this project runs it: :class:`GeminiLiveModel`.

A subclass of strands' ``GoogleGeminiLiveModel`` (its connection, resumption by handle and event mapping are
strands' own) that adds:

- the endpoint in use, logged at each start (``GOOGLE_GEMINI_BASE_URL`` and ``SSL_CERT_FILE`` are honoured by
  google-genai itself: :mod:`agent.gemini.endpoint`);
- the operator's next step on Live API errors (:mod:`agent.gemini.errors`);
- a quiet switch-over before strands' 540 s restart (``agent.quiet_switch``);
- a prompt close when the call ends mid-reply (``agent.closing``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any

from strands.bidi.models import GoogleGeminiLiveModel as StrandsGeminiLiveModel
from strands.bidi.models.model import ConnectionTimeoutError
from strands.bidi.types import BidiOutputEvent

from ..closing import DrainWhileClosing, Receiving
from ..quiet_switch import QuietSwitchover
from .endpoint import GeminiEndpoint
from .errors import GeminiTarget, add_operator_hint

__all__ = ["GeminiLiveModel"]

log = logging.getLogger("agent.gemini")


class GeminiLiveModel(DrainWhileClosing, QuietSwitchover, StrandsGeminiLiveModel):
    """strands' ``GoogleGeminiLiveModel``, saying where it connects and what to do when the API refuses."""

    def __init__(self, **kwargs: Any) -> None:
        model_id = str(kwargs.get("model_id", "?"))
        try:
            super().__init__(**kwargs)
        except ValueError as error:  # google-genai: no API key
            add_operator_hint(error, GeminiTarget(model_id, GeminiEndpoint.from_env().url))
            raise
        self.endpoint = GeminiEndpoint.of_client(self._client)

    async def start(self, *args: Any, **kwargs: Any) -> None:
        """strands' start (a fresh connection, or a resumption by handle), logged with where it goes."""
        resuming = "live_session_handle" in kwargs
        log.info(
            "gemini live endpoint: %s%s%s",
            self.endpoint.url,
            f" (trusting {self.endpoint.ca_file})" if self.endpoint.ca_file else "",
            " (resuming by handle)" if resuming else "",
        )
        try:
            await super().start(*args, **kwargs)
        except Exception as error:
            add_operator_hint(error, self._target())
            raise

    async def receive(self) -> AsyncGenerator[BidiOutputEvent, None]:  # type: ignore[override]
        """strands' events; errors carry the operator's hint (a ``goAway`` is strands' restart, left alone)."""
        try:
            async with contextlib.aclosing(super().receive()) as events:
                async for event in events:
                    yield event
        except ConnectionTimeoutError:
            raise
        except Exception as error:
            add_operator_hint(error, self._target())
            raise

    def _model_socket(self) -> Receiving | None:
        """The WebSocket under google-genai's live session (its ``_ws``), while one is open."""
        return getattr(getattr(self, "_live_session", None), "_ws", None)

    def _target(self) -> GeminiTarget:
        return GeminiTarget(model_id=str(self._config.get("model_id", "?")), endpoint=self.endpoint.url)

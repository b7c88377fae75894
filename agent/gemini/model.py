"""strands' Gemini Live model as this project runs it: :class:`GeminiLiveModel`.

A subclass of strands' ``GoogleGeminiLiveModel`` (its connection, resumption by handle and event mapping are
strands' own) that adds:

- the endpoint in use, logged at each start (``GOOGLE_GEMINI_BASE_URL`` and ``SSL_CERT_FILE`` are honoured by
  google-genai itself: :mod:`agent.gemini.endpoint`);
- the operator's next step on Live API errors (:mod:`agent.gemini.errors`);
- a quiet switch-over before strands' 540 s restart (``agent.quiet_switch``);
- a prompt close when the call ends mid-reply (``agent.closing``);
- a tool's result for a call an earlier connection made given as text (:mod:`agent.gemini.tool_results`): the
  connection that replaced it, resumed or fresh, has no such call open;
- the caller's words kept when a connection goes mid-turn: strands closes a user transcript only at the turn's
  end (``turnComplete``, or a transcription marked ``finished``), so a ``goAway`` or a quiet switch-over during a
  tool call would drop them from the history it replays and from the call's transcript. They are closed first.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any

from strands.bidi.models import GoogleGeminiLiveModel as StrandsGeminiLiveModel
from strands.bidi.models.model import ConnectionTimeoutError
from strands.bidi.types import BidiMessage, BidiOutputEvent

from ..closing import DrainWhileClosing, Receiving
from ..quiet_switch import QuietSwitchover
from .endpoint import GeminiEndpoint
from .errors import GeminiTarget, add_operator_hint
from .tool_results import ToolCalls

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
        self._tool_calls = ToolCalls()

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
        self._tool_calls.new_connection()

    async def send(self, content: Any) -> None:
        """strands' send; a result for a call this connection did not make goes as text (see the module)."""
        if not isinstance(content, BidiMessage):
            await super().send(content)
            return
        messages = self._tool_calls.for_this_connection(content)
        if len(messages) > 1 or messages[0] is not content:
            log.info("a tool result for a call made before the connection was replaced goes to the model as text")
        for message in messages:
            await super().send(message)

    async def receive(self) -> AsyncGenerator[BidiOutputEvent, None]:  # type: ignore[override]
        """strands' events; errors carry the operator's hint (a ``goAway`` is strands' restart, left alone)."""
        try:
            async with contextlib.aclosing(super().receive()) as events:
                async for event in events:
                    self._tool_calls.seen(event)
                    yield event
        except ConnectionTimeoutError:
            for stop in _close_user_transcripts(self._turn_state):
                yield stop
            raise
        except Exception as error:
            add_operator_hint(error, self._target())
            raise

    def _model_socket(self) -> Receiving | None:
        """The WebSocket under google-genai's live session (its ``_ws``), while one is open."""
        return getattr(getattr(self, "_live_session", None), "_ws", None)

    def _target(self) -> GeminiTarget:
        return GeminiTarget(model_id=str(self._config.get("model_id", "?")), endpoint=self.endpoint.url)


def _close_user_transcripts(turn_state: Any) -> list[BidiOutputEvent]:
    """Stop events for the user transcripts the going connection left open (strands' own per-reader turn state)."""
    return [turn_state.stop_input_transcript(input_id) for input_id in sorted(turn_state.input_ids)]

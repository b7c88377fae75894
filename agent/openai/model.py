"""strands' OpenAI Realtime model as this project runs it: :class:`OpenAIRealtime`.

A subclass of strands' ``OpenAIRealtimeModel`` that keeps its session set-up, event conversion and history
replay, and adds:

- the endpoint from ``OPENAI_BASE_URL``, read at each start and logged (:mod:`agent.openai.endpoint`);
- trimming an answer to what the caller heard after a barge-in (``agent.heard.HeardAudio``): OpenAI's
  ``conversation.item.truncate`` on the assistant item (:mod:`agent.openai.audio_items`);
- the service's fatal ``error`` events raised, with the operator's next step, and ``session_expired`` turned
  into a restart (:mod:`agent.openai.errors`);
- a quiet switch-over before strands' scheduled restart (``agent.quiet_switch``);
- a prompt close when the call ends mid-reply (``agent.closing``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any

import strands.bidi.models.openai.realtime as strands_realtime
from strands.bidi.models import OpenAIRealtimeModel
from strands.bidi.models.model import ConnectionTimeoutError
from strands.bidi.types import BidiOutputEvent
from websockets.exceptions import ConnectionClosed

from ..closing import DrainWhileClosing, Receiving
from ..quiet_switch import QuietSwitchover
from .audio_items import AudioItems
from .endpoint import RealtimeEndpoint
from .errors import FATAL_CODES, SESSION_EXPIRED, OpenAIRealtimeError, RealtimeTarget, add_operator_hint

__all__ = ["OpenAIRealtime"]

log = logging.getLogger(__name__)


class _AtEndpoint(OpenAIRealtimeModel):
    """strands' model, connecting to ``_endpoint_url``.

    strands builds its URL from the module constant ``OPENAI_REALTIME_URL`` in the synchronous first step of
    ``start()``, before its first ``await``; setting the constant just before that step means no other
    connection's start can run in between, so each connects where its own model says."""

    _endpoint_url: str

    async def start(self, *args: Any, **kwargs: Any) -> None:
        strands_realtime.OPENAI_REALTIME_URL = self._endpoint_url
        await super().start(*args, **kwargs)


class OpenAIRealtime(DrainWhileClosing, QuietSwitchover, _AtEndpoint):
    """strands' ``OpenAIRealtimeModel`` at the configured endpoint; see the module docstring."""

    def __init__(self, *, endpoint: RealtimeEndpoint | None = None, **kwargs: Any) -> None:
        """``endpoint``: where to connect (None: ``OPENAI_BASE_URL`` and ``SSL_CERT_FILE``, read at each start)."""
        super().__init__(**kwargs)
        self._endpoint = endpoint
        self._endpoint_url = (endpoint or RealtimeEndpoint()).url
        self._audio_items = AudioItems()

    async def start(self, *args: Any, **kwargs: Any) -> None:
        endpoint = self._endpoint or RealtimeEndpoint.from_env()
        self._endpoint_url = endpoint.url
        self._audio_items = AudioItems()
        log.info("openai realtime endpoint: %s", endpoint.describe())
        try:
            await super().start(*args, **kwargs)
        except Exception as error:
            add_operator_hint(error, self._target())
            raise

    async def receive(self) -> AsyncGenerator[BidiOutputEvent, None]:  # type: ignore[override]
        """strands' events; a failure carries the operator's next step."""
        try:
            async with contextlib.aclosing(super().receive()) as events:
                async for event in events:
                    yield event
        except ConnectionTimeoutError:
            raise  # the connection limit: strands restarts and replays the conversation
        except Exception as error:
            add_operator_hint(error, self._target())
            raise

    async def audio_heard(self, content_id: str, heard_ms: int) -> None:
        """``agent.heard.HeardAudio``: cut the assistant item of ``content_id`` to its first ``heard_ms``."""
        item = self._audio_items.find(content_id)
        if item is None or not self._connection_id:
            log.debug("content_id=<%s> | no assistant item to truncate", content_id)
            return
        end_ms = max(0, min(int(heard_ms), int(item.audio_ms)))
        event = {
            "type": "conversation.item.truncate",
            "item_id": item.item_id,
            "content_index": item.content_index,
            "audio_end_ms": end_ms,
        }
        try:
            await self._send_event(event)
        except (ConnectionClosed, OSError) as error:  # the connection is going: nothing left to trim
            log.debug("item_id=<%s> | truncate not sent: %s", item.item_id, error)
            return
        item.audio_ms = end_ms  # the item holds no more than this now: a later truncate may not go past it
        log.debug("item_id=<%s>, audio_end_ms=<%d> | assistant item truncated to what was heard", item.item_id, end_ms)

    def _convert_openai_event(self, openai_event: dict[str, Any], state: Any = None) -> list[BidiOutputEvent] | None:
        """strands' conversion, learning which item each answer's audio is; fatal errors raised."""
        event_type = openai_event.get("type")
        if event_type == "error":
            _raise_if_fatal(openai_event.get("error") or {})
        events = super()._convert_openai_event(openai_event, state)
        if event_type == "response.output_audio.delta" and (state is None or state is self._session_state):
            self._learn_audio_item(openai_event)
        return events

    def _learn_audio_item(self, openai_event: dict[str, Any]) -> None:
        content_id = self._session_state.audio_content_ids.get(openai_event.get("response_id"))
        item_id = openai_event.get("item_id")
        if content_id is None or not isinstance(item_id, str):
            return
        delta = openai_event.get("delta") or ""
        size = len(delta) * 3 // 4 - delta[-2:].count("=")
        self._audio_items.audio(content_id, item_id, int(openai_event.get("content_index") or 0), size)

    def _model_socket(self) -> Receiving | None:
        """strands' WebSocket (kept after a stop, closed: reading it then ends at once)."""
        return getattr(self, "_websocket", None)

    def _target(self) -> RealtimeTarget:
        return RealtimeTarget(model_id=str(self._config.get("model_id", "?")), endpoint=self._endpoint_url)


def _raise_if_fatal(error: dict[str, Any]) -> None:
    """An ``error`` event the session cannot go on from ends ``receive()``; others stay strands' log line."""
    code = str(error.get("code") or "")
    message = str(error.get("message") or "")
    if code == SESSION_EXPIRED:
        raise ConnectionTimeoutError(f"openai realtime session expired: {message}")
    if code in FATAL_CODES:
        raise OpenAIRealtimeError(code, message)

"""strands' Nova Sonic model as this project runs it: :class:`NovaSonicModel`.

A subclass of strands' ``BedrockNovaSonicModel`` that keeps everything of strands' start (its CRT HTTP client
with the lifecycle workarounds, its signing and credentials) and adds:

- the standard AWS endpoint settings, read at each start (:mod:`agent.nova.endpoint`, applied through
  :mod:`agent.nova.sdk_seam`);
- one shared CRT event-loop group for every connection in the process (:mod:`agent.nova.crt_loop`,
  ``VOICEBOT_CRT_THREADS``) instead of an I/O thread per call, and one TLS context (:mod:`agent.nova.crt_client`);
- SigV4 event signing with the key derived once a day and each frame built once (:mod:`agent.nova.event_signer`);
- strands' per-event debug logging skipped when DEBUG is off;
- a stop() that always ends, and a start() that is not cut short halfway (:mod:`agent.nova.stream_repair`);
- transcripts without Nova's barge-in marker (:mod:`agent.nova.marker`);
- the operator's next step on Bedrock errors (:mod:`agent.nova.errors`);
- a quiet switch-over before the 7-minute restart (``agent.quiet_switch``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any

from strands.bidi.models import BedrockNovaSonicModel as StrandsNovaSonicModel
from strands.bidi.models.model import ConnectionTimeoutError
from strands.bidi.types import BidiOutputEvent

from ..quiet_switch import QuietSwitchover
from .endpoint import BedrockEndpoint, default_url
from .errors import NovaTarget, add_operator_hint
from .log import log
from .marker import is_marker_text, without_interrupted_marker
from .sdk_seam import ModelStart, starting
from .stream_repair import SendsInFlight, answers, drop_unsent_input, end_orphan_writers

__all__ = ["SEND_DRAIN_S", "START_FINISH_S", "NovaSonicModel"]

_STRANDS_LOG = logging.getLogger(StrandsNovaSonicModel.__module__)
"""The logger strands' ``_log_event_type`` writes to."""

START_FINISH_S = 2.0
"""How long a cancelled start() may take to finish sending its set-up events before it is cut."""
SEND_DRAIN_S = 0.5
"""How long stop() waits for a send already under way, so that the closing events come after it."""


class NovaSonicModel(QuietSwitchover, StrandsNovaSonicModel):
    """strands' ``BedrockNovaSonicModel``, connecting where the AWS endpoint environment says (read at each start),
    and replacing its connection at a quiet moment before the 7-minute restart (``agent.quiet_switch``)."""

    def __init__(self, *, endpoint: BedrockEndpoint | None = None, crt_threads: int = 1, **kwargs: Any) -> None:
        """``crt_threads``: I/O threads shared by every connection in the process (0: one per call, as strands)."""
        super().__init__(**kwargs)
        self._endpoint = endpoint
        self._crt_threads = crt_threads
        self._writers: set[asyncio.Task[Any]] = set()
        self._endpoint_url = default_url(self.region)
        self._lost_connection: str | None = None
        self._sends = SendsInFlight()

    async def start(self, *args: Any, **kwargs: Any) -> None:
        """strands' start, which is not cut short halfway: a call ending during a restart cancels it, and a
        stream left with its set-up events half-sent (a history content opened, not closed) could not be
        ended cleanly by stop(). A cancelled start finishes first (up to ``START_FINISH_S``)."""
        endpoint = self._endpoint or BedrockEndpoint.from_env()
        self._endpoint_url = endpoint.url or default_url(self.region)
        starting_up = asyncio.ensure_future(self._start_at(endpoint, *args, **kwargs))
        try:
            await asyncio.shield(starting_up)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(starting_up, START_FINISH_S)
            raise
        except Exception as error:
            add_operator_hint(error, self._target())
            raise

    async def _start_at(self, endpoint: BedrockEndpoint, *args: Any, **kwargs: Any) -> None:
        log.info(
            "nova sonic endpoint: %s%s",
            self._endpoint_url,
            f" (trusting {endpoint.ca_bundle})" if endpoint.ca_bundle else "",
        )
        with starting(ModelStart(endpoint, self._crt_threads, self._writers)):
            await super().start(*args, **kwargs)

    async def receive(self) -> AsyncGenerator[BidiOutputEvent, None]:  # type: ignore[override]
        """strands' events without Nova's barge-in marker in transcripts; errors carry the operator's hint."""
        connection_id = self._connection_id
        try:
            async with contextlib.aclosing(without_interrupted_marker(super().receive())) as events:
                async for event in events:
                    yield event
        except ConnectionTimeoutError:
            raise  # Nova's connection limit: strands restarts, closing this stream the regular way
        except Exception as error:
            add_operator_hint(error, self._target())
            self._lose(connection_id)
            raise
        self._lose(connection_id)

    def _lose(self, connection_id: str | None) -> None:
        """The stream of ``connection_id`` ended without a stop(): the service, a proxy or the network ended it.

        Not when the reader is being cancelled: that is strands' own stop (the call ended), and awscrt can turn
        the cancellation into a read error. Such a stream is alive and gets the regular closing events."""
        reader = asyncio.current_task()
        if reader is not None and reader.cancelling():
            return
        if connection_id is not None and self._connection_id == connection_id:
            self._lost_connection = connection_id

    async def send(self, content: Any) -> None:
        """strands' send, counted, so that stop() can let one already under way finish first."""
        with self._sends.counting():
            await super().send(content)

    async def stop(self) -> None:
        """strands' stop; for a stream that ended unasked or never got an answer, without waiting for input nobody
        will read. A send under way is let finish first (up to ``SEND_DRAIN_S``, see ``SendsInFlight``)."""
        await self._sends.drain(SEND_DRAIN_S)
        lost = self._lost_connection is not None and self._lost_connection == self._connection_id
        stream = getattr(self, "_stream", None)
        if lost or (stream is not None and not await answers(stream)):
            await self._abandon_stream()
        self._lost_connection = None
        try:
            await super().stop()
        finally:
            await end_orphan_writers(self._writers)

    async def _abandon_stream(self) -> None:
        """Drop a stream that failed, was reset or never connected, so ``stop()`` cannot hang.

        Closing its input without flushing (``drop_unsent_input``) and forgetting the stream lets strands'
        stop() skip sending the closing events and flushing, and still close the client and reset its state.
        """
        stream = getattr(self, "_stream", None)
        if stream is None:
            return
        await drop_unsent_input(stream)
        del self._stream

    def _log_event_type(self, nova_event: dict[str, Any]) -> None:
        """strands' debug log of each Nova event, minus the marker's text (the barge-in is logged anyway).

        Nothing at all when neither logger shows DEBUG: strands' version has no level guard, and decodes every
        ``audioOutput``'s base64 and ``json.dumps`` other events just to log them (upstream: guard it with
        ``logger.isEnabledFor(logging.DEBUG)``)."""
        if not (_STRANDS_LOG.isEnabledFor(logging.DEBUG) or log.isEnabledFor(logging.DEBUG)):
            return
        text = nova_event.get("textOutput", {}).get("content") if "textOutput" in nova_event else None
        if isinstance(text, str) and is_marker_text(text):
            log.debug("nova barge-in marker received")
            return
        super()._log_event_type(nova_event)

    def _target(self) -> NovaTarget:
        return NovaTarget(
            model_id=str(self._config.get("model_id", "?")), region=self.region, endpoint=self._endpoint_url
        )

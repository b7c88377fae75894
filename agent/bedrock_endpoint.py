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

Being the project's Nova adapter, the model also keeps Nova's barge-in marker out of transcripts
(``agent.nova_marker``) and attaches the operator's next step to Bedrock errors (``agent.nova_errors``).
The same seam gives each connection's CRT client the process's shared event-loop group
(``agent.crt_loop``, ``VOICEBOT_CRT_THREADS``) instead of a thread of its own per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

import strands.bidi.models.bedrock as strands_bedrock
from awscrt import io as crt_io
from strands.bidi.models import BedrockNovaSonicModel as StrandsNovaSonicModel
from strands.bidi.models.model import ConnectionTimeoutError
from strands.bidi.types import BidiOutputEvent

from .crt_loop import shared_event_loop
from .nova_errors import NovaTarget, add_operator_hint
from .nova_marker import is_marker_text, without_interrupted_marker
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


@dataclass(frozen=True)
class _Start:
    """What the model being started asks of its client: endpoint and trust, and shared I/O threads (0: none)."""

    endpoint: BedrockEndpoint
    crt_threads: int
    writers: set[asyncio.Task[Any]]
    """The model's CRT request-writer tasks (see ``_watch_writers``)."""


_starting: contextvars.ContextVar[_Start | None] = contextvars.ContextVar("bedrock_endpoint", default=None)
_SDKConfig = strands_bedrock.AsyncBedrockRuntimeConfig


class _EndpointConfig(_SDKConfig):  # type: ignore[misc, valid-type]
    """The SDK config, with the endpoint, trust and event loop of the model being started by this module."""

    @classmethod
    async def resolve(cls, **overrides: Any) -> Any:  # type: ignore[override]
        start = _starting.get()
        if start is not None:
            endpoint = start.endpoint
            if endpoint.url is not None:
                overrides["endpoint_uri"] = endpoint.url
            transport = overrides.get("transport")
            if start.crt_threads and transport is not None:
                transport = overrides["transport"] = _on_shared_loop(transport, start.crt_threads)
            if endpoint.ca_bundle is not None and transport is not None:
                _trust_only(transport, endpoint.ca_bundle)
            if transport is not None:
                _watch_writers(transport, start.writers)
        return await _SDKConfig.resolve(**overrides)


def _watch_writers(transport: Any, writers: set[asyncio.Task[Any]]) -> None:
    """Remember each stream's CRT request-writer task, so the model's stop() can end one its stream left behind."""
    original = getattr(transport, "_await_response", None)
    if original is None:
        return

    async def await_response(stream: Any) -> Any:
        task = getattr(stream, "_writer", None)
        if isinstance(task, asyncio.Task):
            writers.add(task)
            task.add_done_callback(writers.discard)
        return await original(stream)

    transport._await_response = await_response


WRITER_GRACE_S = 0.5
"""How long stop() lets a closed stream's request writer finish on its own before cancelling it."""
START_FINISH_S = 2.0
"""How long a cancelled start() may take to finish sending its set-up events before it is cut."""
SEND_DRAIN_S = 0.5
"""How long stop() waits for a send already under way, so that the closing events come after it."""
CANCEL_TRIES = 3
CANCEL_WAIT_S = 0.2


async def _end_orphan_writers(writers: set[asyncio.Task[Any]]) -> None:
    """Cancel request writers still waiting after their stream was closed.

    awscrt can leave a writer waiting forever on a write that the finished HTTP/2 stream never completes (seen
    after Nova ends a stream at its connection limit, about one restart in ten on a busy machine): one task and
    its connection leaked per restart. Once strands' stop() has closed the stream, nothing writes to it again.
    """
    pending = [task for task in writers if not task.done()]
    if not pending:
        return
    _, stuck = await asyncio.wait(pending, timeout=WRITER_GRACE_S)
    if not stuck:
        return
    count = len(stuck)
    for _ in range(CANCEL_TRIES):  # the writer's ``finally`` awaits one more write, which may hang the same way
        for task in stuck:
            task.cancel()
        _, stuck = await asyncio.wait(stuck, timeout=CANCEL_WAIT_S)
        if not stuck:
            break
    if stuck:
        log.warning("nova sonic: %d request writer(s) of a closed stream ignore cancellation", len(stuck))
    else:
        log.info("nova sonic: ended %d request writer(s) a closed stream left waiting", count)


def _on_shared_loop(transport: Any, threads: int) -> Any:
    """The same kind of CRT client as ``transport`` (strands' subclass), on the process's shared event loop."""
    try:
        return type(transport)(eventloop=shared_event_loop(threads))
    except TypeError:  # a transport that takes no event loop: leave it as strands made it
        log.warning("VOICEBOT_CRT_THREADS: %s takes no shared event loop; keeping its own", type(transport).__name__)
        return transport


def _trust_only(transport: Any, ca_bundle: str) -> None:
    """Make the CRT transport verify servers against ``ca_bundle`` (smithy-http builds its TLS context eagerly)."""
    if not hasattr(transport, "_tls_ctx"):
        raise RuntimeError(f"AWS_CA_BUNDLE: cannot set trust on transport {type(transport).__name__}")
    options = crt_io.TlsContextOptions()
    options.override_default_trust_store_from_path(None, ca_bundle)
    transport._tls_ctx = crt_io.ClientTlsContext(options)


ANSWER_WAIT_S = 2.0
"""How long stop() lets a stream that has had no answer yet get one, before giving it up as dead."""


async def _answers(stream: Any) -> bool:
    """Whether the service has answered ``stream`` (HTTP 200 and headers), waiting up to ``ANSWER_WAIT_S``.

    A stream stopped right after it was opened (a restart, an early hang-up) usually gets its answer in
    milliseconds and is then closed the regular way; one whose connection never completes (awscrt does
    not finish a TLS handshake it rejected) would make strands' stop() wait forever.
    """
    if stream.output_stream is not None:
        return True
    waiting = asyncio.ensure_future(stream.await_output())
    done, _ = await asyncio.wait({waiting}, timeout=ANSWER_WAIT_S)
    if not done:
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        return False
    return not waiting.cancelled() and waiting.exception() is None  # cancelled: the SDK gave the stream up


def _install() -> None:
    if strands_bedrock.AsyncBedrockRuntimeConfig is not _EndpointConfig:
        strands_bedrock.AsyncBedrockRuntimeConfig = _EndpointConfig  # type: ignore[misc]


class BedrockNovaSonicModel(QuietSwitchover, StrandsNovaSonicModel):
    """strands' ``BedrockNovaSonicModel``, connecting where the AWS endpoint environment says (read at each start),
    and replacing its connection at a quiet moment before the 7-minute restart (``agent.quiet_switch``).

    Same name as its parent on purpose: it is that model, plus the standard endpoint settings.
    """

    def __init__(self, *, endpoint: BedrockEndpoint | None = None, crt_threads: int = 1, **kwargs: Any) -> None:
        """``crt_threads``: I/O threads shared by every connection in the process (0: one per call, as strands)."""
        super().__init__(**kwargs)
        self._endpoint = endpoint
        self._crt_threads = crt_threads
        self._writers: set[asyncio.Task[Any]] = set()
        self._endpoint_url = f"https://bedrock-runtime.{self.region}.amazonaws.com"
        self._lost_connection: str | None = None
        self._sends_in_flight = 0
        self._no_sends = asyncio.Event()
        self._no_sends.set()

    async def start(self, *args: Any, **kwargs: Any) -> None:
        """strands' start, which is not cut short halfway: a call ending during a restart cancels it, and a
        stream left with its set-up events half-sent (a history content opened, not closed) could not be
        ended cleanly by stop(). A cancelled start finishes first (up to ``START_FINISH_S``)."""
        endpoint = self._endpoint or BedrockEndpoint.from_env()
        self._endpoint_url = endpoint.url or f"https://bedrock-runtime.{self.region}.amazonaws.com"
        starting = asyncio.ensure_future(self._start_at(endpoint, *args, **kwargs))
        try:
            await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(starting, START_FINISH_S)
            raise
        except Exception as error:
            add_operator_hint(error, self._target())
            raise

    async def _start_at(self, endpoint: BedrockEndpoint, *args: Any, **kwargs: Any) -> None:
        if not endpoint.configured and not self._crt_threads:
            log.info("nova sonic endpoint: %s", self._endpoint_url)
            await super().start(*args, **kwargs)
            return
        _install()
        log.info(
            "nova sonic endpoint: %s%s",
            self._endpoint_url,
            f" (trusting {endpoint.ca_bundle})" if endpoint.ca_bundle else "",
        )
        token = _starting.set(_Start(endpoint, self._crt_threads, self._writers))
        try:
            await super().start(*args, **kwargs)
        finally:
            _starting.reset(token)

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
        """The stream of ``connection_id`` ended without a stop(): the service, a proxy or the network ended it."""
        if connection_id is not None and self._connection_id == connection_id:
            self._lost_connection = connection_id

    async def send(self, content: Any) -> None:
        """strands' send, counted, so that stop() can let one already under way finish first."""
        self._sends_in_flight += 1
        self._no_sends.clear()
        try:
            await super().send(content)
        finally:
            self._sends_in_flight -= 1
            if not self._sends_in_flight:
                self._no_sends.set()

    async def stop(self) -> None:
        """strands' stop; for a stream that ended unasked or never got an answer, without waiting for input nobody
        will read.

        A send under way is let finish first (up to ``SEND_DRAIN_S``): strands closes its send gate before a
        restart, but a send already past it could otherwise open an audio content after the closing events
        (Nova: ``promptEnd`` with a content still open)."""
        if not self._no_sends.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._no_sends.wait(), SEND_DRAIN_S)
        lost = self._lost_connection is not None and self._lost_connection == self._connection_id
        stream = getattr(self, "_stream", None)
        if lost or (stream is not None and not await _answers(stream)):
            await self._abandon_stream()
        self._lost_connection = None
        try:
            await super().stop()
        finally:
            await _end_orphan_writers(self._writers)

    async def _abandon_stream(self) -> None:
        """Drop a stream that failed, was reset (HTTP/2 RST_STREAM) or never connected, so ``stop()`` cannot hang.

        strands' ``stop()`` sends the closing events and then closes the SDK's input stream, which waits
        (smithy's ``close(flush=True)``) for buffered input to be read: after a reset nothing reads it,
        and stop() would wait forever. Closing the input without flushing and forgetting the stream
        lets strands' stop() skip both steps and still close the client and reset its state.
        """
        stream = getattr(self, "_stream", None)
        if stream is None:
            return
        log.info("nova sonic stream ended without a stop: dropping its unsent input")
        writer = getattr(stream.input_stream, "_writer", None)
        try:
            if writer is not None and callable(getattr(writer, "close", None)):
                await writer.close(flush=False)
            output = getattr(stream, "output_stream", None)
            if output is not None:
                await output.close()
        except Exception as error:  # noqa: BLE001 - the stream is gone either way
            log.debug("closing the lost nova stream: %r", error)
        del self._stream

    def _log_event_type(self, nova_event: dict[str, Any]) -> None:
        """strands' debug log of each Nova event, minus the marker's text (the barge-in is logged anyway)."""
        text = nova_event.get("textOutput", {}).get("content") if "textOutput" in nova_event else None
        if isinstance(text, str) and is_marker_text(text):
            log.debug("nova barge-in marker received")
            return
        super()._log_event_type(nova_event)

    def _target(self) -> NovaTarget:
        return NovaTarget(
            model_id=str(self._config.get("model_id", "?")), region=self.region, endpoint=self._endpoint_url
        )

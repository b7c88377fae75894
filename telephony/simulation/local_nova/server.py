"""``LocalNova``: an HTTP/2-over-TLS server on 127.0.0.1 that speaks Nova Sonic's bidirectional stream.

The real ``BedrockNovaSonicModel`` (through the AWS SDK's CRT client) connects to it as it would to
``bedrock-runtime``: TLS with ALPN ``h2``, ``POST /model/{id}/invoke-with-bidirectional-stream``,
``200`` + ``application/vnd.amazon.eventstream``, then events both ways on one stream. Many streams
and connections may run at once; each stream gets a ``NovaSession``. Signatures are not checked.

    async with LocalNova(brain=ScriptedBrain(...)) as nova:
        ...  # point the client at nova.endpoint, trusting nova.ca_file
        assert not nova.violations
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import ssl
import tempfile
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from .certs import make_certificates
from .faults import ERROR_TYPE_SUFFIX, Fault, FaultQueue, SetupDelay, TimeLimits
from .protocol import Limits
from .replies import Brain, BrainsByPrompt, Reply, ScriptedBrain, session_brain
from .session import NovaSession, SessionRecord
from .turns import Pacing

__all__ = ["LocalNova"]

log = logging.getLogger(__name__)

_PATH = re.compile(r"^/model/(?P<model>[^/]+)/invoke-with-bidirectional-stream$")
_WINDOW = 16 * 1024 * 1024
"""Receive window per stream and connection: large, so caller audio never waits on our reads."""


class _StreamGone(Exception):
    """The HTTP/2 stream was reset or its connection closed."""


@dataclass
class _Stream:
    stream_id: int
    session: NovaSession | None = None
    window_open: asyncio.Event = field(default_factory=asyncio.Event)
    gone: bool = False
    early: list[bytes | None] | None = None
    """While Nova is still setting the stream up: what the client sent meanwhile (None: it ended its side)."""


class _Connection:
    """One TCP+TLS connection: the h2 state machine, its read loop and flow-controlled writes."""

    def __init__(self, server: LocalNova, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._server = server
        self._reader = reader
        self._writer = writer
        self._h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self._streams: dict[int, _Stream] = {}
        self._write_lock = asyncio.Lock()

    async def run(self) -> None:
        self._h2.initiate_connection()
        self._h2.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: _WINDOW})
        self._h2.increment_flow_control_window(_WINDOW)
        await self._flush()
        try:
            while data := await self._reader.read(65536):
                try:
                    events = self._h2.receive_data(data)
                except h2.exceptions.ProtocolError as error:
                    log.warning("local nova: HTTP/2 protocol error from client: %s", error)
                    break
                for event in events:
                    self._handle(event)
                await self._flush()
        except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        finally:
            await self._close()

    def _handle(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self._request(event.stream_id, {str(name): str(value) for name, value in event.headers or []})  # utf-8: str
        elif isinstance(event, h2.events.DataReceived):
            self._h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            stream = self._streams.get(event.stream_id)
            if stream is not None and stream.early is not None and event.data:
                stream.early.append(event.data)
            elif stream is not None and stream.session is not None and event.data:
                stream.session.received(event.data)
        elif isinstance(event, h2.events.StreamEnded):
            stream = self._streams.get(event.stream_id)
            if stream is not None and stream.early is not None:
                stream.early.append(None)
            elif stream is not None and stream.session is not None:
                stream.session.request_ended()
        elif isinstance(event, h2.events.StreamReset):
            self._stream_gone(event.stream_id, "client reset the stream")
        elif isinstance(event, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
            for stream in self._streams.values():
                stream.window_open.set()
        elif isinstance(event, h2.events.ConnectionTerminated):
            for stream_id in list(self._streams):
                self._stream_gone(stream_id, "client closed the connection")

    def _request(self, stream_id: int, headers: dict[str, str]) -> None:
        match = _PATH.match(headers.get(":path", "").partition("?")[0])
        if headers.get(":method") != "POST" or match is None:
            log.warning("local nova: no route for %s %s", headers.get(":method"), headers.get(":path"))
            self._respond_error(stream_id, 404, "UnknownOperationException", f"no route for {headers.get(':path')}")
            return
        fault = self._server.faults.take()
        if fault is not None and fault.kind == "reject":
            self._server.rejected.append(fault)
            self._respond_error(stream_id, fault.http_status, fault.error_type, fault.message)
            return
        stream = _Stream(stream_id)
        self._streams[stream_id] = stream
        model_id = urllib.parse.unquote(match["model"])
        delay = self._server.setup_delay.next()
        if delay <= 0:
            self._open(stream, model_id, fault)
            return
        stream.early = []  # read and acknowledged meanwhile, so the client is never stalled by flow control

        async def open_later() -> None:
            await asyncio.sleep(delay)
            if not stream.gone:
                self._open(stream, model_id, fault)
                await self._flush()

        self._server._track(asyncio.create_task(open_later()))

    def _open(self, stream: _Stream, model_id: str, fault: Fault | None) -> None:
        """Answer the request and start its session; feed it whatever arrived while it was being set up."""
        stream_id = stream.stream_id
        record = self._server._new_record(model_id)
        self._h2.send_headers(
            stream_id,
            [
                (":status", "200"),
                ("content-type", "application/vnd.amazon.eventstream"),
                ("x-amzn-requestid", str(uuid.uuid4())),
            ],
        )
        stream.session = NovaSession(
            record,
            session_brain(self._server.brain, lambda: record.system_prompt),
            write=lambda data: self._send(stream, data),
            reset=lambda: self._reset(stream),
            limits=self._server.limits,
            protocol_limits=self._server.protocol_limits,
            pacing=self._server.pacing,
            fault=fault,
            reject_violations=self._server.reject_violations,
        )
        early, stream.early = stream.early or [], None
        for data in early:
            if data is None:
                stream.session.request_ended()
            else:
                stream.session.received(data)
        self._server._sessions_changed()

    def _respond_error(self, stream_id: int, status: int, error_type: str, message: str) -> None:
        body = json.dumps({"message": message}).encode()
        self._h2.send_headers(
            stream_id,
            [
                (":status", str(status)),
                ("content-type", "application/json"),
                ("x-amzn-errortype", error_type + ERROR_TYPE_SUFFIX),
                ("x-amzn-requestid", str(uuid.uuid4())),
                ("content-length", str(len(body))),
            ],
        )
        self._h2.send_data(stream_id, body, end_stream=True)

    async def _send(self, stream: _Stream, data: bytes | None) -> None:
        """Write ``data`` on the stream within HTTP/2 flow control; ``None`` ends the stream."""
        if data is None:
            if stream.gone:
                raise _StreamGone
            try:
                self._h2.end_stream(stream.stream_id)
            except h2.exceptions.StreamClosedError as error:
                raise _StreamGone from error
            await self._flush()
            return
        view = memoryview(data)
        while view:
            if stream.gone:
                raise _StreamGone
            try:
                window = min(self._h2.local_flow_control_window(stream.stream_id), self._h2.max_outbound_frame_size)
            except h2.exceptions.StreamClosedError as error:
                raise _StreamGone from error
            if window <= 0:
                stream.window_open.clear()
                await stream.window_open.wait()
                continue
            try:
                self._h2.send_data(stream.stream_id, view[:window].tobytes())
            except h2.exceptions.StreamClosedError as error:
                raise _StreamGone from error
            view = view[window:]
            await self._flush()

    def _reset(self, stream: _Stream) -> None:
        if not stream.gone:
            stream.gone = True
            with contextlib.suppress(h2.exceptions.H2Error):
                self._h2.reset_stream(stream.stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)
            self._writer.write(self._h2.data_to_send())

    def _stream_gone(self, stream_id: int, reason: str) -> None:
        stream = self._streams.get(stream_id)
        if stream is None or stream.gone:
            return
        stream.gone = True
        stream.window_open.set()
        if stream.session is not None:
            self._server._track(asyncio.create_task(stream.session.aclose(reason)))

    async def _flush(self) -> None:
        data = self._h2.data_to_send()
        if not data:
            return
        async with self._write_lock:
            self._writer.write(data)
            await self._writer.drain()

    async def _close(self) -> None:
        for stream_id in list(self._streams):
            self._stream_gone(stream_id, "connection closed")
        sessions = [stream.session for stream in self._streams.values() if stream.session is not None]
        await asyncio.gather(*(session.aclose("connection closed") for session in sessions), return_exceptions=True)
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()

    async def shutdown(self) -> None:
        with contextlib.suppress(Exception):
            self._h2.close_connection()
            await self._flush()
        self._writer.close()


class LocalNova:
    """A local Nova Sonic endpoint. See the module docstring; all arguments are optional.

    Args:
        brain: decides replies (default: a ``ScriptedBrain`` that answers every trigger with a short tone); a
            ``BrainsByPrompt`` gives each stream the brain its system prompt names.
        limits: Nova's connection cap and silence timeout, and the ``time_scale`` applied to them.
        pacing: audio chunk size and how much faster than real time replies stream.
        protocol_limits: size limits on single inputs.
        reject_violations: answer a protocol violation with ``validationException`` and end the stream.
        setup_delay: how long Nova takes to set up each new stream before it answers (default: no time).
        port: TCP port on 127.0.0.1 (0: any free port).
        cert_dir: where to write the throwaway CA and server certificate (default: a temporary directory).
    """

    def __init__(
        self,
        brain: Brain | BrainsByPrompt | None = None,
        *,
        limits: TimeLimits | None = None,
        pacing: Pacing | None = None,
        protocol_limits: Limits | None = None,
        reject_violations: bool = True,
        setup_delay: SetupDelay | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        cert_dir: Path | None = None,
    ) -> None:
        self.brain: Brain | BrainsByPrompt = brain or ScriptedBrain(default=Reply(text="I'm the local Nova."))
        self.limits = limits or TimeLimits()
        self.pacing = pacing or Pacing()
        self.protocol_limits = protocol_limits or Limits()
        self.reject_violations = reject_violations
        self.setup_delay = setup_delay or SetupDelay()
        self.faults = FaultQueue()
        self.sessions: list[SessionRecord] = []
        self.rejected: list[Fault] = []
        self._host = host
        self._port = port
        self._cert_dir = cert_dir
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._serving: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Condition()
        self.ca_file: Path = Path()

    @property
    def endpoint(self) -> str:
        """``https://127.0.0.1:PORT``: what ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` should be."""
        if self._server is None:
            raise RuntimeError("LocalNova is not started")
        port = self._server.sockets[0].getsockname()[1]
        return f"https://{self._host}:{port}"

    @property
    def violations(self) -> list[str]:
        """Every protocol violation of every stream, prefixed with the stream's index."""
        return [f"stream {record.index}: {violation}" for record in self.sessions for violation in record.violations]

    def take_violations(self) -> list[str]:
        """Return and forget the violations recorded so far (for tests that provoke them on purpose)."""
        violations = self.violations
        for record in self.sessions:
            record.violations.clear()
        return violations

    async def start(self) -> Self:
        directory = self._cert_dir
        if directory is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="local-nova-")
            directory = Path(self._tempdir.name)
        certificates = await asyncio.to_thread(make_certificates, directory)
        self.ca_file = certificates.ca_file
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(certificates.cert_file, certificates.key_file)
        context.set_alpn_protocols(["h2"])
        self._server = await asyncio.start_server(self._serve, self._host, self._port, ssl=context)
        log.info("local nova listening on %s", self.endpoint)
        return self

    async def wait_for_sessions(self, count: int, timeout: float = 5.0) -> list[SessionRecord]:
        """Wait until at least ``count`` streams have opened."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self.sessions) >= count)
        return self.sessions

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            await connection.shutdown()
        # Connection tasks end when their sockets close; cancelling asyncio's client_connected_cb task
        # would make asyncio log the CancelledError, so only helper tasks are cancelled.
        pending = [task for task in self._tasks if task not in self._serving]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if self._serving:
            await asyncio.wait(list(self._serving), timeout=2.0)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- internals ---------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = _Connection(self, reader, writer)
        self._connections.add(connection)
        task = asyncio.current_task()
        if task is not None:
            self._serving.add(task)  # type: ignore[arg-type]
        try:
            await connection.run()
        finally:
            self._connections.discard(connection)
            if task is not None:
                self._serving.discard(task)  # type: ignore[arg-type]

    def _new_record(self, model_id: str) -> SessionRecord:
        record = SessionRecord(index=len(self.sessions), model_id=model_id)
        self.sessions.append(record)
        return record

    def _sessions_changed(self) -> None:
        async def notify() -> None:
            async with self._changed:
                self._changed.notify_all()

        self._track(asyncio.create_task(notify()))

    def _track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

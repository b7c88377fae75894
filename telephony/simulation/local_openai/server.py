"""A local OpenAI Realtime API: strands' real ``OpenAIRealtimeModel`` talks to it over a WebSocket on 127.0.0.1.

``ws://`` by default, ``wss://`` with ``tls=True`` (a throwaway CA from local Nova's ``certs``, which clients
trust through ``SSL_CERT_FILE``). The handshake checks the path (``/v1/realtime``), the ``model`` query and the
``Authorization: Bearer`` key; a wrong key is refused with HTTP 401 and an ``invalid_api_key`` body, like the
service (and a queued ``Fault.throttled_open`` with HTTP 429 and ``rate_limit_exceeded``). Each accepted
connection is one session (:mod:`.session`), recorded for tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import tempfile
from http import HTTPStatus
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from telephony.simulation.local_nova import Pacing, Reply, ScriptedBrain, SetupDelay
from telephony.simulation.local_nova.certs import make_certificates
from telephony.simulation.local_nova.replies import Brain, BrainsByPrompt, session_brain

from .faults import ERROR_MESSAGES, HANDSHAKE_ERROR_TYPES, Fault, FaultQueue, SessionLimits
from .session import OpenAISession, SessionRecord

__all__ = ["LocalOpenAI"]

log = logging.getLogger(__name__)

PATH = "/v1/realtime"
API_KEY = "sk-local-openai-test-key"
MODELS = ("gpt-realtime", "gpt-realtime-2025-08-28", "gpt-realtime-mini")


class LocalOpenAI:
    """A local OpenAI Realtime endpoint. All arguments are optional.

    Args:
        brain: decides replies (default: a ``ScriptedBrain`` answering every trigger with a short tone); a
            ``BrainsByPrompt`` gives each session the brain its instructions name.
        limits: the session limit in real seconds (the service's is an hour).
        pacing: audio chunk size and how much faster than real time responses are generated.
        api_key: the only key accepted.
        models: the model ids this "account" may use; others get ``model_not_found``.
        tls: serve ``wss://`` with a throwaway CA (``ca_file``) instead of ``ws://``.
        late_transcripts: send the caller's transcript after the answer's audio rather than before the response.
        setup_delay: how long each accepted handshake takes (strands' ``start()`` waits for it; default: no time).
        port: TCP port on 127.0.0.1 (0: any free port).
    """

    def __init__(
        self,
        brain: Brain | BrainsByPrompt | None = None,
        *,
        limits: SessionLimits | None = None,
        pacing: Pacing | None = None,
        api_key: str = API_KEY,
        models: tuple[str, ...] = MODELS,
        tls: bool = False,
        late_transcripts: bool = False,
        setup_delay: SetupDelay | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.brain: Brain | BrainsByPrompt = brain or ScriptedBrain(default=Reply(text="I'm the local OpenAI."))
        self.limits = limits or SessionLimits()
        self.pacing = pacing or Pacing()
        self.api_key = api_key
        self.models = models
        self.tls = tls
        self.late_transcripts = late_transcripts
        self.setup_delay = setup_delay or SetupDelay()
        self.faults = FaultQueue()
        self.sessions: list[SessionRecord] = []
        self.refused: list[str] = []
        """Handshakes refused (the reason), as the service refuses a bad key."""
        self.ca_file: Path | None = None
        self._host, self._port = host, port
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self._server: Server | None = None
        self._changed = asyncio.Condition()
        self._open: dict[int, OpenAISession] = {}

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("LocalOpenAI is not started")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def base_url(self) -> str:
        """``http(s)://127.0.0.1:PORT/v1``: what ``OPENAI_BASE_URL`` should be."""
        return f"{'https' if self.tls else 'http'}://{self._host}:{self.port}/v1"

    @property
    def realtime_url(self) -> str:
        return f"{'wss' if self.tls else 'ws'}://{self._host}:{self.port}{PATH}"

    @property
    def violations(self) -> list[str]:
        """Every protocol violation of every session, prefixed with the session's index."""
        return [f"session {record.index}: {violation}" for record in self.sessions for violation in record.violations]

    def take_violations(self) -> list[str]:
        """Return and forget the violations recorded so far (for tests that provoke them on purpose)."""
        violations = self.violations
        for record in self.sessions:
            record.violations.clear()
        return violations

    async def start(self) -> Self:
        context = None
        if self.tls:
            self._tempdir = tempfile.TemporaryDirectory(prefix="local-openai-")
            certificates = await asyncio.to_thread(make_certificates, Path(self._tempdir.name))
            self.ca_file = certificates.ca_file
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(certificates.cert_file, certificates.key_file)
        self._server = await serve(
            self._session,
            self._host,
            self._port,
            ssl=context,
            process_request=self._check_handshake,
            max_size=16 * 1024 * 1024,
        )
        log.info("local openai listening on %s", self.realtime_url)
        return self

    def expire_session(self, index: int) -> bool:
        """Session ``index`` reaches its limit now (``session_expired``, then the close); False if it is not open."""
        session = self._open.get(index)
        if session is not None:
            session.expire()
        return session is not None

    async def wait_for_sessions(self, count: int, timeout: float = 5.0) -> list[SessionRecord]:
        """Wait until at least ``count`` sessions have opened."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self.sessions) >= count)
        return self.sessions

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 3.0)
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

    # -- internals -------------------------------------------------------------------------------

    async def _check_handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        url = urlsplit(request.path)
        if url.path != PATH:
            return self._refuse(connection, HTTPStatus.NOT_FOUND, "not_found", f"no route {url.path}")
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._refuse(connection, HTTPStatus.UNAUTHORIZED, "invalid_api_key", "")
        if not parse_qs(url.query).get("model"):
            return self._refuse(connection, HTTPStatus.BAD_REQUEST, "missing_model", "the model query is required")
        throttled = self.faults.take(handshake=True)
        if throttled is not None:
            return self._refuse(connection, HTTPStatus.TOO_MANY_REQUESTS, throttled.code, throttled.message)
        delay = self.setup_delay.next()
        if delay > 0:  # a slow set-up: the client's connect() waits for the 101
            lost = connection.connection_lost_waiter
            await asyncio.wait([lost], timeout=delay)
            if lost.done():  # the client gave up meanwhile (a call that ended during a swap): no one to answer
                raise asyncio.CancelledError
        return None

    def _refuse(self, connection: ServerConnection, status: HTTPStatus, code: str, message: str) -> Response:
        self.refused.append(code)
        kind = HANDSHAKE_ERROR_TYPES.get(code, "invalid_request_error")
        body = {"error": {"message": message or ERROR_MESSAGES[code], "type": kind, "param": None, "code": code}}
        response = connection.respond(status, json.dumps(body))
        response.headers = Headers(
            [
                *((k, v) for k, v in response.headers.raw_items() if k != "Content-Type"),
                ("Content-Type", "application/json"),
            ]
        )
        return response

    async def _session(self, connection: ServerConnection) -> None:
        assert connection.request is not None
        model_id = parse_qs(urlsplit(connection.request.path).query)["model"][0]
        record = SessionRecord(index=len(self.sessions), model_id=model_id)
        self.sessions.append(record)
        async with self._changed:
            self._changed.notify_all()
        fault = self.faults.take()
        if fault is None and model_id not in self.models:
            fault = Fault.model_not_found()
        session = OpenAISession(
            connection,
            record,
            session_brain(self.brain, lambda: record.system_prompt),
            pacing=self.pacing,
            session_limit_s=self.limits.session_limit_s,
            fault=fault,
            late_transcripts=self.late_transcripts,
        )
        self._open[record.index] = session
        try:
            await session.run()
        finally:
            del self._open[record.index]

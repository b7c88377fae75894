"""``LocalGemini``: a Gemini Live endpoint on 127.0.0.1 that google-genai's real client talks to.

WebSocket over TLS (the SDK always dials ``wss``), at the path the SDK builds for an API key
(``/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent``), the key in ``x-goog-api-key``.
The CA comes from local Nova's throwaway certificates; clients trust it through ``SSL_CERT_FILE``. Resumption
handles are the server's: a new connection that names one continues that conversation (the brain is shared),
without the client replaying history.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import ssl
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Self

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from telephony.simulation.local_nova.certs import make_certificates
from telephony.simulation.local_nova.faults import SetupDelay
from telephony.simulation.local_nova.replies import Brain, BrainsByPrompt, Reply, ScriptedBrain, session_brain

from .faults import FaultQueue, TimeLimits
from .session import GeminiSession, SessionParts, SessionRecord, new_handle
from .turns import Pacing

__all__ = ["API_VERSIONS", "LocalGemini"]

log = logging.getLogger(__name__)

API_VERSIONS = ("v1beta", "v1alpha")
_PATH = "/ws/google.ai.generativelanguage.{}.GenerativeService.BidiGenerateContent"
MISSING_KEY = (
    "Method doesn't allow unregistered callers (callers without established identity). "
    "Please use API Key or other form of API consumer identity to call this API."
)


class LocalGemini:
    """A local Gemini Live endpoint. All arguments are optional.

    Args:
        brain: decides replies (default: a ``ScriptedBrain`` answering every trigger with a short tone); a
            ``BrainsByPrompt`` gives each connection the brain its system instruction names.
        limits: the connection limit and when ``goAway`` comes, and the ``time_scale`` applied to them.
        pacing: audio chunk size and how much faster than real time replies stream.
        api_keys: the keys accepted (None: any non-empty key); another key is refused with 1007.
        models: the model ids offered (None: any); another is refused with 1008.
        setup_delay: how long each accepted connection takes to be set up before ``setupComplete`` (default: none).
        port: TCP port on 127.0.0.1 (0: any free port).
        cert_dir: where to write the throwaway CA and server certificate (default: a temporary directory).
    """

    def __init__(
        self,
        brain: Brain | BrainsByPrompt | None = None,
        *,
        limits: TimeLimits | None = None,
        pacing: Pacing | None = None,
        api_keys: set[str] | None = None,
        models: set[str] | None = None,
        setup_delay: SetupDelay | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        cert_dir: Path | None = None,
    ) -> None:
        self.brain: Brain | BrainsByPrompt = brain or ScriptedBrain(default=Reply(text="I'm the local Gemini."))
        self.limits = limits or TimeLimits()
        self.pacing = pacing or Pacing()
        self.api_keys = api_keys
        self.models = models
        self.setup_delay = setup_delay or SetupDelay()
        self.faults = FaultQueue()
        self.sessions: list[SessionRecord] = []
        self.handles: dict[str, int] = {}
        self._conversations = itertools.count()
        self._host = host
        self._port = port
        self._cert_dir = cert_dir
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self._server: Server | None = None
        self._changed = asyncio.Condition()
        self._notifiers: set[asyncio.Task[None]] = set()
        self._open: dict[int, GeminiSession] = {}
        self.ca_file: Path = Path()

    @property
    def base_url(self) -> str:
        """``https://127.0.0.1:PORT``: what ``GOOGLE_GEMINI_BASE_URL`` should be (the SDK swaps in ``wss``)."""
        if self._server is None:
            raise RuntimeError("LocalGemini is not started")
        port = next(iter(self._server.sockets)).getsockname()[1]
        return f"https://{self._host}:{port}"

    @property
    def violations(self) -> list[str]:
        """Every protocol violation of every connection, prefixed with the connection's index."""
        return [
            f"connection {record.index}: {violation}" for record in self.sessions for violation in record.violations
        ]

    def take_violations(self) -> list[str]:
        """Return and forget the violations recorded so far (for tests that provoke them on purpose)."""
        violations = self.violations
        for record in self.sessions:
            record.violations.clear()
        return violations

    async def start(self) -> Self:
        directory = self._cert_dir
        if directory is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="local-gemini-")
            directory = Path(self._tempdir.name)
        certificates = await asyncio.to_thread(make_certificates, directory)
        self.ca_file = certificates.ca_file
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(certificates.cert_file, certificates.key_file)
        self._server = await serve(
            self._handle,
            self._host,
            self._port,
            ssl=context,
            process_request=self._check_request,
            max_size=16 * 2**20,
        )
        log.info("local gemini listening on %s", self.base_url)
        return self

    def go_away(self, index: int) -> bool:
        """Connection ``index`` gets ``goAway`` now, as before its limit; False if it is not open."""
        session = self._open.get(index)
        if session is not None:
            session.go_away()
        return session is not None

    async def wait_for_sessions(self, count: int, timeout: float = 5.0) -> list[SessionRecord]:
        """Wait until at least ``count`` connections have opened."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self.sessions) >= count)
        return self.sessions

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 3.0)
            self._server = None
        for task in self._notifiers:
            task.cancel()
        await asyncio.gather(*self._notifiers, return_exceptions=True)
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

    def _check_request(self, connection: ServerConnection, request: Request) -> Response | None:
        """The upgrade: the Live API's path for an API key, or a 404 (and a violation) as Google answers."""
        path = "/" + request.path.split("?", 1)[0].lstrip("/")
        if path in {_PATH.format(version) for version in API_VERSIONS}:
            return None
        record = self._new_record(request.path)
        record.violations.append(f"WebSocket upgrade on unknown path {request.path!r}")
        record.ended_by = "HTTP 404"
        return Response(404, "Not Found", Headers([("Content-Type", "text/plain")]), b"Not Found")

    async def _handle(self, websocket: ServerConnection) -> None:
        request = websocket.request
        assert request is not None
        record = self._new_record(request.path)
        record.api_key = request.headers.get("x-goog-api-key", "")
        parts = SessionParts(
            brain=session_brain(self.brain, lambda: record.system_prompt),
            limits=self.limits,
            pacing=self.pacing,
            fault=self.faults.take,
            conversation_of=self._conversation_of,
            issue_handle=self._issue_handle,
            accepts=self._accepts,
            setup_delay=self.setup_delay.next,
        )
        session = GeminiSession(websocket, record, parts)
        self._open[record.index] = session
        try:
            await session.run()
        finally:
            del self._open[record.index]

    def _accepts(self, record: SessionRecord) -> tuple[int, str] | None:
        if not record.api_key:
            return 1008, MISSING_KEY
        if self.api_keys is not None and record.api_key not in self.api_keys:
            return 1007, "API key not valid. Please pass a valid API key."
        if self.models is not None and record.model_id not in self.models:
            return 1008, (
                f"models/{record.model_id} is not found for API version v1beta, "
                "or is not supported for bidiGenerateContent."
            )
        return None

    def _conversation_of(self, handle: str | None) -> int | None:
        if handle is None:
            return next(self._conversations)
        return self.handles.get(handle)

    def _issue_handle(self, conversation: int) -> str:
        handle = new_handle()
        self.handles[handle] = conversation
        return handle

    def _new_record(self, path: str) -> SessionRecord:
        record = SessionRecord(index=len(self.sessions), path=path)
        self.sessions.append(record)

        async def notify() -> None:
            async with self._changed:
                self._changed.notify_all()

        task = asyncio.get_running_loop().create_task(notify())
        self._notifiers.add(task)
        task.add_done_callback(self._notifiers.discard)
        return record

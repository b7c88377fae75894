"""The call console: ring the bot from a browser, watch the call live, and replay recorded calls.

Off unless ``VOICEBOT_CONSOLE`` is on; then every route needs ``VOICEBOT_CONSOLE_TOKEN`` (see
:mod:`telephony.console.auth`). Routes:

- ``GET /console``: the softphone page. It speaks Twilio's Media Streams protocol itself over the same
  ``/media-stream`` WebSocket, with 8 kHz μ-law audio made and played in the page.
- ``POST /console/session``: a ticket for one call (call SID, tokens, stream and events URLs). It holds a
  line like ``/twiml`` does, so console calls count against ``VOICEBOT_MAX_CALLS``.
- ``GET /console/events?call=…&key=…``: the call's transcript, barge-ins, tool calls and hang-up (SSE).
- ``GET /console/calls`` and ``/console/api/calls[/{name}[/audio]]``: recorded calls (``VOICEBOT_RECORD_DIR``).
- ``GET /console/static/{file}``: the pages' scripts and styles (no build step, nothing from a CDN).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse

from telephony.config import ConfigError, Settings
from telephony.console.auth import CALL_QUERY, STREAM_TOKEN_QUERY, ConsoleAccess
from telephony.console.events import ConsoleEvents
from telephony.operations.admission import Admission
from telephony.operations.logs import CallLog
from telephony.operations.metrics import Metrics
from telephony.recording.call_library import CallLibrary

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
STATIC_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml"}
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    # Everything comes from this server; the microphone is the page's only special permission.
    "Content-Security-Policy": "default-src 'self'; media-src 'self' blob:; connect-src 'self'; "
    "img-src 'self' data:; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
}
KEEPALIVE_S = 10.0
"""Quiet seconds between SSE comments: how soon a closed browser tab is noticed (writes fail)."""
REALM = 'Basic realm="voicebot console", charset="UTF-8"'


class Console:
    """The console's state (access checks, live feeds, the record folder) and its routes."""

    def __init__(
        self,
        settings: Settings,
        admission: Admission,
        metrics: Metrics,
        stream_path: str,
    ) -> None:
        if not settings.console_token:
            raise ConfigError("VOICEBOT_CONSOLE is on but VOICEBOT_CONSOLE_TOKEN is not set: set it to a long secret")
        self.access = ConsoleAccess(settings.console_token)
        self.events = ConsoleEvents()
        self.library = CallLibrary(settings.record_dir) if settings.record_dir else None
        self._admission = admission
        self._metrics = metrics
        self._stream_path = stream_path

    def admits_stream(self, query: Mapping[str, str]) -> bool:
        """A console stream with a valid upgrade token may skip the Twilio signature check (and only it)."""
        if STREAM_TOKEN_QUERY not in query:
            return False
        refusal = self.access.admits_stream(query)
        if refusal is not None:
            CallLog(log, query.get(CALL_QUERY, "?")[:40]).warning("console stream refused: upgrade token %s", refusal)
            return False
        return True

    def install(self, app: FastAPI) -> None:
        app.include_router(self._router())
        log.info("call console enabled at /console (needs VOICEBOT_CONSOLE_TOKEN)")

    def _router(self) -> APIRouter:
        operator = Depends(self._require_operator)
        router = APIRouter(prefix="/console")
        router.add_api_route("", self._softphone_page, methods=["GET"], dependencies=[operator])
        router.add_api_route("/calls", self._calls_page, methods=["GET"], dependencies=[operator])
        router.add_api_route("/static/{name}", self._static, methods=["GET"], dependencies=[operator])
        router.add_api_route("/session", self._open_session, methods=["POST"], dependencies=[operator])
        router.add_api_route("/events", self._event_stream, methods=["GET"])
        router.add_api_route("/api/calls", self._list_calls, methods=["GET"], dependencies=[operator])
        router.add_api_route("/api/calls/{name}", self._call_transcript, methods=["GET"], dependencies=[operator])
        router.add_api_route("/api/calls/{name}/audio", self._call_audio, methods=["GET"], dependencies=[operator])
        return router

    # --- access -----------------------------------------------------------------------------------

    def _require_operator(self, request: Request) -> None:
        if not self.access.authorised(request.headers.get("authorization")):
            raise HTTPException(
                status_code=401,
                detail="the console needs VOICEBOT_CONSOLE_TOKEN: as the password (any user name) or a Bearer token",
                headers={"WWW-Authenticate": REALM},
            )

    # --- pages ------------------------------------------------------------------------------------

    async def _softphone_page(self) -> Response:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html", headers=PAGE_HEADERS)

    async def _calls_page(self) -> Response:
        return FileResponse(STATIC_DIR / "calls.html", media_type="text/html", headers=PAGE_HEADERS)

    async def _static(self, name: str) -> Response:
        path = STATIC_DIR / name
        if "/" in name or name.startswith(".") or path.suffix not in STATIC_TYPES or not path.is_file():
            raise HTTPException(status_code=404)
        return FileResponse(path, media_type=STATIC_TYPES[path.suffix], headers={"Cache-Control": "no-cache"})

    # --- one browser call -------------------------------------------------------------------------

    async def _open_session(self) -> JSONResponse:
        ticket = self.access.issue()
        refusal = self._admission.reserve(ticket.call_sid)
        if refusal is not None:
            self._metrics.calls_refused.labels(reason=refusal).inc()
            why = "the server is shutting down" if refusal == "draining" else "every line is busy (VOICEBOT_MAX_CALLS)"
            log.warning("call=%s | console call turned away: %s", ticket.call_sid, refusal)
            return JSONResponse({"error": f"cannot call now: {why}"}, status_code=503)
        self.events.open(ticket.call_sid)
        CallLog(log, ticket.call_sid).info("console call ticket issued")
        stream_query = urlencode({STREAM_TOKEN_QUERY: ticket.stream_token, CALL_QUERY: ticket.call_sid})
        events_query = urlencode({"call": ticket.call_sid, "key": ticket.events_key})
        return JSONResponse(
            {
                "callSid": ticket.call_sid,
                "streamSid": ticket.stream_sid,
                "accountSid": "AC" + "0" * 32,
                "stream": f"{self._stream_path}?{stream_query}",
                "parameters": ticket.parameters(),
                "events": f"/console/events?{events_query}",
            },
            headers={"Cache-Control": "no-store"},
        )

    async def _event_stream(self, request: Request, call: str = "", key: str = "") -> Response:
        feed = self.events.feed(call)
        if feed is None or not self.access.events_allowed(call, key):
            return Response("unknown call or wrong key\n", status_code=404, media_type="text/plain")
        try:
            after = int(request.headers.get("last-event-id", "0"))
        except ValueError:
            after = 0

        async def lines() -> AsyncIterator[str]:
            yield "retry: 1000\n\n"
            async for event in feed.follow(after=after, keepalive_s=KEEPALIVE_S):
                if event is None:
                    if self._admission.draining and feed.started_at is None:
                        feed.finish("the server is shutting down", "server")  # never hold up the exit
                    yield ": keepalive\n\n"
                else:
                    yield f"id: {event['seq']}\ndata: {json.dumps(event, default=str)}\n\n"

        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(lines(), media_type="text/event-stream", headers=headers)

    # --- recorded calls ---------------------------------------------------------------------------

    async def _list_calls(self) -> JSONResponse:
        if self.library is None:
            return JSONResponse({"recording": False, "calls": []})
        calls = await asyncio.to_thread(self.library.recent)
        return JSONResponse({"recording": True, "calls": [call.to_json() for call in calls]})

    async def _call_transcript(self, name: str) -> JSONResponse:
        transcript = await asyncio.to_thread(self._library().transcript, name)
        if transcript is None:
            raise HTTPException(status_code=404, detail=f"no finished recording named {name!r}")
        return JSONResponse(transcript)

    async def _call_audio(self, name: str) -> Response:
        path = await asyncio.to_thread(self._library().audio, name)
        if path is None:
            raise HTTPException(status_code=404, detail=f"no call.wav for {name!r}")
        return FileResponse(path, media_type="audio/wav")

    def _library(self) -> CallLibrary:
        if self.library is None:
            raise HTTPException(status_code=404, detail="calls are not recorded: set VOICEBOT_RECORD_DIR")
        return self.library


def console_for(settings: Settings, admission: Admission, metrics: Metrics, stream_path: str) -> Console | None:
    """The console when ``VOICEBOT_CONSOLE`` is on (reading recordings from the record folder, if set)."""
    if not settings.console:
        return None
    return Console(settings, admission, metrics, stream_path)

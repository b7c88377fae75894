"""The call console: ring the bot from a browser, watch the call live, and replay recorded calls.

Off unless ``VOICEBOT_CONSOLE`` is on; then every route needs ``VOICEBOT_CONSOLE_TOKEN`` (see
:mod:`telephony.console.auth`). Routes:

- ``GET /console``: the softphone page. It speaks Twilio's Media Streams protocol itself over the same
  ``/media-stream`` WebSocket, with 8 kHz μ-law audio made and played in the page.
- ``POST /console/session``: a ticket for one call (call SID, tokens, stream and events URLs). It holds a
  line like ``/twiml`` does, so console calls count against ``VOICEBOT_MAX_CALLS``.
- ``GET /console/events?call=…&key=…``: the call's transcript, barge-ins, tool calls and hang-up (SSE).
- ``GET /console/calls`` and ``/console/api/calls[/{name}[/audio|/levels|/files/{file}]]``: calls in progress
  (from the event feeds) and recorded calls (``VOICEBOT_RECORD_DIR``): transcript, audio, level strips, downloads.
- ``GET /console/api/live/{call_sid}/events``: a call's live events for the calls page (operator only, no key).
- ``GET /console/static/{file}``: the pages' scripts and styles (no build step, nothing from a CDN).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse

from telephony.config import ConfigError, Settings
from telephony.console.auth import CALL_QUERY, STREAM_TOKEN_QUERY, ConsoleAccess
from telephony.console.events import CallFeed, ConsoleEvents
from telephony.operations.admission import Admission
from telephony.operations.logs import CallLog
from telephony.operations.metrics import Metrics
from telephony.recording.call_library import DOWNLOADS, CallLibrary

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
CALLER_ID = re.compile(r"[A-Za-z0-9+][A-Za-z0-9+:._@-]{0,39}")
"""What a console call may give as its From or To: a number, a client: or sip: name (no spaces, no markup)."""


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
        """Mount :meth:`router` on ``app`` (after the server's own routers, ``telephony.routes``)."""
        app.include_router(self.router())
        log.info("call console enabled at /console (needs VOICEBOT_CONSOLE_TOKEN)")

    def router(self) -> APIRouter:
        """The console's routes under ``/console``, each bound to this console's state."""
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
        router.add_api_route("/api/calls/{name}/levels", self._call_levels, methods=["GET"], dependencies=[operator])
        router.add_api_route(
            "/api/calls/{name}/files/{file_name}", self._call_file, methods=["GET"], dependencies=[operator]
        )
        router.add_api_route("/api/live/{call_sid}/events", self._live_events, methods=["GET"], dependencies=[operator])
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

    async def _open_session(self, request: Request) -> JSONResponse:
        try:
            caller_id = await self._caller_id(request)
        except ValueError as error:
            return JSONResponse({"error": str(error)}, status_code=400)
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
                "parameters": ticket.parameters(**caller_id),
                "events": f"/console/events?{events_query}",
            },
            headers={"Cache-Control": "no-store"},
        )

    @staticmethod
    async def _caller_id(request: Request) -> dict[str, str]:
        """The From and To a console call pretends to have (optional JSON body), checked: they reach the agent."""
        body = await request.body()
        if not body.strip():
            return {}
        try:
            fields = json.loads(body)
        except ValueError:
            raise ValueError('the request body must be JSON like {"from": "+15550100"}') from None
        chosen = {}
        for field in ("from", "to"):
            value = str(fields.get(field) or "").strip() if isinstance(fields, dict) else ""
            if value and not CALLER_ID.fullmatch(value):
                raise ValueError(f"{field} must be a number like +15550100 or a name without spaces (40 at most)")
            if value:
                chosen[f"{field}_number"] = value
        return chosen

    async def _event_stream(self, request: Request, call: str = "", key: str = "") -> Response:
        feed = self.events.feed(call)
        if feed is None or not self.access.events_allowed(call, key):
            return Response("unknown call or wrong key\n", status_code=404, media_type="text/plain")
        return self._follow(request, feed)

    async def _live_events(self, request: Request, call_sid: str) -> Response:
        """The calls page follows a call in progress (the operator is logged in: no key needed)."""
        feed = self.events.feed(call_sid)
        if feed is None:
            raise HTTPException(status_code=404, detail=f"no call {call_sid!r} in progress or just ended")
        return self._follow(request, feed)

    def _follow(self, request: Request, feed: CallFeed) -> Response:
        """A feed as Server-Sent Events, from the event after ``Last-Event-ID``."""
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
        live = [feed.summary() for feed in self.events.recent()]
        if self.library is None:
            return JSONResponse({"recording": False, "calls": [], "live": live}, headers={"Cache-Control": "no-store"})
        calls = await asyncio.to_thread(self.library.recent)
        body = {"recording": True, "calls": [call.to_json() for call in calls], "live": live}
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    async def _call_transcript(self, name: str) -> JSONResponse:
        transcript = await asyncio.to_thread(self._library().transcript, name)
        if transcript is None:
            raise HTTPException(
                status_code=404,
                detail=f"{name!r} has no transcript: the call is still going on, or its recording was cut short",
            )
        return JSONResponse(transcript)

    async def _call_audio(self, name: str) -> Response:
        path = await asyncio.to_thread(self._library().audio, name)
        if path is None:
            raise HTTPException(status_code=404, detail=f"no call.wav for {name!r}")
        return FileResponse(path, media_type="audio/wav")

    async def _call_levels(self, name: str) -> JSONResponse:
        levels = await asyncio.to_thread(self._library().levels, name)
        if levels is None:
            raise HTTPException(status_code=404, detail=f"no caller.wav and bot.wav for {name!r}")
        return JSONResponse(levels)

    async def _call_file(self, name: str, file_name: str) -> Response:
        path = await asyncio.to_thread(self._library().file, name, file_name)
        if path is None:
            raise HTTPException(status_code=404, detail=f"{name!r} has no {file_name!r} to download")
        media_type = DOWNLOADS[file_name]
        return FileResponse(path, media_type=media_type, filename=f"{name}-{file_name}")

    def _library(self) -> CallLibrary:
        if self.library is None:
            raise HTTPException(status_code=404, detail="calls are not recorded: set VOICEBOT_RECORD_DIR")
        return self.library


def console_for(settings: Settings, admission: Admission, metrics: Metrics, stream_path: str) -> Console | None:
    """The console when ``VOICEBOT_CONSOLE`` is on (reading recordings from the record folder, if set)."""
    if not settings.console:
        return None
    return Console(settings, admission, metrics, stream_path)

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
- ``GET /console/api/search?q=…``: recorded calls in which those words were said (:mod:`telephony.console.search`).
- ``GET /console/api/live/{call_sid}/events``: a call's live events for the calls page (operator only, no key).
- ``GET /console/api/live/{call_sid}/listen``: listen in on a live call, both sides, read-only
  (:mod:`telephony.console.listen`).
- ``GET /console/static/{file}``: the pages' scripts and styles (no build step, nothing from a CDN).

The routes are plain functions on :data:`router`; each finds the app's :class:`~telephony.console.state.Console`
(``app.state.console``) through the :data:`CurrentConsole` dependency, as the server's own routes find their
services (``telephony.routes``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.requests import HTTPConnection

from telephony.call_outcome import labels_json
from telephony.console.auth import CALL_QUERY, STREAM_TOKEN_QUERY
from telephony.console.events import CallFeed
from telephony.console.listen import ListenerLimit
from telephony.console.search import search_transcripts
from telephony.console.sign_in import SignInRequired, sign_in_page
from telephony.console.state import Console, console_for
from telephony.operations.logs import CallLog
from telephony.recording.call_library import DOWNLOADS, CallLibrary, CallSummary
from telephony.recording.recovery import recover

__all__ = ["Console", "CurrentConsole", "console_for", "install", "router"]

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


async def current_console(connection: HTTPConnection) -> Console:
    """The app's console (a FastAPI dependency; ``async`` so it runs on the event loop, not in a thread)."""
    console: Console | None = connection.app.state.console
    if console is None:
        raise HTTPException(status_code=404)
    return console


CurrentConsole = Annotated[Console, Depends(current_console)]


async def require_operator(request: Request, console: CurrentConsole) -> None:
    """Every route but the event feed needs the console token (Basic password or Bearer)."""
    if not console.access.authorised(request.headers.get("authorization")):
        if "text/html" in request.headers.get("accept", ""):
            raise SignInRequired(wrong=bool(request.headers.get("authorization")))  # a person: a page, not JSON
        raise HTTPException(
            status_code=401,
            detail="the console needs VOICEBOT_CONSOLE_TOKEN: as the password (any user name) or a Bearer token",
            headers={"WWW-Authenticate": REALM},
        )


router = APIRouter(prefix="/console")
_operator = [Depends(require_operator)]


def install(app: FastAPI) -> None:
    """Mount the console's routes on ``app`` (after the server's own routers, ``telephony.routes``)."""
    app.include_router(router)
    app.add_exception_handler(SignInRequired, sign_in_page)
    log.info("call console enabled at /console (needs VOICEBOT_CONSOLE_TOKEN)")


# --- pages ----------------------------------------------------------------------------------------


@router.get("", dependencies=_operator)
async def softphone_page() -> Response:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html", headers=PAGE_HEADERS)


@router.get("/calls", dependencies=_operator)
async def calls_page() -> Response:
    return FileResponse(STATIC_DIR / "calls.html", media_type="text/html", headers=PAGE_HEADERS)


@router.get("/static/{name}", dependencies=_operator)
async def static_file(name: str) -> Response:
    path = STATIC_DIR / name
    if "/" in name or name.startswith(".") or path.suffix not in STATIC_TYPES or not path.is_file():
        raise HTTPException(status_code=404)
    return FileResponse(path, media_type=STATIC_TYPES[path.suffix], headers={"Cache-Control": "no-cache"})


# --- one browser call -----------------------------------------------------------------------------


@router.post("/session", dependencies=_operator)
async def open_session(request: Request, console: CurrentConsole) -> JSONResponse:
    try:
        caller_id = await _caller_id(request)
    except ValueError as error:
        return JSONResponse({"error": str(error)}, status_code=400)
    ticket = console.access.issue()
    refusal = console.admission.reserve(ticket.call_sid)
    if refusal is not None:
        console.metrics.calls_refused.labels(reason=refusal).inc()
        why = "the server is shutting down" if refusal == "draining" else "every line is busy (VOICEBOT_MAX_CALLS)"
        log.warning("call=%s | console call turned away: %s", ticket.call_sid, refusal)
        return JSONResponse({"error": f"cannot call now: {why}"}, status_code=503)
    console.events.open(ticket.call_sid)
    CallLog(log, ticket.call_sid).info("console call ticket issued")
    stream_query = urlencode({STREAM_TOKEN_QUERY: ticket.stream_token, CALL_QUERY: ticket.call_sid})
    events_query = urlencode({"call": ticket.call_sid, "key": ticket.events_key})
    return JSONResponse(
        {
            "callSid": ticket.call_sid,
            "streamSid": ticket.stream_sid,
            "accountSid": "AC" + "0" * 32,
            "stream": f"{console.stream_path}?{stream_query}",
            "parameters": ticket.parameters(**caller_id),
            "events": f"/console/events?{events_query}",
        },
        headers={"Cache-Control": "no-store"},
    )


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


@router.get("/events")
async def event_stream(request: Request, console: CurrentConsole, call: str = "", key: str = "") -> Response:
    feed = console.events.feed(call)
    if feed is None or not console.access.events_allowed(call, key):
        return Response("unknown call or wrong key\n", status_code=404, media_type="text/plain")
    return _follow(request, console, feed)


@router.get("/api/live/{call_sid}/events", dependencies=_operator)
async def live_events(request: Request, console: CurrentConsole, call_sid: str) -> Response:
    """The calls page follows a call in progress (the operator is logged in: no key needed)."""
    feed = console.events.feed(call_sid)
    if feed is None:
        raise HTTPException(status_code=404, detail=f"no call {call_sid!r} in progress or just ended")
    return _follow(request, console, feed)


@router.get("/api/live/{call_sid}/listen", dependencies=_operator)
async def listen_in(console: CurrentConsole, call_sid: str) -> Response:
    """Both sides of a live call as a stream of μ-law records (read-only: nothing goes back to the call)."""
    tap = console.listen.tap(call_sid)
    if tap is None:
        raise HTTPException(status_code=404, detail=f"no call {call_sid!r} in progress to listen to")
    if tap.ended:
        raise HTTPException(status_code=410, detail="the call has ended: open its recording instead")
    try:
        listener = tap.listen()
    except ListenerLimit as error:
        raise HTTPException(status_code=429, detail=str(error)) from None
    CallLog(log, call_sid).info("an operator is listening in")

    async def records() -> AsyncIterator[bytes]:
        try:
            async for item in listener.records():
                yield item
        finally:
            tap.leave(listener)

    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no", "X-Content-Type-Options": "nosniff"}
    return StreamingResponse(records(), media_type="application/octet-stream", headers=headers)


def _follow(request: Request, console: Console, feed: CallFeed) -> Response:
    """A feed as Server-Sent Events, from the event after ``Last-Event-ID``."""
    try:
        after = int(request.headers.get("last-event-id", "0"))
    except ValueError:
        after = 0

    async def lines() -> AsyncIterator[str]:
        yield "retry: 1000\n\n"
        async for event in feed.follow(after=after, keepalive_s=KEEPALIVE_S):
            if event is None:
                if console.admission.draining and feed.started_at is None:
                    feed.finish("the server is shutting down", "server")  # never hold up the exit
                yield ": keepalive\n\n"
            else:
                yield f"id: {event['seq']}\ndata: {json.dumps(event, default=str)}\n\n"

    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(lines(), media_type="text/event-stream", headers=headers)


# --- recorded calls -------------------------------------------------------------------------------


@router.get("/api/calls", dependencies=_operator)
async def list_calls(console: CurrentConsole) -> JSONResponse:
    live = [feed.summary() for feed in console.events.recent()]
    calls = await asyncio.to_thread(_recent_recovered, console.library) if console.library is not None else []
    rows = [call.to_json() for call in calls]
    body = {
        "recording": console.library is not None,
        "calls": rows,
        "live": live,
        "outcomes": outcome_counts(rows, live),
        "outcome_labels": labels_json(),
    }
    return JSONResponse(body, headers={"Cache-Control": "no-store"})


def _recent_recovered(library: CallLibrary) -> list[CallSummary]:
    """The newest recordings, those a dead server left unfinished recovered first (normally done at start-up)."""
    calls = library.recent()
    folders = [library.folder(call.name) for call in calls if not call.complete]
    recovered = [folder for folder in folders if folder is not None and recover(folder)]
    return library.recent() if recovered else calls


def outcome_counts(rows: list[dict[str, Any]], live: list[dict[str, Any]]) -> dict[str, int]:
    """Calls of each outcome among those listed (a call both recorded and in the live list counts once)."""
    counts = dict.fromkeys(labels_json(), 0)
    recorded = {row["call_sid"] for row in rows}
    for row in [*rows, *(feed for feed in live if feed["call_sid"] not in recorded)]:
        if row.get("outcome") in counts:
            counts[row["outcome"]] += 1
    return counts


@router.get("/api/search", dependencies=_operator)
async def search_calls(console: CurrentConsole, q: str = "") -> JSONResponse:
    """Recorded calls in which ``q`` was said (caller or bot), each with its first matching line."""
    matches = await asyncio.to_thread(search_transcripts, _library(console), q)
    return JSONResponse({"query": q, "matches": matches}, headers={"Cache-Control": "no-store"})


@router.get("/api/calls/{name}", dependencies=_operator)
async def call_transcript(console: CurrentConsole, name: str) -> JSONResponse:
    transcript = await asyncio.to_thread(_transcript_recovered, _library(console), name)
    if transcript is None:
        raise HTTPException(
            status_code=404,
            detail=f"{name!r} has no transcript: the call is still going on, or its recording was cut short",
        )
    return JSONResponse(transcript)


@router.get("/api/calls/{name}/audio", dependencies=_operator)
async def call_audio(console: CurrentConsole, name: str) -> Response:
    path = await asyncio.to_thread(_library(console).audio, name)
    if path is None:
        raise HTTPException(status_code=404, detail=f"no call.wav for {name!r}")
    return FileResponse(path, media_type="audio/wav")


@router.get("/api/calls/{name}/levels", dependencies=_operator)
async def call_levels(console: CurrentConsole, name: str) -> JSONResponse:
    levels = await asyncio.to_thread(_library(console).levels, name)
    if levels is None:
        raise HTTPException(status_code=404, detail=f"no caller.wav and bot.wav for {name!r}")
    return JSONResponse(levels)


@router.get("/api/calls/{name}/files/{file_name}", dependencies=_operator)
async def call_file(console: CurrentConsole, name: str, file_name: str) -> Response:
    path = await asyncio.to_thread(_library(console).file, name, file_name)
    if path is None:
        raise HTTPException(status_code=404, detail=f"{name!r} has no {file_name!r} to download")
    media_type = DOWNLOADS[file_name]
    return FileResponse(path, media_type=media_type, filename=f"{name}-{file_name}")


def _transcript_recovered(library: CallLibrary, name: str) -> dict[str, Any] | None:
    """A recording's transcript; one whose writer died is recovered first (if the start-up has not yet)."""
    transcript = library.transcript(name)
    folder = library.folder(name)
    if transcript is None and folder is not None and recover(folder):
        transcript = library.transcript(name)
    return transcript


def _library(console: Console) -> CallLibrary:
    if console.library is None:
        raise HTTPException(status_code=404, detail="calls are not recorded: set VOICEBOT_RECORD_DIR")
    return console.library

"""Graceful shutdown: stop taking calls, let calls in progress finish, then wrap up the rest.

On SIGTERM (a deploy, a scale-in) ``voicebot serve`` drains instead of cutting callers off:
new calls hear a short "we are restarting" and are hung up; calls in progress get
``VOICEBOT_SHUTDOWN_GRACE`` seconds to finish; any still going are asked to say goodbye and are
ended after ``VOICEBOT_WRAP_UP_SECONDS``. A second signal stops at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI

log = logging.getLogger(__name__)

_POLL_S = 0.2
_AFTER_WRAP_UP_S = 5.0
"""Extra time for hang-ups and recordings to finish after the wrap-up limit."""


async def drain(app: FastAPI, grace_s: float, wrap_up_s: float) -> None:
    """Refuse new calls; wait for calls to end, then wrap up the rest; return when none are left."""
    sessions: set[Any] = app.state.sessions
    transfers = getattr(app.state, "transfers", None)
    app.state.admission.draining = True
    log.warning("shutting down: no new calls; waiting up to %.0fs for %d call(s) to end", grace_s, len(sessions))
    if not await _wait_until_idle(sessions, transfers, grace_s):
        log.warning("shutting down: asking %d call(s) to say goodbye", len(sessions))
        for session in list(sessions):
            session.wrap_up("The phone service is restarting.")
        if transfers is not None and transfers.pending:
            # Nobody may be left on hold: callers still waiting are told and hung up, briefings end.
            log.warning("shutting down: ending %d warm transfer(s) still waiting", transfers.pending)
            await transfers.settle_all("the phone service is restarting")
        if not await _wait_until_idle(sessions, transfers, wrap_up_s + _AFTER_WRAP_UP_S):
            log.error("shutting down with %d call(s) still open", len(sessions))
            return
    log.info("shutdown: all calls ended")


async def _wait_until_idle(sessions: set[Any], transfers: Any, seconds: float) -> bool:
    """Until no call is in progress and no warm transfer is waiting (a caller on hold is a call too)."""
    deadline = time.monotonic() + seconds

    def busy() -> bool:
        return bool(sessions) or bool(transfers is not None and transfers.pending)

    while busy() and time.monotonic() < deadline:
        await asyncio.sleep(_POLL_S)
    return not busy()


class DrainingServer(uvicorn.Server):
    """uvicorn, but the first SIGTERM/SIGINT drains calls (see ``drain``) before the server stops."""

    def __init__(self, config: uvicorn.Config, app: FastAPI, grace_s: float, wrap_up_s: float) -> None:
        super().__init__(config)
        self._app = app
        self._grace_s = grace_s
        self._wrap_up_s = wrap_up_s
        self._drain_requested = False
        self._drain_task: asyncio.Task[None] | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._drain_requested:
            log.warning("second signal: stopping now")
            self.force_exit = True
            super().handle_exit(sig, frame)
            return
        self._drain_requested = True  # picked up by on_tick, on the event loop

    async def on_tick(self, counter: int) -> bool:
        if self._drain_requested and self._drain_task is None:
            self._drain_task = asyncio.create_task(drain(self._app, self._grace_s, self._wrap_up_s))
            self._drain_task.add_done_callback(self._drained)
        return await super().on_tick(counter)

    def _drained(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("drain failed: %r", task.exception())
        self.should_exit = True

"""The bridge's hold on a model's event stream: an end nobody asked for is an error, and a quiet model can be made
to reconnect.

When a model's ``receive()`` simply returns (Nova Sonic does when the service closes the stream),
``BidiAgent.receive()`` waits forever and the caller sits in dead air. Wrapping the model's ``receive`` so that an
unrequested end raises makes the agent surface it like any other model failure; after a connection restart the SDK
drops errors from the superseded stream.

The same wrapper lets the bridge replace a connection that has gone quiet (telephony.bridge.dead_air): strands
replaces a connection whenever the model's ``receive()`` raises a ``ConnectionTimeoutError`` (its reactive path, the
one a provider's own timeout takes), replaying the conversation so far. :meth:`ModelGuard.reconnect` cancels the
read the wrapper is waiting on and raises :class:`QuietModelRestart` in its place. It costs nothing per event (no
task or wait is raced against each read); it relies only on asyncio's cancel and ``uncancel`` and on strands' public
contract that a ``ConnectionTimeoutError`` from ``receive()`` restarts the connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from strands.bidi.models import ConnectionTimeoutError

log = logging.getLogger(__name__)

_GUARD = "_voicebot_guard"


class ModelStreamClosed(RuntimeError):
    """The model's event stream ended although nobody stopped the agent."""


class QuietModelRestart(ConnectionTimeoutError):
    """Not a provider timeout: the bridge replaces a connection that owed the caller an answer and went quiet.
    strands restarts it as after a timeout; the bridge tells the two apart by this type."""

    def __init__(self, why: str) -> None:
        super().__init__(f"replaced by the bridge: {why}")


class ModelGuard:
    """One model's guarded ``receive`` (installed on the instance by :func:`guard_model_stream`)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._original = model.receive
        self._reader: asyncio.Task[Any] | None = None
        """The task reading the model's stream while it waits for the next event (None between reads)."""
        self._restart: str | None = None
        """Why a reconnect was asked for and not yet raised."""

    @property
    def can_reconnect(self) -> bool:
        """strands restarts this model's connection on a timeout (unless it declares ``auto_restart: False``)."""
        get_config = getattr(self._model, "get_connection_config", None)
        try:
            return bool((get_config() if get_config is not None else {}).get("auto_restart", True))
        except Exception:  # noqa: BLE001 - a model that cannot say is one strands restarts by default
            return True

    def reconnect(self, why: str) -> bool:
        """Replace the model's connection now (the conversation so far is replayed to the next). False if one is
        already pending, or the model opted out of strands' restarts (the timeout would end the call instead)."""
        if self._restart is not None or not self.can_reconnect:
            return False
        self._restart = why
        reader = self._reader
        if reader is None or reader.done():
            return True  # raised at the next read
        reader.cancel(f"voicebot: {why}")
        return True

    async def receive(self) -> AsyncIterator[Any]:
        events = self._original().__aiter__()
        task = asyncio.current_task()
        while True:
            if self._restart is not None:
                raise self._restarting()
            self._reader = task
            try:
                event = await events.__anext__()
            except StopAsyncIteration:
                break
            except asyncio.CancelledError:
                # Ours only: a cancel from strands (its stop) or the call's end is also pending when cancelling() > 1.
                if self._restart is None or task is None or task.cancelling() != 1:
                    raise
                task.uncancel()
                raise self._restarting() from None
            finally:
                self._reader = None
            yield event
        raise ModelStreamClosed(f"{type(self._model).__name__} stream ended without being stopped")

    def _restarting(self) -> QuietModelRestart:
        why, self._restart = self._restart or "", None
        return QuietModelRestart(why)


def guard_model_stream(model: Any) -> ModelGuard:
    """Patch ``model.receive`` (on this instance only) to raise when its stream ends unasked; the guard (one per
    model) also replaces a quiet connection on request."""
    guard = getattr(model, _GUARD, None)
    if isinstance(guard, ModelGuard):
        return guard
    guard = ModelGuard(model)
    model.receive = guard.receive
    setattr(model, _GUARD, guard)
    return guard


__all__ = ["ModelGuard", "ModelStreamClosed", "QuietModelRestart", "guard_model_stream"]

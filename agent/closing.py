"""Close a model's WebSocket at once when the call is over, even with a reply still arriving on it.

Gemini Live and OpenAI Realtime (through google-genai and strands' client, both on ``websockets``) stream a
reply faster than it plays. When a call ends, strands cancels the model's reader first and stops the model
after, so nothing reads the socket any more. ``websockets`` stops reading from the network once 16 received
messages wait unread (its flow control, ``max_queue``); the server's close frame then sits behind the unread
reply, ``close()`` never sees it and waits out its ``close_timeout`` (10 s). The bridge gives a stopping agent
5 s and moves on, leaving the connection half closed and open (the provider's session with it), and the
call's figures reached ``GET /stats`` only then: with many callers hanging up mid-reply, the load benchmark
read no samples at all. websockets' maintainers hold that a close must time out when its reader stopped
reading (python-websockets issue 1555): here it stopped on purpose, so :class:`DrainWhileClosing` reads and
drops whatever still arrives while the model closes, and the closing handshake completes in a round trip.

Not during a restart: strands' reader of the old connection may still be reading it, must get what it still
carries, and two readers of one socket is an error in ``websockets``.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Protocol

from websockets.exceptions import ConnectionClosed

__all__ = ["DrainWhileClosing", "discard_until_closed"]


class Receiving(Protocol):
    """What is needed of a ``websockets`` connection."""

    async def recv(self) -> str | bytes: ...


class DrainWhileClosing:
    """Mixin for a ``BidiModel`` on a WebSocket: ``stop()`` drops what still arrives while it closes.

    Put it first in the bases; the model class says where its socket is (:meth:`_model_socket`)."""

    _restarting: bool = False

    def _model_socket(self) -> Receiving | None:
        """The open connection's WebSocket (None: none open)."""
        raise NotImplementedError

    async def restart(self, *args: Any, **kwargs: Any) -> None:
        """strands' restart, whose ``stop()`` leaves the old connection to its reader."""
        self._restarting = True
        try:
            await super().restart(*args, **kwargs)  # type: ignore[misc]
        finally:
            self._restarting = False

    async def stop(self) -> None:
        """The model's stop, with the socket read (and what arrives dropped) until it has closed."""
        socket = None if self._restarting else self._model_socket()
        if socket is None:
            await super().stop()  # type: ignore[misc]
            return
        drain = asyncio.create_task(discard_until_closed(socket), name="model-socket-drain")
        try:
            await super().stop()  # type: ignore[misc]
        finally:
            drain.cancel()
            await asyncio.gather(drain, return_exceptions=True)


async def discard_until_closed(socket: Receiving) -> None:
    """Read and drop messages until the connection has closed, or until it turns out another reader holds it
    (``websockets`` raises ``ConcurrencyError``, a ``RuntimeError``; older versions a bare ``RuntimeError``)."""
    with contextlib.suppress(ConnectionClosed, RuntimeError):
        while True:
            await socket.recv()

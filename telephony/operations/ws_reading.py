"""uvicorn's WebSocket protocol, reading on while a few messages wait for the app: :class:`QueuedReadsProtocol`.

uvicorn's sans-I/O WebSocket protocol stops reading its socket after every message it hands the app, and reads
again once the app has taken it: two changes to the event loop's interest in the socket (``uv_read_stop`` and
``uv_read_start`` under uvloop, flushed to the kernel on the next turn of the loop) for every 20 ms frame of
every call, 50 a second each, to bound memory that one 300-byte frame hardly uses.

Here reading stops only once ``PAUSE_AT`` messages wait for the app (more than a quarter second of a call's
audio: the app is behind), and goes on again when the app has taken them all, as uvicorn's own protocol does.
Everything else is uvicorn's.

Upstream: uvicorn could keep reading until a few messages are queued, as its HTTP protocols buffer up to a limit.
"""

from __future__ import annotations

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

__all__ = ["PAUSE_AT", "QueuedReadsProtocol"]

PAUSE_AT = 16
"""Messages waiting for the app before the socket is no longer read (each at most the server's frame cap)."""


class QueuedReadsProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol, pausing its reads only when ``PAUSE_AT`` messages are queued."""

    def send_receive_event_to_app(self) -> None:
        paused = self.read_paused
        self.read_paused = True  # uvicorn's method pauses unless already paused: not for every message
        try:
            super().send_receive_event_to_app()
        finally:
            self.read_paused = paused
        if not paused and self.queue.qsize() >= PAUSE_AT:
            self.read_paused = True
            self.transport.pause_reading()  # uvicorn's receive() reads on once the app has taken every message

"""uvicorn's WebSocket protocol, reading on while a few messages wait for the app and cutting plain frames itself:
:class:`QueuedReadsProtocol`.

uvicorn's sans-I/O WebSocket protocol stops reading its socket after every message it hands the app, and reads
again once the app has taken it: two changes to the event loop's interest in the socket (``uv_read_stop`` and
``uv_read_start`` under uvloop, flushed to the kernel on the next turn of the loop) for every 20 ms frame of
every call, 50 a second each, to bound memory that one 300-byte frame hardly uses.

Here reading stops only once ``PAUSE_AT`` messages wait for the app (more than a quarter second of a call's
audio: the app is behind), and goes on again when the app has taken them all, as uvicorn's own protocol does.
Once the handshake is done, the protocol also cuts the client's byte stream into whole frames itself
(``ws_frames``): a plain text frame (Twilio's every message) goes to the app as uvicorn would hand it; any other
frame goes to websockets' parser whole, which keeps enforcing the protocol; once the connection is no longer
open, or a frame is over the size limit, everything goes to websockets as it comes. Everything else is uvicorn's.

Upstream: uvicorn could keep reading until a few messages are queued, as its HTTP protocols buffer up to a limit.
"""

from __future__ import annotations

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State

from .ws_frames import Cut, FrameCutter

__all__ = ["PAUSE_AT", "QueuedReadsProtocol"]

PAUSE_AT = 16
"""Messages waiting for the app before the socket is no longer read (each at most the server's frame cap)."""


class QueuedReadsProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol, pausing its reads only when ``PAUSE_AT`` messages are queued."""

    _cutter: FrameCutter | None = None
    """Cuts the client's frames once the handshake's request ended a read (else websockets parses everything)."""

    def data_received(self, data: bytes) -> None:
        cutter = self._cutter
        if cutter is None:
            initiated = self.handshake_initiated
            super().data_received(data)
            if not initiated and self.handshake_initiated:
                self._start_cutting(data)
            return
        cuts = cutter.feed(data)
        for index, cut in enumerate(cuts):
            if cut.text is not None and self._takes_messages():
                self.handle_text(Frame(Opcode.TEXT, cut.text))  # uvicorn's own hand-over (bad UTF-8: 1007)
            else:
                super().data_received(cut.raw)  # websockets' parser, given one whole frame
            if not self._takes_messages():
                self._stop_cutting(cuts[index + 1 :])
                return
        if cutter.oversized:
            self._stop_cutting([])

    def _start_cutting(self, data: bytes) -> None:
        """Cut frames from here on if websockets' parser stands at a frame boundary: the request ended this read."""
        conn = self.conn
        if data.endswith(b"\r\n\r\n") and not conn.reader.buffer and conn.max_message_size is not None:
            self._cutter = FrameCutter(conn.max_message_size)

    def _takes_messages(self) -> bool:
        """Open, not closing, and no fragmented message under way: a plain text frame is the next message."""
        conn = self.conn
        return (
            conn.state is State.OPEN and conn.parser_exc is None and conn.current_size is None and not self.close_sent
        )

    def _stop_cutting(self, uncut: list[Cut]) -> None:
        """Hand websockets what is left, as it came, and everything after it."""
        assert self._cutter is not None
        rest = b"".join(cut.raw for cut in uncut) + self._cutter.rest()
        self._cutter = None
        if rest:
            super().data_received(rest)

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

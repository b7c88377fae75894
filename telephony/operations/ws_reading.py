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

An app may also take plain text messages as they are cut, without the queue: ``direct_text(scope)`` gives it
the setter of a *taker*, a function called with each message's text. A message goes to the taker only while
nothing waits in the queue before it (order holds), and everything else (the connect, binary frames, fragments,
the close, text that is not UTF-8) still goes through ``receive()``. Per message, that saves the queue, a turn of
the app's task and the ASGI layers in between: tens of thousands of them a minute on a busy server.

Upstream: uvicorn could keep reading until a few messages are queued, as its HTTP protocols buffer up to a limit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.server import Request

from .ws_frames import Cut, FrameCutter

__all__ = ["DIRECT_TEXT", "PAUSE_AT", "QueuedReadsProtocol", "TextTaker", "direct_text"]

PAUSE_AT = 16
"""Messages waiting for the app before the socket is no longer read (each at most the server's frame cap)."""

DIRECT_TEXT = "voicebot.direct_text"
"""The ASGI scope extension holding the setter of the connection's text taker."""

TextTaker = Callable[[str], None]
"""Called with each text message handed over directly, on the event loop, inside the socket's read."""


def direct_text(scope: Mapping[str, Any]) -> Callable[[TextTaker | None], None] | None:
    """The setter of a connection's text taker (None, the default, hands everything to ``receive()`` again), or None
    where the server is not ours."""
    setter = scope.get("extensions", {}).get(DIRECT_TEXT)
    return setter if callable(setter) else None


class QueuedReadsProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol, pausing its reads only when ``PAUSE_AT`` messages are queued."""

    _cutter: FrameCutter | None = None
    """Cuts the client's frames once the handshake's request ended a read (else websockets parses everything)."""
    _taker: TextTaker | None = None

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        if not self.handshake_complete:  # a refused handshake has no scope and no app (uvicorn's own check)
            extensions: dict[str, Any] = self.scope["extensions"]  # type: ignore[assignment]
            extensions[DIRECT_TEXT] = self._set_taker

    def _set_taker(self, taker: TextTaker | None) -> None:
        self._taker = taker

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
                if not self._handed_directly(cut.text):
                    self.handle_text(Frame(Opcode.TEXT, cut.text))  # uvicorn's own hand-over (bad UTF-8: 1007)
            else:
                super().data_received(cut.raw)  # websockets' parser, given one whole frame
            if not self._takes_messages():
                self._stop_cutting(cuts[index + 1 :])
                return
        if cutter.oversized:
            self._stop_cutting([])

    def _handed_directly(self, payload: bytes) -> bool:
        """Give a text message to the app's taker, if it set one and no message waits in the queue before it."""
        taker = self._taker
        if taker is None or not self.queue.empty():
            return False
        try:
            text = payload.decode()
        except UnicodeDecodeError:
            return False  # uvicorn's hand-over closes the connection (1007)
        try:
            taker(text)
        except Exception:  # an app's bug must not stop the socket's reads: log it, and queue from now on
            self.logger.exception("Exception in the app's text taker; its messages go through receive() again")
            self._taker = None
        return True

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

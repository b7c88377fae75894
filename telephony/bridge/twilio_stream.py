"""The Twilio side of one call: the Media Streams WebSocket read, parsed, admitted and written.

Two tasks of the call run here: the *reader* (WebSocket -> parse -> the call's handlers; never waits on
anything but the socket; under ``voicebot serve`` most messages are handed to it inside the server's read, see
``ws_reading.direct_text``) and the *writer* (``Playback`` -> WebSocket: media, mark, clear). Everything about
the agent is the call's business (telephony.bridge.agent_link); this side knows only Twilio's wire format.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from starlette.websockets import WebSocket, WebSocketState

from telephony.bridge.observer import Observers
from telephony.bridge.playback import MarkState, Playback, Stamp
from telephony.bridge.stats import CallStats
from telephony.call_info import CallInfo
from telephony.config import Settings
from telephony.operations.latency import LatencySamples
from telephony.operations.logs import CallLog
from telephony.operations.ws_reading import TextTaker, direct_text
from telephony.twilio.media_streams import (
    MAX_MESSAGE_BYTES,
    Connected,
    Dtmf,
    Mark,
    Media,
    ProtocolError,
    Start,
    Stop,
    UnknownEvent,
    parse_message,
)
from telephony.twilio.parameters import DIAL
from telephony.twilio.security import CONSOLE_PARAMETER, PARAMETER_NAME, CallTokens, TokenError, console_subject

log = logging.getLogger(__name__)

DIAL_PARAMETER = DIAL
POLICY_VIOLATION = 1008


class StreamHost(Protocol):
    """What the stream needs from its call (``CallSession`` implements it)."""

    call: CallInfo | None

    @property
    def log(self) -> CallLog: ...

    def finish(self, reason: str, by: str) -> None: ...

    def count_error(self, kind: str) -> None: ...

    def caller_audio(self, media: Media) -> None:
        """A frame of the caller's audio (never waits)."""

    def keypress(self, digit: str) -> None:
        """The caller pressed a key."""


class TwilioStream:
    """One Media Streams connection. :meth:`open` once ``start`` is admitted; then the reader and the writer."""

    def __init__(
        self,
        websocket: WebSocket,
        settings: Settings,
        host: StreamHost,
        stats: CallStats,
        observers: Observers,
        latency: LatencySamples,
    ) -> None:
        self._ws = websocket
        self._settings = settings
        self._host = host
        self._stats = stats
        self._observers = observers
        self._latency = latency
        self.playback: Playback | None = None
        self.close_code = 1000
        self._handed_error: Exception | None = None
        """What a message handed over directly raised: the reader task raises it (see :meth:`read_loop`)."""

    # --- before the call -----------------------------------------------------------------------------

    async def wait_for_start(self) -> Start | None:
        """Read ``connected`` and then ``start``; anything else before ``start`` is ignored."""
        try:
            async with asyncio.timeout(self._settings.start_timeout_s):
                while True:
                    text = await self._receive_text()
                    if text is None:
                        return None
                    self._observers.received_early(text[:MAX_MESSAGE_BYTES])
                    message = self._parse(text)
                    if isinstance(message, Connected):
                        log.info("stream connected | protocol=%s version=%s", message.protocol, message.version)
                    elif isinstance(message, Start):
                        return message
                    elif isinstance(message, Stop):
                        return None
                    elif message is not None:
                        self._stats.foreign_messages += 1
                        log.debug("ignoring %s before start", type(message).__name__)
        except TimeoutError:
            log.warning("no 'start' within %.0fs: closing the socket", self._settings.start_timeout_s)
            return None

    def open(self, start: Start) -> Playback:
        """The call begins: what we send to Twilio is queued on this stream's ``Playback`` from now on."""
        if start.media_format.encoding != "audio/x-mulaw" or start.media_format.sample_rate != 8000:
            self._host.log.warning("unexpected media format %s; treating audio as μ-law 8 kHz", start.media_format)
        self.playback = Playback(
            start.stream_sid,
            mark_interval_s=self._settings.mark_interval_ms / 1000,
            pace_lead_s=self._settings.pace_lead_ms / 1000 or None,
        )
        return self.playback

    # --- the reader ----------------------------------------------------------------------------------

    async def read_loop(self) -> None:
        """Until ``stop`` or the socket's close. Under ``voicebot serve`` the server hands most messages over as it
        reads them (``ws_reading.direct_text``: no queue, no turn of this task); the rest come through ``receive()``."""
        hand_over = direct_text(self._ws.scope)
        if hand_over is not None:
            hand_over(self._taker(hand_over))
        try:
            while (text := await self._receive_text()) is not None:
                if not self._take(text):
                    return
            self._host.finish("socket closed by Twilio", by="caller")
        except asyncio.CancelledError:
            if self._handed_error is not None:
                raise self._handed_error from None  # the reader crashed, as if it had read the message itself
            raise
        finally:
            if hand_over is not None:
                hand_over(None)

    def _taker(self, hand_over: Callable[[TextTaker | None], None]) -> TextTaker:
        """What the server calls with each message it hands over: taken as the reader takes one."""
        reader = asyncio.current_task()

        def take_handed(text: str) -> None:
            try:
                if self._take(text):
                    return
            except Exception as error:  # noqa: BLE001 - handed to the reader task: its crash ends the call
                self._handed_error = error
                if reader is not None:
                    reader.cancel()
            hand_over(None)  # after stop, or a crash: what follows waits in the queue, which nobody reads any more

        return take_handed

    def _take(self, text: str) -> bool:
        """One message from Twilio; False once it was ``stop`` (nothing after it is read)."""
        self._observers.notify("twilio_received", text)
        message = self._parse(text)
        if isinstance(message, Stop):
            self._host.finish("stream stopped (caller hung up or call ended)", by="caller")
            return False
        if message is not None:
            self._dispatch(message)
        return True

    def _dispatch(self, message: Any) -> None:
        call = self._host.call
        assert call is not None and self.playback is not None
        stream_sid = getattr(message, "stream_sid", None)
        if stream_sid is not None and stream_sid != call.stream_sid and not isinstance(message, UnknownEvent):
            self._stats.foreign_messages += 1
            self.note_bad(f"{type(message).__name__} for stream {stream_sid!r}, not this call's")
            return
        if isinstance(message, Media):
            if message.track in ("inbound", "inbound_track"):
                self._host.caller_audio(message)
        elif isinstance(message, Mark):
            self._on_mark(message.name)
        elif isinstance(message, Dtmf):
            self._host.log.info("caller pressed %s", message.digit)
            self._host.keypress(message.digit)
        elif isinstance(message, UnknownEvent):
            self._host.log.info("ignoring unknown event %r", message.event)
        elif isinstance(message, (Start, Connected)):
            self.note_bad(f"unexpected second '{type(message).__name__.lower()}'")

    def _on_mark(self, name: str) -> None:
        assert self.playback is not None
        record = self.playback.on_echo(name)
        if record is None:
            self._host.log.debug("echo of unknown mark %r", name)
            return
        if record.final and record.utterance and record.state is MarkState.PLAYED:
            utterance = self.playback.utterances[record.utterance]
            self._host.log.info("bot utterance heard in full (%.2fs)", utterance.heard_seconds)

    async def _receive_text(self) -> str | None:
        """Next text frame, or None once the socket is closed. Binary frames are not protocol."""
        while True:
            try:
                message = await self._ws.receive()
            except (RuntimeError, OSError):
                return None
            if message["type"] == "websocket.disconnect":
                return None
            text = message.get("text")
            if text is not None:
                return str(text)
            self.note_bad("binary frame (Media Streams uses text frames only)")

    def _parse(self, text: str) -> Any:
        try:
            return parse_message(text, self._settings.max_message_bytes)
        except ProtocolError as error:
            self.note_bad(str(error))
            return None

    def note_bad(self, why: str) -> None:
        """Log malformed input, but never let a flood of it flood the log."""
        self._stats.bad_messages += 1
        count = self._stats.bad_messages
        if count <= 5 or count % 100 == 0:
            self._host.log.warning("ignoring malformed message #%d: %s", count, why)
        if count >= self._settings.max_bad_messages and self._host.call is not None:
            self._host.log.warning("closing the stream: %d malformed messages", count)
            self.close_code = POLICY_VIOLATION
            self._host.count_error("malformed_flood")
            self._host.finish(f"too many malformed messages ({count})", by="server")

    # --- the writer ----------------------------------------------------------------------------------

    async def write_loop(self) -> None:
        assert self.playback is not None
        while True:
            message = await self.playback.next_message()
            try:
                await self._ws.send_text(message.text)
            except Exception as error:  # noqa: BLE001 - any send failure means the socket is gone
                self._host.log.info("socket closed while sending: %r", error)
                self._host.finish("socket closed while sending", by="caller")
                return
            if message.stamps:
                self._record_latency(message.stamps)
            self._observers.notify("twilio_sent", message.text)

    def _record_latency(self, stamps: tuple[Stamp, ...]) -> None:
        now = time.monotonic()
        for measure, since in stamps:
            self._latency.add(measure, now - since)
            if measure == "turn":
                self._stats.turn_latencies.append(now - since)
                self._observers.notify("response_latency", now - since)

    async def close(self) -> None:
        if self._ws.application_state is WebSocketState.CONNECTED:
            try:
                await self._ws.close(code=self.close_code)
            except Exception:  # noqa: BLE001 - the peer may already be gone
                pass


def admit(start: Start, tokens: CallTokens | None, console_tokens: CallTokens | None) -> bool:
    """Check the call token minted by ``/twiml``: a replayed or forged stream is closed here."""
    params = start.custom_parameters
    if CONSOLE_PARAMETER in params:
        return _admit_console(start, console_tokens)
    if tokens is None:
        return True
    dial_id = params.get(DIAL_PARAMETER)
    subject = f"dial:{dial_id}" if dial_id else start.call_sid
    try:
        tokens.verify(params.get(PARAMETER_NAME), subject)
    except TokenError as error:
        log.warning("call=%s | stream refused: call token %s", start.call_sid, error.reason)
        return False
    return True


def _admit_console(start: Start, console_tokens: CallTokens | None) -> bool:
    """A call from the browser console: its token is a console token, never a Twilio call token."""
    if console_tokens is None:
        log.warning("call=%s | stream refused: a console call on a stream the console did not open", start.call_sid)
        return False
    try:
        console_tokens.verify(start.custom_parameters.get(PARAMETER_NAME), console_subject(start.call_sid))
    except TokenError as error:
        log.warning("call=%s | stream refused: console token %s", start.call_sid, error.reason)
        return False
    return True


__all__ = ["DIAL_PARAMETER", "StreamHost", "TwilioStream", "admit"]

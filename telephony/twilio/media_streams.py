"""Twilio Media Streams wire format: parse what Twilio sends, build what we may send.

Kept apart from the transport (the WebSocket) so it can be tested and reused on its own.
Twilio encodes every scalar as a JSON string (``"sequenceNumber": "2"``) except
``mediaFormat.sampleRate`` and ``mediaFormat.channels``; we accept either form, because a
parser that insists on one breaks the day a proxy or a recording normalises them.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from telephony.call_info import CallInfo
from telephony.codec import FRAME_BYTES
from telephony.twilio.parameters import public_only

MAX_MESSAGE_BYTES = 64 * 1024
"""Twilio's own messages are well under 1 KiB; anything this large is not from Twilio."""


class ProtocolError(ValueError):
    """A message that is not valid Media Streams protocol (the text says what is wrong)."""


@dataclass(frozen=True, slots=True)
class MediaFormat:
    encoding: str = "audio/x-mulaw"
    sample_rate: int = 8000
    channels: int = 1


@dataclass(frozen=True, slots=True)
class Connected:
    """First message on the socket; carries no stream SID."""

    protocol: str
    version: str


@dataclass(frozen=True, slots=True)
class Start:
    stream_sid: str
    sequence_number: int
    account_sid: str
    call_sid: str
    tracks: tuple[str, ...]
    custom_parameters: dict[str, str]
    media_format: MediaFormat

    def call_info(self) -> CallInfo:
        """What the agent factory learns: internal ``voicebot*`` parameters (call tokens) are not passed on."""
        params = public_only(self.custom_parameters)
        return CallInfo(
            call_sid=self.call_sid,
            stream_sid=self.stream_sid,
            account_sid=self.account_sid,
            from_number=params.get("From", ""),
            to_number=params.get("To", ""),
            parameters=params,
        )


@dataclass(frozen=True, slots=True)
class Media:
    stream_sid: str
    sequence_number: int
    track: str
    chunk: int
    timestamp: int
    payload: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class Mark:
    """Echo of a mark we sent: the audio queued before it has played (or was cleared)."""

    stream_sid: str
    sequence_number: int
    name: str


@dataclass(frozen=True, slots=True)
class Dtmf:
    stream_sid: str
    sequence_number: int
    track: str
    digit: str


@dataclass(frozen=True, slots=True)
class Stop:
    stream_sid: str
    sequence_number: int
    account_sid: str
    call_sid: str


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event this code does not know; logged and ignored so new Twilio events never break calls."""

    event: str
    stream_sid: str | None


TwilioMessage = Connected | Start | Media | Mark | Dtmf | Stop | UnknownEvent


def parse_message(text: str | bytes, max_bytes: int = MAX_MESSAGE_BYTES) -> TwilioMessage:
    """Parse one text frame from Twilio; raise ProtocolError with a reason on anything invalid."""
    if len(text) > max_bytes:
        raise ProtocolError(f"message of {len(text)} bytes exceeds the {max_bytes}-byte cap")
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as error:
        raise ProtocolError(f"not JSON: {error}") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"expected a JSON object, got {type(data).__name__}")
    event = data.get("event")
    if not isinstance(event, str):
        raise ProtocolError("missing or non-string 'event'")
    parser = _PARSERS.get(event)
    if parser is None:
        sid = data.get("streamSid")
        return UnknownEvent(event=event[:64], stream_sid=sid if isinstance(sid, str) else None)
    return parser(data)


def media_message(stream_sid: str, payload: bytes) -> str:
    """An outbound ``media`` message: raw μ-law 8 kHz, one or more whole 160-byte frames, no other fields."""
    encoded = base64.b64encode(payload).decode("ascii")
    return f'{{"event":"media","streamSid":{json.dumps(stream_sid)},"media":{{"payload":"{encoded}"}}}}'


def media_frames(message: Any) -> int:
    """How many 20 ms frames a parsed outbound ``media`` message carries (0 for anything else).

    The bridge joins frames queued back to back into one message, so whoever counts audio counts this,
    not messages. Read from the base64 length, without decoding.
    """
    if not isinstance(message, dict) or message.get("event") != "media":
        return 0
    media = message.get("media")
    payload = media.get("payload") if isinstance(media, dict) else None
    if not isinstance(payload, str):
        return 0
    size = len(payload) // 4 * 3 - (len(payload) - len(payload.rstrip("=")))
    return max(size, 0) // FRAME_BYTES


def frames_of(message: Any) -> list[bytes]:
    """A parsed ``media`` message's audio, 160-byte frame by frame (see :func:`split_frames`)."""
    return split_frames(base64.b64decode(message["media"]["payload"]))


def split_frames(audio: bytes) -> list[bytes]:
    """μ-law audio as 160-byte (20 ms) frames, a short tail as its own last piece."""
    return [audio[offset : offset + FRAME_BYTES] for offset in range(0, len(audio), FRAME_BYTES)]


def mark_message(stream_sid: str, name: str) -> str:
    """An outbound ``mark``: Twilio echoes it once the audio sent before it has played."""
    return json.dumps({"event": "mark", "streamSid": stream_sid, "mark": {"name": name}}, separators=(",", ":"))


def clear_message(stream_sid: str) -> str:
    """An outbound ``clear``: empties Twilio's playback buffer and echoes every pending mark."""
    return json.dumps({"event": "clear", "streamSid": stream_sid}, separators=(",", ":"))


# --- field readers -------------------------------------------------------------------------------


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise ProtocolError(f"'{data.get('event')}' message has no '{key}' object")
    return value


def _text(data: dict[str, Any], key: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        if value is None:
            raise ProtocolError(f"missing '{key}'")
        raise ProtocolError(f"'{key}' must be a string, got {type(value).__name__}")
    return value


def _number(data: dict[str, Any], key: str, default: int | None = None) -> int:
    """Twilio sends numbers as strings; accept real integers too, reject anything else."""
    value = data.get(key, default)
    if isinstance(value, bool) or value is None:
        raise ProtocolError(f"missing or invalid '{key}'")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise ProtocolError(f"'{key}' must be an integer string, got {value!r:.40}")


def _parameters(start: dict[str, Any]) -> dict[str, str]:
    """``customParameters`` may be absent or ``{}``; non-string values are stringified, not fatal."""
    raw = start.get("customParameters")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ProtocolError("'customParameters' must be an object")
    return {str(key): value if isinstance(value, str) else json.dumps(value) for key, value in raw.items()}


def _media_format(start: dict[str, Any]) -> MediaFormat:
    raw = start.get("mediaFormat")
    if raw is None:
        return MediaFormat()
    if not isinstance(raw, dict):
        raise ProtocolError("'mediaFormat' must be an object")
    return MediaFormat(
        encoding=_text(raw, "encoding", "audio/x-mulaw"),
        sample_rate=_number(raw, "sampleRate", 8000),
        channels=_number(raw, "channels", 1),
    )


# --- per-event parsers ---------------------------------------------------------------------------


def _parse_connected(data: dict[str, Any]) -> Connected:
    return Connected(protocol=_text(data, "protocol", ""), version=_text(data, "version", ""))


def _parse_start(data: dict[str, Any]) -> Start:
    start = _section(data, "start")
    tracks = start.get("tracks", ["inbound"])
    if not isinstance(tracks, list) or not all(isinstance(track, str) for track in tracks):
        raise ProtocolError("'tracks' must be a list of strings")
    return Start(
        stream_sid=_text(data, "streamSid", start.get("streamSid")),
        sequence_number=_number(data, "sequenceNumber", 1),
        account_sid=_text(start, "accountSid", ""),
        call_sid=_text(start, "callSid"),
        tracks=tuple(tracks),
        custom_parameters=_parameters(start),
        media_format=_media_format(start),
    )


def _parse_media(data: dict[str, Any]) -> Media:
    media = _section(data, "media")
    payload = _text(media, "payload")
    try:
        audio = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ProtocolError("media payload is not valid base64") from None
    return Media(
        stream_sid=_text(data, "streamSid"),
        sequence_number=_number(data, "sequenceNumber", 0),
        track=_text(media, "track", "inbound"),
        chunk=_number(media, "chunk", 0),
        timestamp=_number(media, "timestamp", 0),
        payload=audio,
    )


def _parse_mark(data: dict[str, Any]) -> Mark:
    mark = _section(data, "mark")
    return Mark(
        stream_sid=_text(data, "streamSid"),
        sequence_number=_number(data, "sequenceNumber", 0),
        name=_text(mark, "name"),
    )


def _parse_dtmf(data: dict[str, Any]) -> Dtmf:
    dtmf = _section(data, "dtmf")
    return Dtmf(
        stream_sid=_text(data, "streamSid"),
        sequence_number=_number(data, "sequenceNumber", 0),
        track=_text(dtmf, "track", "inbound_track"),
        digit=_text(dtmf, "digit"),
    )


def _parse_stop(data: dict[str, Any]) -> Stop:
    found = data.get("stop")
    stop: dict[str, Any] = found if isinstance(found, dict) else {}
    return Stop(
        stream_sid=_text(data, "streamSid"),
        sequence_number=_number(data, "sequenceNumber", 0),
        account_sid=_text(stop, "accountSid", ""),
        call_sid=_text(stop, "callSid", ""),
    )


_PARSERS: dict[str, Callable[[dict[str, Any]], TwilioMessage]] = {
    "connected": _parse_connected,
    "start": _parse_start,
    "media": _parse_media,
    "mark": _parse_mark,
    "dtmf": _parse_dtmf,
    "stop": _parse_stop,
}

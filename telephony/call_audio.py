"""Both sides of a call on one timeline, as a person would have heard them: ``caller.wav``, ``bot.wav``, ``call.wav``.

- Caller audio is placed by Twilio's media ``timestamp`` (milliseconds of stream audio, immune to network
  jitter), shifted onto the recording's clock by the least-delayed frame; gaps stay silent.
- Bot audio is what the caller *heard*, modelled on Twilio's player: a frame starts at the later of when it
  was sent and when the previous frame ended; ``clear`` cuts the frame playing and drops those not started.

All files are 8 kHz, 16-bit PCM (``call.wav`` is stereo: caller left, bot right), written with ``wave``.
"""

from __future__ import annotations

import base64
import binascii
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .codec import FRAME_BYTES, TWILIO_RATE, ulaw_to_pcm16

FRAME_S = FRAME_BYTES / TWILIO_RATE
CALLER_WAV, BOT_WAV, CALL_WAV = "caller.wav", "bot.wav", "call.wav"


@dataclass(slots=True)
class Played:
    """One outbound frame as the caller heard it: from ``start`` for ``len(ulaw)`` samples."""

    start: float
    ulaw: bytes
    tag: int | None = None
    """Who said it (a turn number), for the transcript."""


@dataclass
class CallAudio:
    """Collects audio from recording records (``twilio_in`` / ``twilio_out``) and renders the WAV files."""

    caller: list[tuple[float, int | None, bytes]] = field(default_factory=list)
    """(arrival time, Twilio timestamp in ms or None, μ-law) per inbound frame."""
    bot: list[Played] = field(default_factory=list)
    _play_end: float = 0.0

    def add(self, record: dict[str, Any], tag: int | None = None) -> None:
        """Take one record; ``tag`` labels the bot frame it carries (if any)."""
        message = record.get("message")
        if not isinstance(message, dict) or message.get("event") not in ("media", "clear"):
            return
        at = float(record.get("t", 0.0))
        if record.get("kind") == "twilio_in" and message["event"] == "media":
            self._add_caller(at, message.get("media"))
        elif record.get("kind") == "twilio_out":
            if message["event"] == "media":
                self._add_bot(at, message.get("media"), tag)
            else:
                self._clear(at)

    def _add_caller(self, at: float, media: Any) -> None:
        payload = _payload(media)
        if payload is None:
            return
        track = media.get("track", "inbound")
        if track not in ("inbound", "inbound_track"):
            return
        try:
            stamp: int | None = int(media.get("timestamp"))
        except (TypeError, ValueError):
            stamp = None
        self.caller.append((at, stamp, payload))

    def _add_bot(self, at: float, media: Any, tag: int | None) -> None:
        payload = _payload(media)
        if payload is None:
            return
        start = max(at, self._play_end)
        self.bot.append(Played(start, payload, tag))
        self._play_end = start + len(payload) / TWILIO_RATE

    def _clear(self, at: float) -> None:
        """Twilio's ``clear``: what has not started is dropped, what is playing stops now."""
        while self.bot and self.bot[-1].start >= at:
            self.bot.pop()
        if self.bot:
            last = self.bot[-1]
            heard = round((at - last.start) * TWILIO_RATE)
            if heard < len(last.ulaw):
                last.ulaw = last.ulaw[: max(heard, 0)]
        self._play_end = at

    # --- rendering -------------------------------------------------------------------------------

    def caller_track(self) -> np.ndarray:
        """Caller PCM16 at 8 kHz; a frame lands at its Twilio timestamp (arrival time if it has none)."""
        stamped = [(at, stamp) for at, stamp, _ in self.caller if stamp is not None]
        offset = min((at - stamp / 1000 for at, stamp in stamped), default=0.0)
        placed = [(stamp / 1000 + offset if stamp is not None else at, ulaw) for at, stamp, ulaw in self.caller]
        return _track(placed)

    def bot_track(self) -> np.ndarray:
        return _track([(played.start, played.ulaw) for played in self.bot])

    def write(self, folder: Path) -> list[Path]:
        """Write ``caller.wav``, ``bot.wav`` and ``call.wav`` (same length, same start) into ``folder``."""
        caller, bot = self.caller_track(), self.bot_track()
        length = max(len(caller), len(bot))
        caller, bot = _pad(caller, length), _pad(bot, length)
        paths = [folder / CALLER_WAV, folder / BOT_WAV, folder / CALL_WAV]
        write_wav(paths[0], caller)
        write_wav(paths[1], bot)
        write_wav(paths[2], np.column_stack((caller, bot)).ravel(), channels=2)
        return paths


def _payload(media: Any) -> bytes | None:
    if not isinstance(media, dict) or not isinstance(media.get("payload"), str):
        return None
    try:
        return base64.b64decode(media["payload"], validate=True)
    except (binascii.Error, ValueError):
        return None


def _track(placed: list[tuple[float, bytes]]) -> np.ndarray:
    """Lay μ-law pieces on a silent 8 kHz track at their start times (negative times clip to 0)."""
    if not placed:
        return np.zeros(0, dtype="<i2")
    starts = [max(0, round(at * TWILIO_RATE)) for at, _ in placed]
    length = max(start + len(ulaw) for start, (_, ulaw) in zip(starts, placed, strict=True))
    track = np.zeros(length, dtype="<i2")
    for start, (_, ulaw) in zip(starts, placed, strict=True):
        track[start : start + len(ulaw)] = np.frombuffer(ulaw_to_pcm16(ulaw), dtype="<i2")
    return track


def _pad(samples: np.ndarray, length: int) -> np.ndarray:
    return np.pad(samples, (0, length - len(samples))) if len(samples) < length else samples


def write_wav(path: Path, samples: np.ndarray, channels: int = 1, rate: int = TWILIO_RATE) -> None:
    """A plain PCM16 WAV any player opens (``samples`` interleaved when stereo)."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(samples.astype("<i2").tobytes())

"""Both sides of a call on one timeline, as a person would have heard them: ``caller.wav``, ``bot.wav``, ``call.wav``.

- Caller audio is placed by Twilio's media ``timestamp`` (milliseconds of stream audio, immune to network
  jitter), shifted onto the recording's clock by the least-delayed frame; gaps stay silent.
- Bot audio is what the caller *heard*, modelled on Twilio's player: a frame starts at the later of when it
  was sent and when the previous frame ended; ``clear`` cuts the frame playing and drops those not started.

Each side is a μ-law track in an unnamed temporary file (8 kB per second of call), written at its sample
position as records arrive, so a long call costs disk, not memory; the WAVs are rendered a minute at a time.
All files are 8 kHz, 16-bit PCM (``call.wav`` is stereo: caller left, bot right), written with ``wave``.
"""

from __future__ import annotations

import base64
import binascii
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from telephony.codec import TWILIO_RATE, ULAW_SILENCE, ulaw_to_pcm16

CALLER_WAV, BOT_WAV, CALL_WAV = "caller.wav", "bot.wav", "call.wav"
MAX_GAP_S = 60.0
"""A caller frame stamped this far past the audio so far is not Twilio's (its timestamps run on with the
stream): it is left out, so a forged timestamp cannot make the track hours long."""
RENDER_SAMPLES = 60 * TWILIO_RATE
"""WAVs are written a minute at a time (and long silences filled a minute at a time)."""


@dataclass(slots=True)
class Played:
    """A stretch of bot audio the caller heard without a break: from ``start`` (s) for ``samples``."""

    start: float
    samples: int
    tag: int | None = None
    """Who said it (a turn number), for the transcript."""

    @property
    def end(self) -> float:
        return self.start + self.samples / TWILIO_RATE


class Track:
    """μ-law audio on disk at sample positions; anything never written is silence."""

    def __init__(self, folder: Path | None = None) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile(dir=folder, prefix=".track-")
        self.length = 0

    def write(self, position: int, ulaw: bytes) -> None:
        if position > self.length:
            self._fill(self.length, position)
        self._file.seek(position)
        self._file.write(ulaw)
        self.length = max(self.length, position + len(ulaw))

    def truncate(self, position: int) -> None:
        """Forget everything from ``position`` on."""
        if position < self.length:
            self._file.truncate(max(position, 0))
            self.length = max(position, 0)

    def read(self, position: int, count: int) -> bytes:
        """``count`` samples from ``position`` (negative or past the end: silence)."""
        before = min(max(-position, 0), count)
        self._file.seek(max(position, 0))
        data = self._file.read(max(count - before, 0))
        return _silence(before) + data + _silence(count - before - len(data))

    def close(self) -> None:
        self._file.close()

    def _fill(self, start: int, end: int) -> None:
        self._file.seek(start)
        while start < end:
            count = min(end - start, RENDER_SAMPLES)
            self._file.write(_silence(count))
            start += count


class CallAudio:
    """Collects audio from recording records (``twilio_in`` / ``twilio_out``) and renders the WAV files.

    ``folder`` holds the temporary tracks (the system's temporary directory if None); :meth:`close`
    deletes them.
    """

    def __init__(self, folder: Path | None = None) -> None:
        self._caller = Track(folder)
        """Caller audio on Twilio's clock: a frame stamped ``t`` ms sits at sample ``8 * t``."""
        self._bot = Track(folder)
        self.bot: list[Played] = []
        self._offset: float | None = None
        """Least delay seen: arrival time minus Twilio timestamp, over all stamped caller frames."""
        self._play_end = 0.0

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
        if payload is None or media.get("track", "inbound") not in ("inbound", "inbound_track"):
            return
        try:
            stamp_s: float | None = int(media.get("timestamp")) / 1000
        except (TypeError, ValueError):
            stamp_s = None
        if stamp_s is None:
            # No timestamp (not Twilio): place it by arrival, on the clock as far as it is known.
            stamp_s = at - (self._offset or 0.0)
        elif 0 <= stamp_s <= self._caller.length / TWILIO_RATE + MAX_GAP_S:
            self._offset = at - stamp_s if self._offset is None else min(self._offset, at - stamp_s)
        else:
            return
        if stamp_s >= 0:
            self._caller.write(round(stamp_s * TWILIO_RATE), payload)

    def _add_bot(self, at: float, media: Any, tag: int | None) -> None:
        payload = _payload(media)
        if payload is None:
            return
        start = max(at, self._play_end)
        self._bot.write(round(start * TWILIO_RATE), payload)
        last = self.bot[-1] if self.bot else None
        if last is not None and last.tag == tag and abs(last.end - start) < 0.5 / TWILIO_RATE:
            last.samples += len(payload)
        else:
            self.bot.append(Played(start, len(payload), tag))
        self._play_end = start + len(payload) / TWILIO_RATE

    def _clear(self, at: float) -> None:
        """Twilio's ``clear``: what has not started is dropped, what is playing stops now."""
        while self.bot and self.bot[-1].start >= at:
            self.bot.pop()
        if self.bot:
            last = self.bot[-1]
            last.samples = min(last.samples, max(round((at - last.start) * TWILIO_RATE), 0))
        self._bot.truncate(round(at * TWILIO_RATE))
        self._play_end = at

    def caller_time(self, stream_s: float) -> float:
        """Where a moment of the stream's clock (Twilio's media ``timestamp``, in seconds) is in the WAVs."""
        return stream_s + (self._offset or 0.0)

    # --- rendering -------------------------------------------------------------------------------

    @property
    def _caller_shift(self) -> int:
        """Samples to move the caller track by so it lands on the recording's clock."""
        return round((self._offset or 0.0) * TWILIO_RATE)

    @property
    def length(self) -> int:
        """Samples in each WAV: until the last audio of either side."""
        return max(self._caller.length + self._caller_shift, self._bot.length, 0)

    def caller_track(self) -> np.ndarray:
        """Caller PCM16 at 8 kHz on the recording's clock (whole call in memory: for tests and tools)."""
        return _pcm(self._caller.read(-self._caller_shift, max(self._caller.length + self._caller_shift, 0)))

    def bot_track(self) -> np.ndarray:
        return _pcm(self._bot.read(0, self._bot.length))

    def write(self, folder: Path) -> list[Path]:
        """Write ``caller.wav``, ``bot.wav`` and ``call.wav`` (same length, same start) into ``folder``."""
        paths = [folder / CALLER_WAV, folder / BOT_WAV, folder / CALL_WAV]
        with _wav(paths[0], 1) as caller_wav, _wav(paths[1], 1) as bot_wav, _wav(paths[2], 2) as call_wav:
            for position in range(0, self.length, RENDER_SAMPLES):
                count = min(RENDER_SAMPLES, self.length - position)
                caller = _pcm(self._caller.read(position - self._caller_shift, count))
                bot = _pcm(self._bot.read(position, count))
                caller_wav.writeframes(caller.tobytes())
                bot_wav.writeframes(bot.tobytes())
                call_wav.writeframes(np.column_stack((caller, bot)).ravel().tobytes())
        return paths

    def close(self) -> None:
        """Delete the temporary tracks."""
        self._caller.close()
        self._bot.close()


def _payload(media: Any) -> bytes | None:
    if not isinstance(media, dict) or not isinstance(media.get("payload"), str):
        return None
    try:
        return base64.b64decode(media["payload"], validate=True)
    except (binascii.Error, ValueError):
        return None


def _silence(count: int) -> bytes:
    return bytes([ULAW_SILENCE]) * max(count, 0)


def _pcm(ulaw: bytes) -> np.ndarray:
    return np.frombuffer(ulaw_to_pcm16(ulaw), dtype="<i2")


def _wav(path: Path, channels: int) -> wave.Wave_write:
    out = wave.open(str(path), "wb")
    out.setnchannels(channels)
    out.setsampwidth(2)
    out.setframerate(TWILIO_RATE)
    return out

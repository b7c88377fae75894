"""The soft sound a caller hears while the bot works (a slow tool, a silent model being rescued), instead of silence.

It plays a little ahead of the caller, in pieces, so that it can stop the moment the agent speaks again: what is
still queued at Twilio then goes with one ``clear``. It never plays over the caller or over the bot.
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path

from telephony.bridge.playback import Playback
from telephony.codec import FRAME_BYTES, TWILIO_RATE, load_sound_file

SHIPPED = Path(__file__).parent / "assets" / "hold.ulaw"
AHEAD_S = 0.6
"""Hold sound kept queued ahead of the caller: enough to ride over the feeder's wake-ups, little to clear."""
PIECE_S = 0.4
"""Hold sound queued at a time."""


@functools.cache
def load_hold_sound(setting: str) -> bytes | None:
    """``VOICEBOT_HOLD_SOUND`` as μ-law frames: empty for the shipped sound, ``off`` for none. Read once per process
    (the setting was checked at start-up; sessions must not touch the disk on the event loop)."""
    if setting == "off":
        return None
    return load_sound_file(setting or SHIPPED)


class HoldSound:
    """One call's hold sound. ``feed`` tops it up while it plays; ``stop`` ends it (a clear if any is unheard)."""

    def __init__(self, clip: bytes | None) -> None:
        self._clip = clip
        self._offset = 0
        self._names = itertools.count(1)
        self._utterance: str | None = None
        self.started = 0
        """Times it has started this call."""

    @property
    def playing(self) -> bool:
        return self._utterance is not None

    def start(self, playback: Playback) -> bool:
        """Start it (from the top of the clip); False when there is no sound or it already plays."""
        if self._clip is None or self._utterance is not None:
            return False
        self._utterance, self._offset = f"hold-{next(self._names)}", 0
        self.started += 1
        self.feed(playback)
        return True

    def feed(self, playback: Playback) -> None:
        """Keep about ``AHEAD_S`` of it queued, looping the clip."""
        if self._clip is None or self._utterance is None:
            return
        piece = int(PIECE_S * TWILIO_RATE) // FRAME_BYTES * FRAME_BYTES
        while playback.unheard_seconds < AHEAD_S:
            chunk = self._clip[self._offset : self._offset + piece]
            self._offset = (self._offset + len(chunk)) % len(self._clip)
            playback.play(chunk, utterance=self._utterance)

    def stop(self, playback: Playback | None) -> bool:
        """Stop it; what the caller has not heard of it is cleared. True if it was playing."""
        if self._utterance is None:
            return False
        self._utterance = None
        if playback is not None and playback.unheard_seconds > 0:
            playback.interrupt()
        return True


__all__ = ["SHIPPED", "HoldSound", "load_hold_sound"]

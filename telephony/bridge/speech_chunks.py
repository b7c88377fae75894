"""How much caller audio each ``send()`` to the model carries, following the caller's speech: :class:`SpeechChunks`.

A real model client's cost follows the number of events it sends, not their size (Nova's: JSON, base64, a
SigV4 signature and an event-stream frame per event, whatever it holds). Most of a call's caller audio is
silence, and a model needs it only to keep hearing real time and to time the end of a turn, so:

- in long silence (nothing voiced for ``window_s``), large chunks (``silence_bytes``, e.g. 200 ms): the
  buffer fills at real time, so they leave at real-time pace;
- at the caller's onset, everything queued leaves at once (``__call__`` answers 0 once): speech, and a
  barge-in, reaches the model no later than with small chunks;
- from the onset to ``window_s`` after the last voiced frame (Nova's end-pointing waits 1.5-2 s of pause),
  today's small chunks: ``speaking_bytes`` while the caller hears the bot, else ``quiet_bytes``;
- once the bot answers, the model has end-pointed what came before: while it answers, and for that speech
  after it, the window after the last voiced frame is only ``bot_window_s`` (a short hangover); then silence
  goes in large chunks again and the caller's next onset (a barge-in) flushes at once, as from any silence. A
  caller listening to a long answer costs 5 sends a second, not 25.

"Voiced" is the bridge's own per-frame level (``caller_speech.CallerSpeech``), already computed for every frame.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["SpeechChunks"]


class SpeechChunks:
    """Minimum bytes per send, asked by ``InboundBuffer.get`` at each new piece of caller audio."""

    def __init__(
        self,
        *,
        quiet_bytes: int,
        speaking_bytes: int,
        silence_bytes: int,
        window_s: float,
        bot_speaking: Callable[[], bool],
        bot_window_s: float | None = None,
        last_voiced_at: Callable[[], float | None],
        clock: Callable[[], float] = time.monotonic,
        most_bytes: int = 4000,
    ) -> None:
        self.quiet_bytes = quiet_bytes
        self.speaking_bytes = speaking_bytes
        self.silence_bytes = silence_bytes
        self.window_s = window_s
        self.bot_window_s = window_s if bot_window_s is None else bot_window_s
        """The window while the bot is answering or still heard (None: the same as ``window_s``)."""
        self.most_bytes = most_bytes
        """Cap per send (500 ms of μ-law): Nova refuses an ``audioInput`` of more than a second."""
        self._bot_speaking = bot_speaking
        self._last_voiced_at = last_voiced_at
        self._clock = clock
        self._in_silence = True
        self._bot_was_speaking = False
        self._answer_began: float | None = None
        """When the bot's latest answer began: speech before it has been end-pointed by the model."""
        self.onset_flush = False
        """The latest answer was the onset's flush (0): the chunk it releases ends with fresh speech."""

    def __call__(self) -> int:
        voiced_at, now, bot = self._last_voiced_at(), self._clock(), self._bot_speaking()
        if bot and not self._bot_was_speaking:
            self._answer_began = now
        self._bot_was_speaking = bot
        answered = voiced_at is not None and self._answer_began is not None and voiced_at <= self._answer_began
        window = self.bot_window_s if bot or answered else self.window_s
        around_speech = voiced_at is not None and now - voiced_at < window
        self.onset_flush = around_speech and self._in_silence
        self._in_silence = not around_speech
        if self.onset_flush:
            return 0
        if not around_speech:
            return self.silence_bytes
        return self.speaking_bytes if bot else self.quiet_bytes

    @property
    def around_speech(self) -> bool:
        """Between the caller's onset and the end of the end-pointing window after their last voiced frame."""
        return not self._in_silence

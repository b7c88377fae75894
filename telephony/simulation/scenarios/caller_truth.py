"""What the simulated caller really did: when it spoke, from its own clean audio, before any bad line.

The bridge's recording holds what arrived (noisy, with packets missing); the caller's ``said`` frames hold what it
meant to say, with the media ``timestamp`` each frame carried. Stretches of speech in them are the truth a false
barge-in is judged against, and, for a caller replaying a recording, the moments it talked over the bot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from telephony.codec import SPEECH_LEVEL_DBFS, ulaw_level_dbfs
from telephony.simulation.caller.simulated_caller import Heard

__all__ = ["SpeechSpan", "speech_spans", "talking_over_the_bot"]

JOIN_MS = 500
"""Speech this close together is one stretch (a pause between words, not between turns)."""
BOT_AUDIBLE_S = 0.05
"""The bot counts as audible at a moment if the caller's ear played one of its frames this close to it."""


@dataclass(frozen=True)
class SpeechSpan:
    """One stretch of the caller's speech: media timestamps (ms) of its first and last frame, and caller time."""

    start_ms: int
    end_ms: int
    at_s: float
    """When its first frame was sent, in seconds of the caller's clock."""


def speech_spans(said: Sequence[Heard]) -> list[SpeechSpan]:
    """The stretches of speech in what the caller sent (frames without a timestamp are skipped)."""
    spans: list[SpeechSpan] = []
    for frame in said:
        if frame.timestamp is None or ulaw_level_dbfs(frame.payload) <= SPEECH_LEVEL_DBFS:
            continue
        if spans and frame.timestamp - spans[-1].end_ms <= JOIN_MS:
            spans[-1] = SpeechSpan(spans[-1].start_ms, frame.timestamp, spans[-1].at_s)
        else:
            spans.append(SpeechSpan(frame.timestamp, frame.timestamp, frame.at))
    return spans


def talking_over_the_bot(spans: Sequence[SpeechSpan], heard: Sequence[Heard]) -> list[SpeechSpan]:
    """The stretches that began while the caller was hearing the bot (barge-in attempts, whoever scripted them)."""
    return [span for span in spans if any(abs(frame.at - span.at_s) <= BOT_AUDIBLE_S for frame in heard)]

"""One call's counters: the call summary line and the metrics read them once the call ends."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class CallStats:
    """Counters for the call summary line and the metrics."""

    started_at: float = field(default_factory=time.monotonic)
    frames_in: int = 0
    turns: int = 0
    turn_latencies: list[float] = field(default_factory=list)
    """Seconds from the end of the caller's speech (as the bridge heard it) to the bot's first audio sent."""
    barge_ins: int = 0
    early_barge_ins: int = 0
    """Barge-ins cleared on the model's first sign of caller speech, before (or without) its own barge-in."""
    bad_messages: int = 0
    foreign_messages: int = 0
    agent_audio_dropped: int = 0
    end_reason: str = ""
    ended_by: str = ""
    ended_at: float | None = None

    @property
    def duration(self) -> float:
        return (self.ended_at or time.monotonic()) - self.started_at


__all__ = ["CallStats"]

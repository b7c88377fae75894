"""What a simulated caller experienced: turns, response latencies, barge-ins, who hung up.

Speech is found by energy: a 20 ms frame is speech when its level is above -45 dBFS, and speech with
gaps shorter than 0.5 s is one turn. The **response latency** of a caller turn is the time from the end
of the caller's speech (its last speech frame sent) to the first bot speech the caller *heard* (the
player started it), counted only when the bot starts before the caller speaks again. All times are call
time: wall-clock seconds × the replay speed.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import numpy as np

from telephony.codec import SPEECH_LEVEL_DBFS, ulaw_to_pcm16
from telephony.simulation.caller.simulated_caller import FRAME_SECONDS, Heard, SimulatedCaller

TURN_GAP_S = 0.5


def is_speech(ulaw: bytes, threshold_dbfs: float = SPEECH_LEVEL_DBFS) -> bool:
    samples = np.frombuffer(ulaw_to_pcm16(ulaw), dtype="<i2").astype(np.float64)
    if not len(samples):
        return False
    rms = float(np.sqrt(np.mean(samples**2)))
    return 20 * np.log10(max(rms, 1e-9) / 32768) > threshold_dbfs


@dataclass
class SpeechTracker:
    """Turns of one side, grown incrementally from that side's frames (call-time start and end)."""

    speed: float = 1.0
    turns: list[list[float]] = field(default_factory=list)
    _seen: int = 0

    def update(self, frames: list[Heard]) -> None:
        """Take the frames appended to ``frames`` since the last call."""
        for frame in frames[self._seen :]:
            if not is_speech(frame.payload):
                continue
            at = frame.at * self.speed
            if self.turns and at - self.turns[-1][1] <= TURN_GAP_S:
                self.turns[-1][1] = at + FRAME_SECONDS
            else:
                self.turns.append([at, at + FRAME_SECONDS])
        self._seen = len(frames)


@dataclass
class ReplayReport:
    """Follows one :class:`SimulatedCaller`; call :meth:`update` as often as a progress line is wanted."""

    caller: SimulatedCaller
    said: SpeechTracker = field(init=False)
    heard: SpeechTracker = field(init=False)

    def __post_init__(self) -> None:
        self.said = SpeechTracker(self.caller.speed)
        self.heard = SpeechTracker(self.caller.speed)

    def update(self) -> ReplayReport:
        self.said.update(self.caller.said)
        self.heard.update(self.caller.heard)
        return self

    @property
    def elapsed(self) -> float:
        return self.caller.now() * self.caller.speed

    @property
    def barge_ins(self) -> list[float]:
        """Call times at which the bot sent ``clear``."""
        return [item.at * self.caller.speed for item in self.caller.events("clear")]

    @property
    def latencies(self) -> list[float]:
        """Response latency of each caller turn the bot answered (see the module docstring)."""
        result = []
        turns = self.said.turns
        for index, (_, end) in enumerate(turns):
            next_start = turns[index + 1][0] if index + 1 < len(turns) else float("inf")
            answer = next((start for start, _ in self.heard.turns if end <= start < next_start), None)
            if answer is not None:
                result.append(answer - end)
        return result

    @property
    def hung_up_by(self) -> str:
        if self.caller.hung_up:
            return "caller (sent stop)"
        if self.caller.closed.is_set():
            return f"bot (closed the stream, code {self.caller.close_code})"
        return "nobody yet"

    def progress_line(self) -> str:
        return (
            f"{self.elapsed:6.1f} s  turns: caller {len(self.said.turns)}, bot {len(self.heard.turns)}  "
            f"barge-ins: {len(self.barge_ins)}"
        )

    def summary(self) -> list[str]:
        self.update()
        latencies = self.latencies
        if latencies:
            figures = " ".join(f"{value:.2f}" for value in latencies)
            latency = f"{figures} s; median {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s"
        else:
            latency = "none (the bot never answered after the caller spoke)"
        barge_ins = self.barge_ins
        return [
            f"call time: {self.elapsed:.1f} s (replayed at {self.caller.speed:g}x)",
            f"turns: caller {len(self.said.turns)}, bot {len(self.heard.turns)}",
            f"response latency (end of caller speech -> first bot audio heard): {latency}",
            f"barge-ins: {len(barge_ins)}"
            + (f" (clear at {', '.join(f'{at:.2f}' for at in barge_ins)} s)" if barge_ins else ""),
            f"hung up by: {self.hung_up_by}",
        ]

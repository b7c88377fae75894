"""The bridge's own share of latency, measured where it happens.

Measures (seconds):
- ``frame_to_send``: the caller frame that completed a chunk received -> ``agent.send()`` done with the chunk
  (the bridge's and the model client's own time, without the wait for the chunk to fill);
- ``caller_audio_to_model``: the oldest frame of a chunk received -> ``agent.send()`` done with the chunk
  (the longest any caller audio waited before the model client had written it: the chunking hold included);
- ``speech_audio_to_model``: the same for chunks sent around the caller's speech (from the onset to the end of
  the end-pointing window; for the onset's own flush, from the voiced frame that released it): the hold that
  matters, without the long-silence chunks' deliberate one (``speech_chunks``);
- ``audio_to_frame``: an agent audio event received -> its first frame written to the socket (while Twilio
  has more than 300 ms to play, frames wait to fill a message: tens of ms here that the caller never hears);
- ``barge_in_to_clear``: ``BidiBargeInEvent`` received -> ``clear`` written;
- ``speech_signal_to_clear``: the model's first sign of the caller talking over the bot (a user transcript
  opening, before any ``BidiBargeInEvent``) received -> ``clear`` written;
- ``caller_onset_to_clear``: the first voiced caller frame of speech that began over unheard bot audio
  received -> ``clear`` written (the model's detection time included: what the caller waits for);
- ``start_to_first_audio``: the stream's ``start`` received -> the first bot frame written;
- ``turn``: end of the caller's turn (the model's user transcript) -> the bot's first frame written.

Each call keeps a bounded sample per measure for its summary line; the app keeps a bounded
reservoir of recent samples for ``GET /stats`` (what the load benchmark reads).
"""

from __future__ import annotations

from collections import deque

MEASURES = (
    "frame_to_send",
    "caller_audio_to_model",
    "speech_audio_to_model",
    "audio_to_frame",
    "barge_in_to_clear",
    "speech_signal_to_clear",
    "caller_onset_to_clear",
    "start_to_first_audio",
    "turn",
)
_CALL_SAMPLES = 1_000
_APP_SAMPLES = 20_000


class LatencySamples:
    """Recent samples per measure, bounded in memory."""

    def __init__(self, keep: int = _CALL_SAMPLES) -> None:
        self._samples: dict[str, deque[float]] = {name: deque(maxlen=keep) for name in MEASURES}
        self.counts: dict[str, int] = dict.fromkeys(MEASURES, 0)

    def add(self, measure: str, seconds: float) -> None:
        self._samples[measure].append(seconds)
        self.counts[measure] += 1

    def extend(self, other: LatencySamples) -> None:
        for name, samples in other._samples.items():
            self._samples[name].extend(samples)
            self.counts[name] += other.counts[name]

    def summary(self) -> dict[str, dict[str, float]]:
        """count, p50, p99 and max (milliseconds) per measure that has samples."""
        report: dict[str, dict[str, float]] = {}
        for name, samples in self._samples.items():
            if samples:
                ordered = sorted(samples)
                report[name] = {
                    "count": self.counts[name],
                    "p50_ms": round(percentile(ordered, 50) * 1000, 3),
                    "p99_ms": round(percentile(ordered, 99) * 1000, 3),
                    "max_ms": round(ordered[-1] * 1000, 3),
                }
        return report

    def brief(self) -> str:
        """One log-friendly line: ``measure=p50/p99ms`` for each measure with samples."""
        return " ".join(f"{name}={row['p50_ms']:.1f}/{row['p99_ms']:.1f}ms" for name, row in self.summary().items())


def app_samples() -> LatencySamples:
    return LatencySamples(keep=_APP_SAMPLES)


def percentile(ordered: list[float], pct: float) -> float:
    """Nearest-rank percentile of an already sorted, non-empty list."""
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]

"""Prometheus metrics for operators (``GET /metrics``).

One registry per app, so several apps (tests, replicas in one process) never share counters.
Call-level figures are recorded once, when a call ends, from its ``CallStats``: nothing on the
audio path touches a metric.

With ``voicebot serve --workers N`` every worker writes its figures to files in
``PROMETHEUS_MULTIPROC_DIR`` (prometheus_client's multiprocess mode, set up by the supervisor before
the workers start), and ``/metrics`` on any worker renders the sum over all of them: one scrape
target per server, as Prometheus users expect of gunicorn-style servers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector

from telephony.call_outcome import Outcome

CONTENT_TYPE = CONTENT_TYPE_LATEST
MULTIPROCESS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_dir() -> str | None:
    """The shared metrics folder when this process is one of several workers (else None)."""
    return os.environ.get(MULTIPROCESS_DIR_ENV) or None


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.calls_active = Gauge(
            "voicebot_calls_active", "Calls in progress.", registry=r, multiprocess_mode="livesum"
        )
        self.prewarm = Counter(
            "voicebot_prewarm",
            "What became of pre-warmed agents: hit (the stream came here), miss (it landed on another worker or "
            "replica: a cold start), late (it came after the agent was given up), discarded (no stream came).",
            ["outcome"],
            registry=r,
        )
        self.calls = Counter("voicebot_calls", "Calls ended, by who ended them.", ["ended_by"], registry=r)
        self.outcomes = Counter(
            "voicebot_call_outcomes",
            "Calls ended, by outcome (telephony/call_outcome.py: completed-by-bot, completed-by-caller, "
            "completed-by-server, transferred, failed-agent-start, failed-model-error, failed-timeout, crashed).",
            ["outcome"],
            registry=r,
        )
        for outcome in Outcome:
            self.outcomes.labels(outcome=outcome.value)  # every outcome scraped from the start, at 0
        self.calls_refused = Counter(
            "voicebot_calls_refused", "Calls turned away before the stream, by reason.", ["reason"], registry=r
        )
        self.call_duration = Histogram(
            "voicebot_call_duration_seconds",
            "Call duration, from the stream's start to hang-up.",
            buckets=(5, 15, 30, 60, 120, 300, 600, 1200, 3600),
            registry=r,
        )
        self.turn_latency = Histogram(
            "voicebot_turn_latency_seconds",
            "End of the caller's turn (the model's user transcript) to the bot's first audio.",
            buckets=(0.2, 0.4, 0.6, 0.8, 1.0, 1.5, 2.0, 3.0, 5.0),
            registry=r,
        )
        self.barge_ins = Histogram(
            "voicebot_barge_ins_per_call", "Barge-ins per call.", buckets=(0, 1, 2, 3, 5, 10, 20), registry=r
        )
        self.errors = Counter("voicebot_errors", "Errors by kind.", ["kind"], registry=r)
        self.frames_dropped = Counter(
            "voicebot_frames_dropped",
            "Audio dropped, by direction (caller audio the model could not take; bot audio over the queue cap).",
            ["direction"],
            registry=r,
        )
        self.transfers = Counter(
            "voicebot_transfers", "Transfers by mode (cold, warm) and outcome.", ["mode", "outcome"], registry=r
        )
        self.transfer_briefing_delay = Histogram(
            "voicebot_transfer_briefing_delay_seconds",
            "Warm transfer: from the transfer being requested to the first briefing audio sent to the person.",
            buckets=(2, 4, 6, 8, 10, 15, 20, 30, 45, 60),
            registry=r,
        )
        self.dead_air = Histogram(
            "voicebot_dead_air_seconds",
            "Each call's longest dead air: from the end of the caller's turn (or a tool's start, or a check-in or "
            "greeting being due) to the first bot audio the caller could hear.",
            buckets=(0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 20.0),
            registry=r,
        )
        self.dead_air_steps = Counter(
            "voicebot_dead_air_steps",
            "What the bridge did about silence: nudge, reconnect, apology (a quiet agent); check_in, idle_goodbye, "
            "idle_end (a quiet caller).",
            ["step"],
            registry=r,
        )
        self.bad_messages = Counter("voicebot_bad_messages", "Malformed or foreign Media Streams messages.", registry=r)

    def render(self) -> bytes:
        """This process's metrics, or every worker's summed when running as one of several."""
        folder = multiprocess_dir()
        if folder is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=folder)
        return generate_latest(registry)

    def prewarm_outcome(self, outcome: str) -> None:
        self.prewarm.labels(outcome=outcome).inc()

    def call_outcome(self, outcome: str) -> None:
        self.outcomes.labels(outcome=outcome).inc()

    def record_call(self, stats: CallStatsLike, caller_chunks_dropped: int, bot_frames_dropped: int) -> None:
        """Everything about one call, once, when it ends."""
        self.calls.labels(ended_by=stats.ended_by or "unknown").inc()
        self.call_duration.observe(stats.duration)
        for latency in stats.turn_latencies:
            self.turn_latency.observe(latency)
        self.barge_ins.observe(stats.barge_ins)
        if stats.bad_messages:
            self.bad_messages.inc(stats.bad_messages)
        if caller_chunks_dropped:
            self.frames_dropped.labels(direction="caller").inc(caller_chunks_dropped)
        if bot_frames_dropped:
            self.frames_dropped.labels(direction="bot").inc(bot_frames_dropped)

    def record_dead_air(self, longest_s: float, steps: Mapping[str, int]) -> None:
        """One call's longest dead air and its rescue steps and check-ins, once, when it ends."""
        self.dead_air.observe(longest_s)
        for step, count in steps.items():
            self.dead_air_steps.labels(step=step).inc(count)


class CallStatsLike(Protocol):
    ended_by: str
    turn_latencies: list[float]
    barge_ins: int
    bad_messages: int

    @property
    def duration(self) -> float: ...

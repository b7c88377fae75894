"""False barge-ins: ``clear``s the bridge sent while the caller said nothing.

The bridge clears on the model's sign that the caller is talking, never on its own level meter, so a model whose
voice detector takes a noisy line for speech cuts its own answers off: the caller hears the bot stop for no reason.
Each ``clear`` in the call's recording is set against the caller's clean speech (:mod:`caller_truth`): one with
no speech in the second before the last caller frame the bridge had then is false.
"""

from __future__ import annotations

import bisect

from telephony.simulation.scenarios.caller_truth import SpeechSpan
from telephony.simulation.scenarios.outcome import CallOutcome, Finding
from telephony.simulation.scenarios.scenario import Expectations

__all__ = ["EXPLAINED_WITHIN_MS", "check_false_clears", "false_clears"]

EXPLAINED_WITHIN_MS = 1000
"""A clear up to this long after caller speech is that speech's barge-in: a model's voice detector is late, and
a short word may be over before it answers."""


def false_clears(outcome: CallOutcome) -> list[float]:
    """When (seconds of the call's recording) each ``clear`` went out with the caller silent."""
    stamps: list[int] = []
    times: list[float] = []
    false: list[float] = []
    for record in outcome.records:
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        if record.get("kind") == "twilio_in" and message.get("event") == "media":
            try:
                stamps.append(int(message["media"]["timestamp"]))
                times.append(float(record["t"]))
            except (KeyError, TypeError, ValueError):
                continue
        elif record.get("kind") == "twilio_out" and message.get("event") == "clear":
            heard_until = stamps[-1] if stamps else 0
            if not _explained(outcome.caller_speech, heard_until):
                false.append(float(record.get("t", 0.0)))
    return false


def _explained(spans: list[SpeechSpan], heard_until_ms: int) -> bool:
    """Some speech had reached the bridge and was going on, or had ended within ``EXPLAINED_WITHIN_MS``."""
    starts = [span.start_ms for span in spans]
    for span in spans[: bisect.bisect_right(starts, heard_until_ms)]:
        if span.end_ms >= heard_until_ms - EXPLAINED_WITHIN_MS:
            return True
    return False


def check_false_clears(expect: Expectations, outcome: CallOutcome) -> list[Finding]:
    if expect.barge_in.max_false_clears is None:
        return []
    limit, where = expect.barge_in.max_false_clears
    found = false_clears(outcome)
    if len(found) <= limit:
        return []
    moments = ", ".join(f"{at:.1f} s" for at in found[:8]) + (", …" if len(found) > 8 else "")
    line = f" on {outcome.line.describe()}" if outcome.line is not None else ""
    return [
        Finding(
            where,
            f"{len(found)} clear(s) with the caller silent{line} (at {moments}); at most {limit} expected: the "
            "model took the line's noise for the caller talking over it",
        )
    ]

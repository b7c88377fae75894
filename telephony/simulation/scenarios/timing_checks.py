"""The timing expectations: barge-in (how fast the bot stopped, how much stale audio played), response
latency, dead air, and call duration. Read from the caller's step log and the call's ``events.jsonl`` records.
"""

from __future__ import annotations

import bisect
import statistics
from typing import Any

from telephony.bridge.dead_air import ENDED_BY
from telephony.recording import dead_air
from telephony.simulation.scenarios.outcome import CallOutcome, Finding
from telephony.simulation.scenarios.scenario import Expectations
from telephony.simulation.scenarios.scenario_caller import StepLog
from telephony.twilio.media_streams import media_frames


def barge_ins(outcome: CallOutcome) -> list[tuple[StepLog, float | None, float | None, int]]:
    """For each step that talked over the bot: (step, when its speech reached the bridge, when ``clear`` went out,
    frames of the interrupted reply sent after the clear), in the recording's time."""
    arrivals = arrival_times(outcome)
    stamps = sorted(arrivals)
    results = []
    for step in outcome.steps:
        if step.step.over_the_bot_ms is None:
            continue
        spoke = first_arrival(arrivals, stamps, step.timestamp) if step.timestamp is not None else None
        cleared = _first_clear_after(outcome.records, spoke) if spoke is not None else None
        stale = _stale_frames(outcome.records, cleared) if cleared is not None else 0
        results.append((step, spoke, cleared, stale))
    return results


def arrival_times(outcome: CallOutcome) -> dict[int, float]:
    """When each caller frame (by its media ``timestamp``) reached the bridge, in the recording's time."""
    arrivals: dict[int, float] = {}
    for record in outcome.records:
        message = record.get("message")
        if record.get("kind") == "twilio_in" and isinstance(message, dict) and message.get("event") == "media":
            try:
                arrivals.setdefault(int(message["media"]["timestamp"]), float(record["t"]))
            except (KeyError, TypeError, ValueError):
                continue
    return arrivals


def first_arrival(arrivals: dict[int, float], stamps: list[int], timestamp: int) -> float | None:
    """When the step's first frame reached the bridge; on a lossy line, the first of its frames that did."""
    index = bisect.bisect_left(stamps, timestamp)
    return arrivals[stamps[index]] if index < len(stamps) and stamps[index] - timestamp < 1000 else None


def _first_clear_after(records: list[dict[str, Any]], t: float) -> float | None:
    for record in records:
        message = record.get("message")
        if (
            record.get("kind") == "twilio_out"
            and float(record.get("t", 0)) >= t
            and isinstance(message, dict)
            and message.get("event") == "clear"
        ):
            return float(record["t"])
    return None


def _stale_frames(records: list[dict[str, Any]], cleared: float) -> int:
    """Bot frames sent after the clear and before the model's next response began (the interrupted reply's)."""
    stale = 0
    for record in records:
        if float(record.get("t", 0)) <= cleared:
            continue
        event = record.get("event")
        if (
            record.get("kind") == "agent"
            and isinstance(event, dict)
            and event.get("type") in ("bidi_response_start", "bidi_audio_start")
        ):
            break
        if record.get("kind") == "twilio_out":
            stale += media_frames(record.get("message"))
    return stale


def check_barge_in(expect: Expectations, outcome: CallOutcome) -> list[Finding]:
    if expect.clear_within_ms is None and expect.nothing_stale is None:
        return []
    findings = []
    where = (expect.clear_within_ms or (0, expect.nothing_stale))[1]
    attempts = barge_ins(outcome)
    if not attempts:
        return [
            Finding(
                where,
                "no caller step talks over the bot (give one 'over_the_bot_ms'), so there is no barge-in to check",
            )
        ]
    for step, spoke, cleared, stale in attempts:
        label = (
            f"caller step at {step.step.where} ({step.step.describe()})" if step.step.where else step.step.describe()
        )
        if step.waited_out:
            findings.append(
                Finding(
                    where,
                    f"{label}: the bot was not talking when the caller "
                    f"meant to talk over it (waited {step.at:.1f} s into the call)",
                )
            )
            continue
        if spoke is None:
            findings.append(Finding(where, f"{label}: the caller's speech never reached the bridge"))
            continue
        if cleared is None:
            findings.append(
                Finding(where, f"{label}: the caller talked over the bot at {spoke:.2f} s and no clear was sent")
            )
            continue
        if expect.clear_within_ms is not None and (cleared - spoke) * 1000 > expect.clear_within_ms[0]:
            findings.append(
                Finding(
                    expect.clear_within_ms[1],
                    f"{label}: clear came {(cleared - spoke) * 1000:.0f} ms after the caller "
                    f"started talking at {spoke:.2f} s; expected within {expect.clear_within_ms[0]:g} ms",
                )
            )
        if expect.nothing_stale is not None and stale:
            findings.append(
                Finding(
                    expect.nothing_stale,
                    f"{label}: {stale} frame(s) of the interrupted reply were sent after the clear at {cleared:.2f} s",
                )
            )
    return findings


# --- timing --------------------------------------------------------------------------------------------


def check_latency(expect: Expectations, outcome: CallOutcome) -> list[Finding]:
    findings = []
    latencies = outcome.latencies
    figures = ", ".join(f"{value:.2f}" for value in latencies) or "none"
    wanted = [item for item in (expect.turn_latency_max_s, expect.latency_p50_max_s, expect.latency_max_s) if item]
    if wanted and not latencies:
        return [
            Finding(
                wanted[0][1], "no response latency could be measured: the bot never answered after the caller spoke"
            )
        ]
    if expect.turn_latency_max_s is not None:
        limit, where = expect.turn_latency_max_s
        for index, value in enumerate(latencies):
            if value > limit:
                findings.append(
                    Finding(
                        where,
                        f"the bot took {value:.2f} s to answer caller "
                        f"turn {index + 1}; budget {limit:g} s (all: {figures} s)",
                    )
                )
    if expect.latency_p50_max_s is not None and statistics.median(latencies) > expect.latency_p50_max_s[0]:
        findings.append(
            Finding(
                expect.latency_p50_max_s[1],
                f"median response latency {statistics.median(latencies):.2f} "
                f"s is over {expect.latency_p50_max_s[0]:g} s (all: {figures} s)",
            )
        )
    if expect.latency_max_s is not None and max(latencies) > expect.latency_max_s[0]:
        findings.append(
            Finding(
                expect.latency_max_s[1],
                f"slowest response {max(latencies):.2f} s is over {expect.latency_max_s[0]:g} s (all: {figures} s)",
            )
        )
    return findings


def dead_air_waits(outcome: CallOutcome) -> list[dict[str, Any]]:
    """Every wait the bridge measured on the call, ``{"t", "s", "after", "ended_by"}``: from its ``dead_air`` notes
    in ``events.jsonl``, or (records not kept) the transcript's ``dead_air``."""
    waits = dead_air.waits_in_records(outcome.records)
    if waits or any(record.get("kind") == "note" for record in outcome.records):
        return waits
    listed = (outcome.transcript.get("dead_air") or {}).get("waits") if isinstance(outcome.transcript, dict) else None
    found = []
    for item in listed if isinstance(listed, list) else []:
        wait = dead_air.parse_wait(item) if isinstance(item, dict) else None
        if wait is not None and isinstance(item.get("t"), int | float):
            found.append({"t": round(float(item["t"]), 3), **wait})
    return found


def check_dead_air(expect: Expectations, outcome: CallOutcome) -> list[Finding]:
    if expect.dead_air_max_s is None:
        return []
    limit, where = expect.dead_air_max_s
    waits = dead_air_waits(outcome)
    worst = dead_air.longest(waits)
    if worst is None or worst["s"] <= limit:
        return []
    over = sum(1 for wait in waits if wait["s"] > limit)
    others = f"; {over - 1} other wait(s) over {limit:g} s too" if over > 1 else ""
    line = f" on {outcome.line.describe()}" if outcome.line is not None else ""
    ended = ENDED_BY.get(worst["ended_by"], f"ended by {worst['ended_by']}")
    return [
        Finding(
            where,
            f"the caller heard nothing for {worst['s']:.2f} s after {dead_air.after_text(worst['after'])}{line} "
            f"(from {max(0.0, worst['t'] - worst['s']):.1f} s to {worst['t']:.1f} s, when {ended}); "
            f"at most {limit:g} s expected{others}",
        )
    ]


def check_duration(expect: Expectations, outcome: CallOutcome) -> list[Finding]:
    findings = []
    if expect.duration_max_s is not None and outcome.duration_s > expect.duration_max_s[0]:
        findings.append(
            Finding(
                expect.duration_max_s[1],
                f"the call lasted {outcome.duration_s:.1f} s; expected at most {expect.duration_max_s[0]:g} s",
            )
        )
    if expect.duration_min_s is not None and outcome.duration_s < expect.duration_min_s[0]:
        findings.append(
            Finding(
                expect.duration_min_s[1],
                f"the call lasted {outcome.duration_s:.1f} s; expected "
                f"at least {expect.duration_min_s[0]:g} s ({outcome.end_reason})",
            )
        )
    return findings

"""What the bridge saw, turned into figures: utterances heard whole once, audio lost, the longest silence the
caller heard, answers cut and resumed.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

from telephony.bridge.observer import QuietObserver
from telephony.simulation.caller.simulated_caller import FRAME_SECONDS, SimulatedCaller
from tests.fakes.long_call.caller_line import CallerLog, voiced
from tests.fakes.long_call.conversation import HEARD, Plan


class Tap(QuietObserver):
    """A call observer collecting what the scoring needs: user transcripts, restarts, notes."""

    def __init__(self) -> None:
        self.user_transcripts: list[str] = []
        self.restarts: list[str] = []
        self.notes: list[tuple[str, str]] = []
        self.started = time.monotonic()

    def agent_event(self, event: Any) -> None:
        kind = event.get("type") if hasattr(event, "get") else None
        if kind == "bidi_transcript_block" and event.get("role") == "user":
            self.user_transcripts.append(str(event.get("transcript")))
        elif kind == "bidi_connection_restart":
            self.restarts.append(str(event.get("reason")))

    def note(self, kind: str, detail: str) -> None:
        self.notes.append((kind, detail))


@dataclass
class Score:
    utterances: int
    heard_whole_once: int
    problems: list[str]
    restarts: int
    cuts: int
    resumed: int
    longest_silence_s: float
    hung_up_by_bot: bool
    answered_twice: int = 0
    """Utterances (or parts of them) that reached a model more than once: the bot answered them twice."""
    split: int = 0
    """Utterances that reached the models in pieces, each part once (no words repeated, but not whole)."""

    @property
    def ok(self) -> bool:
        return not self.problems and self.heard_whole_once == self.utterances and self.hung_up_by_bot


def score(plan: Plan, log: CallerLog, tap: Tap, caller: SimulatedCaller, tolerance_s: float = 0.1) -> Score:
    """Was each utterance transcribed once, whole? How long did the caller wait in silence?"""
    problems: list[str] = []
    seen: dict[float, list[float]] = {}
    for text in tap.user_transcripts:
        match = HEARD.search(text)
        if match is None:
            problems.append(f"unexpected transcript {text!r}")
            continue
        utterance = plan.match(float(match["hz"]))
        if utterance is None:
            problems.append(f"a fragment nobody said: {text!r}")
            continue
        seen.setdefault(utterance.hz, []).append(float(match["seconds"]))
    whole = twice = split = 0
    for utterance, _, _ in log.said:
        heard = seen.get(utterance.hz, [])
        if len(heard) > 1 and sum(heard) > utterance.seconds + tolerance_s:
            twice += 1
        elif len(heard) > 1:
            split += 1
        if len(heard) == 1 and abs(heard[0] - utterance.seconds) <= tolerance_s:
            whole += 1
        else:
            problems.append(f"{utterance.hz:.0f} Hz ({utterance.seconds:.2f} s, {utterance.kind}) heard as {heard}")
    problems += [f"no answer to {u.hz:.0f} Hz ({u.kind})" for u in log.unanswered]
    cuts = sum(1 for kind, _ in tap.notes if kind == "cut")
    resumed = sum(1 for kind, _ in tap.notes if kind == "resume")
    return Score(
        utterances=len(log.said),
        heard_whole_once=whole,
        problems=problems,
        restarts=len(tap.restarts),
        cuts=cuts,
        resumed=resumed,
        longest_silence_s=longest_wait(caller),
        hung_up_by_bot=log.hung_up_by_bot,
        answered_twice=twice,
        split=split,
    )


def longest_wait(caller: SimulatedCaller) -> float:
    """The longest stretch in which neither side spoke and the bot spoke next: the caller waiting on the bot."""
    events = sorted(
        [(frame.at, "caller") for frame in caller.said if voiced(frame.payload)]
        + [(frame.at, "bot") for frame in caller.heard if voiced(frame.payload)]
    )
    longest = 0.0
    for (at, _), (next_at, who) in itertools.pairwise(events):
        if who == "bot":
            longest = max(longest, next_at - at - FRAME_SECONDS)
    return longest

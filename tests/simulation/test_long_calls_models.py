"""Long calls on OpenAI Realtime's and Gemini Live's own terms: the project's model for each (strands' real client)
inside the real bridge, talking to the provider's local server with its connection limit on a fast clock.

OpenAI expires a session at its limit (``session_expired``: strands reconnects and replays the history); Gemini
sends ``goAway`` (strands resumes the session by its handle) and may refuse a resumption (strands starts afresh and
replays the history). strands replaces connections before the limits too, at quiet moments when it can. Beside
those, connections end sooner at seeded moments and on cue: mid-utterance, mid-answer and just after an answer
(the order in which the bot once answered twice). Every new connection takes a seeded 0.1-2 s to set up.

A tone caller (tests/fakes/long_call/) talks to a brain that transcribes what it heard, so the tests
see whether every utterance reached the answering connection whole and once.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import pytest

from telephony.app import create_app
from telephony.simulation.local_app.loopback import serve_app
from telephony.simulation.local_gemini import LocalGemini
from telephony.simulation.local_openai import LocalOpenAI
from tests.fakes.long_call.local_servers import LongCallServer, Restarts

from ..conftest import TEST_SETTINGS
from ..fakes.long_call import CallerLog, Plan, Score, Tap, ToneConversation, make_plan, score, talk
from ..fakes.twilio import FakeTwilioCall
from .test_long_calls_nova import DROPPED

CUES = ("utterance", "answer", "after answer")
CARRIED = re.compile(r"unfinished utterance given again: ([0-9.]+) s")


@dataclass
class LongCall:
    """What one long call left behind: its score, the caller's log, the observer, the server's side."""

    result: Score
    log: CallerLog
    tap: Tap
    dropped: int
    line: LongCallServer


async def long_call(
    provider: str, server: object, plan: Plan, restarts: Restarts, caplog: pytest.LogCaptureFixture, goodbye_s: float
) -> LongCall:
    """The caller follows ``plan`` through the real app to ``server``; the goodbye waits until ``goodbye_s``."""
    tap = Tap()
    caplog.set_level(logging.INFO)
    async with LongCallServer(provider, server, ToneConversation(plan), restarts) as line:
        app = create_app(TEST_SETTINGS, agent_factory=line.agent, observers=[lambda call: tap])
        async with serve_app(app) as base:
            async with FakeTwilioCall(f"ws://{base}/media-stream") as call:
                await call.connect()
                log = await talk(call, plan, answer_timeout=25.0, goodbye_after_s=goodbye_s)
    summary = next(r.getMessage() for r in caplog.records if "call ended |" in r.getMessage())
    dropped = int(DROPPED.search(summary).group(1))  # type: ignore[union-attr]
    return LongCall(score(plan, log, tap, call), log, tap, dropped, line)


def assert_whole_and_once(call: LongCall, plan: Plan, caplog: pytest.LogCaptureFixture) -> None:
    """Every utterance heard whole and once, none answered twice or split, no caller audio lost; the cued
    restarts all came, one in mid-utterance (its start given again to the next connection)."""
    result = call.result
    assert result.problems == [], result.problems
    assert result.heard_whole_once == result.utterances == len(plan.utterances)
    assert result.answered_twice == 0 and result.split == 0
    assert call.dropped == 0
    assert result.hung_up_by_bot, "the goodbye did not hang up"
    assert call.line.cues is not None and sorted(moment for moment, _ in call.line.cues.fired) == sorted(CUES)
    assert max(float(seconds) for seconds in CARRIED.findall(caplog.text)) >= 0.4  # the cut utterance, carried
    assert result.cuts >= 1 and result.resumed == result.cuts  # the answer cut mid-way was picked up


async def test_an_openai_call_of_hours_crosses_every_restart_whole(
    local_openai: LocalOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """Over an hour of OpenAI time in about 25 s: sessions expire (at the limit, sooner, and on cue) and strands
    replaces them before the limit; the model ends turns sooner than the bridge and transcribes after answering."""
    scale = 1 / 400
    plan = make_plan(seed=23, turns=7)
    restarts = Restarts(scale, seed=23, setup_s=(0.1, 2.0), early=2, cues=CUES, late_transcripts=True, endpoint_s=0.3)
    call = await long_call("openai", local_openai, plan, restarts, caplog, goodbye_s=3600 * scale)
    assert call.log.said[-1][2] / scale >= 3600, "the call was shorter than a session may last"
    assert call.result.restarts >= 4, call.tap.restarts
    sessions = local_openai.sessions
    assert "openai realtime session expired" in caplog.text  # session_expired became strands' restart
    assert all(session.history for session in sessions[1:]), "a new session was not given the conversation"
    vad = sessions[0].session["audio"]["input"]["turn_detection"]
    assert vad["silence_duration_ms"] == 300
    assert_whole_and_once(call, plan, caplog)


async def test_a_gemini_call_of_an_hour_crosses_every_restart_whole(
    local_gemini: LocalGemini, caplog: pytest.LogCaptureFixture
) -> None:
    """An hour of Gemini time in about 25 s: goAway (before the limit, sooner, and on cue) and strands' own
    replacements resume the session by its handle; one resumption is refused, and a fresh session takes the
    history instead."""
    scale = 1 / 100
    plan = make_plan(seed=23, turns=7)
    restarts = Restarts(scale, seed=23, setup_s=(0.1, 2.0), early=2, refused_resumes=1, cues=CUES)
    call = await long_call("gemini", local_gemini, plan, restarts, caplog, goodbye_s=1200 * scale)
    assert call.log.said[-1][2] / scale >= 1200, "the call lasted less than two connections"
    assert call.result.restarts >= 4, call.tap.restarts
    sessions = local_gemini.sessions
    assert sum("goAway" in session.sent for session in sessions) >= 3
    assert sum(session.resumed_handle is not None and session.ended_by != "refused: Session not found or expired."
               for session in sessions) >= 2  # fmt: skip
    [refused] = [index for index, session in enumerate(sessions) if (session.ended_by or "").startswith("refused")]
    fresh = sessions[refused + 1]
    assert fresh.resumed_handle is None and fresh.history, "the fresh session was not given the conversation"
    assert_whole_and_once(call, plan, caplog)

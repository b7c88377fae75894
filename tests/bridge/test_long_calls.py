"""Long calls through the real bridge with a model whose connections run out (tests/fakes/long_call/).

strands' own restart machinery replaces the fake model's connection, proactively (declared
``restart_after_s``) or reactively (``ConnectionTimeoutError``), at chosen moments or at seeded random
ones, with set-up times of 0.1-5 s. The caller speaks tones whose pitch names each utterance; the model
transcribes what it heard, so every test checks that each utterance reached the answering connection
whole and once, that no caller audio was dropped, that cut answers were recorded and picked up, and
that the goodbye still hangs up.
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import re

import pytest

from agent.quiet_switch import with_quiet_switchover

from ..conftest import harness
from ..fakes.long_call import (
    RESUME_HZ,
    LimitedModel,
    Plan,
    Tap,
    ToneConversation,
    Utterance,
    lookup,
    make_plan,
    score,
    talk,
)
from ..fakes.rest import FakeCallControl

DROPPED = re.compile(r"caller_audio_dropped_chunks=(\d+)")


async def run_call(model_maker, plan: Plan, caplog: pytest.LogCaptureFixture, speed: float = 1.0, **settings):
    """One call through the real app: the caller follows ``plan``; returns its score, tap and caller."""
    tap = Tap()
    caplog.set_level(logging.INFO)
    async with harness(model_maker, tools=[lookup], observers=[lambda call: tap], **settings) as h:
        async with h.caller(speed=speed) as call:
            await call.connect()
            log = await talk(call, plan)
        model = h.model
    summary = next(r.getMessage() for r in caplog.records if "call ended |" in r.getMessage())
    dropped = int(DROPPED.search(summary).group(1))  # type: ignore[union-attr]
    return score(plan, log, tap, call), tap, call, model, dropped


def assert_whole(result, dropped: int) -> None:
    assert result.problems == [], result.problems
    assert result.heard_whole_once == result.utterances
    assert result.hung_up_by_bot, "the goodbye did not hang up"
    assert dropped == 0, f"{dropped} chunks of caller audio dropped"


FIXED_PLAN = Plan(
    [
        Utterance(310.0, 1.4, "ask"),
        Utterance(430.0, 0.8, "long"),
        Utterance(550.0, 1.2, "barge"),
        Utterance(670.0, 0.9, "tool"),
        Utterance(790.0, 1.0, "bye"),
    ]
)


MOMENTS = ["utterance", "answer", "tool call", "barge-in", "goodbye"]


async def test_a_timeout_at_every_moment_of_a_call_leaves_it_whole(caplog: pytest.LogCaptureFixture) -> None:
    """One reactive restart mid-utterance, mid-answer, during a tool call, during a barge-in, during the goodbye."""
    model = LimitedModel(ToneConversation(FIXED_PLAN), cut_at=set(MOMENTS), setup_s=0.3)
    result, tap, call, model, dropped = await run_call(lambda: model, FIXED_PLAN, caplog)
    assert sorted(model.cuts_done) == sorted(MOMENTS), "a restart did not happen where the test wanted it"
    assert tap.restarts == ["timeout"] * len(MOMENTS)
    assert_whole(result, dropped)
    cuts = [json.loads(detail) for kind, detail in tap.notes if kind == "cut"]
    assert len(cuts) == 2, cuts  # the answer and the goodbye; an utterance, a tool call or a barge-in cut nothing
    assert all(cut["reason"] == "timeout" and cut["heard_s"] > 0.2 and cut["heard_text"] for cut in cuts)
    assert result.resumed == 2
    assert any(abs(hz - RESUME_HZ) < 60 for hz in heard_pitches(call)), "the cut answer was never picked up"
    carried = [float(m) for m in re.findall(r"unfinished utterance given again: ([0-9.]+) s", caplog.text)]
    assert max(carried) >= 0.4, "the utterance in progress was not given to the new connection"


def heard_pitches(call) -> list[float]:
    from ..audio import frame_hz

    return [frame_hz(frame.payload) for frame in call.heard]


async def test_an_utterance_split_by_a_swap_reaches_the_new_connection_whole(caplog: pytest.LogCaptureFixture) -> None:
    """The old connection hears the start of the utterance; the new one must hear all of it, once."""
    plan = Plan([Utterance(400.0, 1.6, "ask"), Utterance(700.0, 0.8, "bye")])
    model = LimitedModel(ToneConversation(plan), cut_at={"utterance"}, setup_s=2.5)
    result, _, _, model, dropped = await run_call(lambda: model, plan, caplog)
    assert_whole(result, dropped)
    first, second = model.connections[:2]
    assert first.detector is not None and second is not None
    carried = [r.getMessage() for r in caplog.records if "unfinished utterance given again" in r.getMessage()]
    assert carried and float(carried[0].rsplit(": ", 1)[1].split(" ")[0]) >= 0.4 + 0.3 - 0.05  # start + pre-roll


async def test_caller_audio_during_a_slow_set_up_is_held_not_dropped(caplog: pytest.LogCaptureFixture) -> None:
    """VOICEBOT_INBOUND_BUFFER_MS (2 s) would overflow; the swap holds up to VOICEBOT_RESTART_HOLD_MS."""
    plan = Plan([Utterance(420.0, 1.0, "ask"), Utterance(520.0, 1.5, "ask"), Utterance(640.0, 0.8, "bye")])
    model = LimitedModel(ToneConversation(plan), cut_at={"utterance"}, setup_s=lambda: 0.1 if not model.setups else 5.0)
    result, _, _, model, dropped = await run_call(lambda: model, plan, caplog)
    assert_whole(result, dropped)
    held = [r.getMessage() for r in caplog.records if "caller audio held" in r.getMessage()]
    assert held, "the swap was not logged with what was held"
    assert float(re.search(r"held: ([0-9.]+) s", held[0]).group(1)) > 4.5  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("seed", "proactive"),
    [(11, True), (12, False)],
    ids=["proactive", "reactive"],
)
async def test_restarts_at_random_moments_with_slow_set_ups(
    seed: int, proactive: bool, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(seed)
    plan = make_plan(seed, turns=6)
    model = LimitedModel(
        ToneConversation(plan),
        restart_after_s=(lambda: rng.uniform(2.0, 5.0)) if proactive else None,
        timeout_after_s=None if proactive else (lambda: rng.uniform(2.0, 5.0)),
        setup_s=lambda: rng.uniform(0.1, 3.0),
    )
    result, tap, _, model, dropped = await run_call(lambda: model, plan, caplog, speed=2.0)
    assert result.restarts >= 2, f"only {result.restarts} restarts"
    assert set(tap.restarts) == {"scheduled" if proactive else "timeout"}
    assert_whole(result, dropped)


async def test_the_goodbye_still_hangs_up_over_rest_after_restarts(caplog: pytest.LogCaptureFixture) -> None:
    plan = Plan([Utterance(350.0, 0.8, "ask"), Utterance(600.0, 0.8, "bye")])
    model = LimitedModel(ToneConversation(plan), cut_at={"goodbye"}, setup_s=0.5)
    hangup = FakeCallControl()
    result, *_, dropped = await run_call(lambda: model, plan, caplog, hangup=hangup)
    assert_whole(result, dropped)
    assert len(hangup.calls) == 1


class QuietLimitedModel(with_quiet_switchover(LimitedModel)):  # type: ignore[misc]
    quiet_window_share = 0.6


async def test_connections_are_replaced_at_quiet_moments_before_the_limit(caplog: pytest.LogCaptureFixture) -> None:
    """agent.quiet_switch: nobody speaking, nothing owed, no tool: the swap carries nothing and cuts nothing."""
    plan = make_plan(seed=31, turns=6)
    model = QuietLimitedModel(ToneConversation(plan), restart_after_s=5.0, setup_s=0.3)
    result, tap, _, model, dropped = await run_call(lambda: model, plan, caplog)
    assert_whole(result, dropped)
    quiet = caplog.text.count("at a quiet moment, before the provider's limit")
    # A busy stretch can leave no quiet moment in the window: strands' own schedule is then the backstop.
    assert quiet >= 2 and quiet >= result.restarts / 2, (quiet, tap.restarts)
    assert result.cuts == 0
    lines = [
        r.getMessage() for r in caplog.records if "being replaced" in r.getMessage() or "replaced in" in r.getMessage()
    ]
    after_quiet = [after for before, after in itertools.pairwise(lines) if "quiet moment" in before]
    assert after_quiet and all("given again: 0.00 s" in line for line in after_quiet)  # nobody was mid-utterance


@pytest.mark.parametrize("hang_up_after_s", [0.3, 1.2], ids=["early-in-the-set-up", "late-in-the-set-up"])
async def test_a_caller_hanging_up_during_a_scheduled_swap_leaves_no_connection_open(
    hang_up_after_s: float, caplog: pytest.LogCaptureFixture
) -> None:
    """strands runs a scheduled swap in a task it no longer holds: stopping the agent does not stop the swap,
    which would open the next connection (and start its reader and timer) after the call ended."""
    plan = Plan([Utterance(420.0, 0.6, "ask")])
    model = LimitedModel(ToneConversation(plan), restart_after_s=1.0, setup_s=lambda: 0.0 if not model.setups else 2.0)
    caplog.set_level(logging.INFO)
    async with harness(lambda: model, tools=[lookup]) as h:  # its exit fails on leftover tasks or a model left running
        async with h.caller() as call:
            await call.connect()
            for _ in range(100):  # strands swaps about 1 s in; the set-up of the next connection then takes 2 s
                if "being replaced" in caplog.text:
                    break
                await call.silence(0.1)
            assert "being replaced" in caplog.text, "no swap within 10 s"
            await call.silence(hang_up_after_s)
            await call.stop()
            await call.wait_closed()
    assert len(model.connections) == 1, f"{len(model.connections)} connections were opened"
    assert model.stopped


@pytest.mark.parametrize("endpoint_s", [0.2, 0.35, 0.9], ids=["sooner", "a-little-sooner", "later"])
async def test_a_swap_after_an_answer_gives_nothing_again(endpoint_s: float, caplog: pytest.LogCaptureFixture) -> None:
    """The case found (issue 23): a model that transcribes the caller only as it starts answering, end-pointing
    sooner (or later) than the bridge, its connection replaced 2.2 s after it answered. Nothing is answered twice."""
    plan = Plan([Utterance(360.0, 1.0, "ask"), Utterance(480.0, 0.9, "ask"), Utterance(720.0, 0.8, "bye")])
    model = LimitedModel(
        ToneConversation(plan),
        cut_at={"after answer"},
        after_answer_s=2.2,
        after_answer_n=2,
        endpoint_s=endpoint_s,
        setup_s=0.2,
    )
    result, tap, _, model, dropped = await run_call(lambda: model, plan, caplog)
    assert model.cuts_done == ["after answer"] and tap.restarts == ["timeout"]
    assert_whole(result, dropped)
    assert result.answered_twice == 0 and result.split == 0


async def test_a_scheduled_swap_as_a_fast_model_answers_the_goodbye_gives_nothing_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """strands' scheduled swap lands just as a model that end-points in 0.2 s answers the last utterance."""
    plan = Plan([Utterance(400.0, 1.0, "ask"), Utterance(700.0, 0.8, "bye")])
    model = LimitedModel(
        ToneConversation(plan),
        restart_after_s=lambda: 4.2 if len(model.setups) < 2 else 100.0,
        endpoint_s=0.2,
        setup_s=0.2,
    )
    result, tap, _, model, dropped = await run_call(lambda: model, plan, caplog)
    assert tap.restarts == ["scheduled"]
    assert_whole(result, dropped)


async def test_an_answer_cut_before_its_question_was_transcribed_gets_the_question_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A model that transcribes the caller after its answer's audio loses its connection mid-answer: the question
    never reaches the history, so the new connection hears it again and answers it (no "as I was saying")."""
    plan = Plan([Utterance(360.0, 1.0, "long"), Utterance(720.0, 0.8, "bye")])
    model = LimitedModel(ToneConversation(plan), cut_at={"answer"}, late_transcripts=True, setup_s=0.3)
    result, tap, call, model, dropped = await run_call(lambda: model, plan, caplog)
    assert model.cuts_done == ["answer"] and tap.restarts == ["timeout"]
    assert_whole(result, dropped)
    assert result.answered_twice == 0 and result.split == 0
    assert result.cuts == 1 and result.resumed == 1
    assert "the new connection hears it again, instead of picking up the answer it cut" in caplog.text
    assert model.connections[1].index == 1 and model.brain.turns == 3  # the question twice (one cut), the goodbye
    assert not any(abs(hz - RESUME_HZ) < 60 for hz in heard_pitches(call)), "told to pick up an unknown question"

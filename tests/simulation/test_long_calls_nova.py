"""Long calls on Nova Sonic's own terms: the real ``BedrockNovaSonicModel`` inside the real bridge, talking to
the local Nova with its connection cap, silence timeout and set-up delays on a fast clock.

The local Nova ends each stream at its (scaled) 8-minute cap with ``modelTimeoutException`` (strands
restarts reactively) unless strands' proactive restart (``restart_after_s``, scaled from 420 s) comes
first; extra timeouts are injected at seeded moments; every new connection takes a seeded 0.1-5 s to be
served. A tone caller (tests/fakes/long_call/) talks to a brain that transcribes what it heard, so the
tests see whether every utterance reached the answering connection whole and once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from typing import Any

import pytest
from strands.bidi import BidiAgent

from agent.bedrock_endpoint import BedrockNovaSonicModel
from agent.tools import end_conversation
from telephony.app import create_app
from telephony.simulation.local_app.loopback import serve_app
from telephony.simulation.local_nova import Fault, LocalNova, Pacing, SetupDelay, TimeLimits

from ..conftest import TEST_SETTINGS
from ..fakes.long_call import (
    CallerLog,
    Plan,
    Score,
    Tap,
    ToneConversation,
    Utterance,
    lookup,
    make_plan,
    score,
    talk,
    tone_ulaw,
)
from ..fakes.twilio import FakeTwilioCall
from ..waiting import until

MODEL_ID = "amazon.nova-2-sonic-v1:0"
NOVA_CAP_S = 480.0
NOVA_RESTART_AFTER_S = 420.0
CALLER_HZ = 440.0
DROPPED = re.compile(r"caller_audio_dropped_chunks=(\d+)")


def nova_factory(scale: float, model_class: type[BedrockNovaSonicModel] = BedrockNovaSonicModel) -> Any:
    """Agents on the project's Nova model, replaced proactively at 7 (scaled) minutes, as in production."""

    def factory(call: Any) -> BidiAgent:
        model = model_class(
            model_id=MODEL_ID,
            region="us-east-1",
            audio={"input": {"sample_rate": 16000}, "output": {"sample_rate": 16000}},
            connection={"restart_after_s": NOVA_RESTART_AFTER_S * scale},
        )
        return BidiAgent(model=model, tools=[end_conversation, lookup], system_prompt="You answer the phone.")

    return factory


def configure(nova: LocalNova, plan: Plan, scale: float, seed: int, timeouts: int) -> None:
    """Nova's limits on a clock ``scale`` times real, seeded set-up delays, and ``timeouts`` extra timeouts."""
    rng = random.Random(seed)
    nova.brain = ToneConversation(plan)
    nova.limits = TimeLimits(connection_limit_s=NOVA_CAP_S, time_scale=scale)
    nova.pacing = Pacing(chunk_s=0.04, speedup=4.0)
    nova.setup_delay = SetupDelay(between=(0.1, 5.0), seed=seed)
    never = 1e9
    for _ in range(timeouts):  # stream k times out this long after it opens (a placeholder never fires)
        nova.faults.push(Fault.exception("modelTimeoutException", rng.uniform(1.5, 6.0)))
        nova.faults.push(Fault.exception("modelTimeoutException", never))


async def nova_call(
    nova: LocalNova, plan: Plan, scale: float, caplog: pytest.LogCaptureFixture, goodbye_after_s: float = 0.0
) -> tuple[Score, CallerLog, Tap, int]:
    tap = Tap()
    caplog.set_level(logging.INFO)
    app = create_app(TEST_SETTINGS, agent_factory=nova_factory(scale), observers=[lambda call: tap])
    async with serve_app(app) as base:
        async with FakeTwilioCall(f"ws://{base}/media-stream") as call:
            await call.connect()
            log = await talk(call, plan, answer_timeout=25.0, goodbye_after_s=goodbye_after_s)
    summary = next(r.getMessage() for r in caplog.records if "call ended |" in r.getMessage())
    dropped = int(DROPPED.search(summary).group(1))  # type: ignore[union-attr]
    return score(plan, log, tap, call), log, tap, dropped


async def test_a_20_minute_call_crosses_every_restart_whole(
    local_nova: LocalNova, caplog: pytest.LogCaptureFixture
) -> None:
    """20 Nova minutes in about 30 s: replaced before the limit (at quiet moments from 6 minutes, else at 7),
    injected timeouts, slow set-ups."""
    scale = 1 / 40
    plan = make_plan(seed=20, turns=8)
    configure(local_nova, plan, scale, seed=20, timeouts=2)
    result, log, tap, dropped = await nova_call(local_nova, plan, scale, caplog, goodbye_after_s=1200 * scale)
    call_s = log.said[-1][2]
    assert call_s / scale >= 1200, f"the call lasted {call_s / scale:.0f} Nova seconds"
    assert result.restarts >= 3, f"{result.restarts} restarts: {tap.restarts}"
    before_the_limit = caplog.text.count("at a quiet moment, before") + caplog.text.count("scheduled, before")
    assert before_the_limit >= 1, "no connection was replaced before Nova's limit"
    assert "it timed out: local nova: modelTimeoutException" in caplog.text  # and the injected timeouts
    assert result.problems == [], result.problems
    assert result.heard_whole_once == result.utterances == len(plan.utterances)
    assert dropped == 0
    assert result.hung_up_by_bot, "the goodbye did not hang up"
    ends = [session.ended_by for session in local_nova.sessions]
    assert "client ended the stream" in ends  # strands' proactive swap closed a stream itself


async def test_an_answer_cut_by_nova_timing_out_is_recorded_and_picked_up(
    local_nova: LocalNova, caplog: pytest.LogCaptureFixture
) -> None:
    """Nova times out 1.5 s into a 4 s answer: the cut is noted with what was heard, and the new connection
    (told where the caller stopped hearing) picks it up; the rest of the call goes on whole."""
    scale = 1 / 40
    plan = Plan([Utterance(400.0, 1.0, "long"), Utterance(600.0, 0.8, "ask"), Utterance(700.0, 0.8, "bye")])
    configure(local_nova, plan, scale, seed=3, timeouts=0)
    local_nova.setup_delay = SetupDelay(fixed_s=0.2)
    local_nova.pacing = Pacing(chunk_s=0.04, speedup=1.0)  # the answer streams in real time: room to cut it
    answer_starts = 0.3 + 0.4 + 1.0 + 0.6  # caller waits, speaks, Nova end-points (from the stream's start)
    local_nova.faults.push(Fault.exception("modelTimeoutException", answer_starts + 1.5))
    result, _, tap, dropped = await nova_call(local_nova, plan, scale, caplog)
    assert tap.restarts[0] == "timeout"
    [cut] = [json.loads(detail) for kind, detail in tap.notes if kind == "cut"]
    assert 0.8 < cut["heard_s"] < 2.5 and cut["heard_text"] and cut["text"].startswith(cut["heard_text"])
    assert result.resumed == 1 and local_nova.brain.resumes == 1
    assert "connection was replaced" in local_nova.sessions[1].text_inputs[0]
    assert result.problems == [], result.problems
    assert dropped == 0 and result.hung_up_by_bot


async def test_a_caller_hanging_up_during_a_swap_leaves_no_nova_stream_open(
    local_nova: LocalNova, caplog: pytest.LogCaptureFixture
) -> None:
    """The next stream is slow to open (1 s before the client starts it) and the caller hangs up meanwhile: the
    swap must not go on to open it after the call ended (strands' agent.stop() does not stop a scheduled swap).
    The caller talks on, so no quiet moment comes and strands' own timer does the swap."""
    scale = 1 / 420  # replaced after about 1 s
    local_nova.brain = ToneConversation(Plan([]))
    local_nova.limits = TimeLimits(connection_limit_s=NOVA_CAP_S, silence_timeout_s=4200.0, time_scale=scale)
    swapping = asyncio.Event()

    class SlowToReopen(BedrockNovaSonicModel):
        starts = 0

        async def start(self, *args: Any, **kwargs: Any) -> None:
            self.starts += 1
            if self.starts > 1:
                swapping.set()
                await asyncio.sleep(1.0)
            await super().start(*args, **kwargs)

    caplog.set_level(logging.INFO)
    app = create_app(TEST_SETTINGS, agent_factory=nova_factory(scale, SlowToReopen))
    async with serve_app(app) as base:
        async with FakeTwilioCall(f"ws://{base}/media-stream") as call:
            await call.connect()
            talking = asyncio.create_task(call.stream(tone_ulaw(CALLER_HZ, 10.0)))
            try:
                await asyncio.wait_for(swapping.wait(), timeout=10.0)
            finally:
                talking.cancel()
            await call.stop()
            await call.wait_closed()
        # the session stops its agent after closing the socket
        await until(lambda: not app.state.sessions, timeout=5.0, what="the session to finish")
        await asyncio.sleep(1.0)  # past the slow start: a swap left running would open its stream now
    assert "scheduled, before the provider's limit" in caplog.text
    assert "the swap is cancelled" in caplog.text
    assert [session.ended_by is not None for session in local_nova.sessions] == [True]

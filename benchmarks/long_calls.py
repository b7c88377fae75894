"""Long calls: what a caller notices when the model's connection is replaced, over 100+ restarts.

Each call runs through the real app (in this process, on loopback) with a simulated Twilio caller who
speaks tones whose pitch names each utterance (tests/fakes/long_call/): questions, a question that needs
a tool, a long answer it talks over, goodbye. The model side is either

- ``fake``: a ``BidiModel`` whose connections strands replaces every 2-5 s, proactively (declared
  ``restart_after_s``), reactively (``ConnectionTimeoutError``) or at quiet moments (agent.quiet_switch),
  each new connection taking 0.1-5 s to set up (``start()`` blocks meanwhile); in the ``after-answer`` mode
  the model end-points sooner than the bridge (0.15-0.45 s) and a connection also goes 0.5-3 s after an
  answer (the order of events in which an utterance was once answered twice); or
- ``nova``: the real ``BedrockNovaSonicModel`` (with quiet switch-over, as shipped) against the local Nova
  with its 8-minute cap on a 1/40 clock, seeded extra timeouts, and 0.1-5 s stream set-ups;
- ``openai``: the real ``OpenAIRealtimeModel`` (the project's, with its quiet switch-over) against the local
  OpenAI, whose sessions expire (``session_expired``: strands reconnects and replays the history) at 60 minutes on
  a 1/400 clock, strands replacing them at 45; every new session takes 0.1-5 s. In the ``timed`` mode sessions
  also expire at seeded moments; in ``cued`` mode mid-utterance (twice), mid-answer and 0.5-3 s after an answer,
  with the caller's transcript coming after the answer's audio and turns ended after 0.2-0.45 s of quiet (sooner
  than the bridge: the order in which an utterance was once answered twice);
- ``gemini``: the real ``GoogleGeminiLiveModel`` (the project's) against the local Gemini, which sends ``goAway``
  50 s before its 10-minute limit on a 1/100 clock (strands resumes the session by its handle), strands replacing
  connections at 9 minutes; one resumption is refused (strands starts afresh and replays the history); every
  set-up takes 0.1-5 s. ``timed``: seeded early ``goAway`` s; ``cued``: as for OpenAI.

It prints, per model side and overall: utterances heard whole and once by the answering connection, those
answered twice (must be 0) and those split, caller audio lost, the longest silence the caller sat through
waiting for the bot, answers cut and picked up.
``--without-continuity`` turns telephony.bridge.continuity off, for the figures before it.

    uv run python benchmarks/long_calls.py                  # fake, nova, openai, gemini: 100+ restarts each
    uv run python benchmarks/long_calls.py --model openai --restarts 30
    uv run python benchmarks/long_calls.py --model fake --restarts 50 --without-continuity
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from strands.bidi import BidiAgent  # noqa: E402

from agent.quiet_switch import with_quiet_switchover  # noqa: E402
from agent.tools import end_conversation  # noqa: E402
from telephony.app import create_app  # noqa: E402
from telephony.bridge.continuity import Continuity  # noqa: E402
from telephony.config import Settings  # noqa: E402
from telephony.simulation.caller.simulated_caller import SimulatedCaller  # noqa: E402
from telephony.simulation.local_app.loopback import serve_app  # noqa: E402
from telephony.simulation.local_nova.pytest_plugin import _FAKE_ENV  # noqa: E402
from tests.fakes.long_call import (  # noqa: E402
    LimitedModel,
    Score,
    Tap,
    ToneConversation,
    lookup,
    make_plan,
    score,
    talk,
)
from tests.fakes.long_call.local_servers import LongCallServer, Restarts, started  # noqa: E402

SETTINGS = Settings(greeting="", prewarm=False, hangup_grace_s=0.3, agent_start_timeout_s=15.0)
SUMMARY = re.compile(r"call=(?P<sid>CA\w+) \| call ended \|.*caller_audio_dropped_chunks=(?P<dropped>\d+)")
CUT_AT = ("utterance", "answer", "tool call", "barge-in", "goodbye")
FAKE_MODES = ("proactive", "reactive", "quiet", "after-answer")
MODELS = ("fake", "nova", "openai", "gemini")
MODES = {"fake": FAKE_MODES, "nova": ("nova",), "openai": ("timed", "cued"), "gemini": ("timed", "cued")}
SCALES = {"nova": 1 / 40, "openai": 1 / 400, "gemini": 1 / 100}
"""Real seconds per provider second."""


class Summaries(logging.Handler):
    """Collects each call's summary line (dropped caller audio) by call SID."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.dropped: dict[str, int] = {}
        self.carried: list[float] = []
        self.waits: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if match := SUMMARY.search(message):
            self.dropped[match["sid"]] = int(match["dropped"])
        elif "replaced in" in message and (held := re.search(r"the oldest waited ([0-9.]+) s", message)):
            self.waits.append(float(held.group(1)))


@dataclass
class Run:
    side: str
    mode: str
    score: Score
    dropped_chunks: int
    setups: list[float] = field(default_factory=list)


QuietLimited = with_quiet_switchover(LimitedModel)


def fake_model(plan: Any, rng: random.Random, mode: str) -> LimitedModel:
    brain = ToneConversation(plan)
    interval = lambda: rng.uniform(2.0, 5.0)  # noqa: E731
    setup = lambda: rng.uniform(0.1, 5.0)  # noqa: E731
    if mode == "proactive":
        return LimitedModel(brain, restart_after_s=interval, setup_s=setup)
    if mode == "quiet":
        model = QuietLimited(brain, restart_after_s=lambda: rng.uniform(4.0, 7.0), setup_s=setup)
        model.quiet_window_share = 0.5
        return model
    if mode == "after-answer":
        return LimitedModel(
            brain,
            restart_after_s=lambda: rng.uniform(3.0, 6.0),
            setup_s=lambda: rng.uniform(0.1, 2.0),
            cut_at={"after answer"},
            after_answer_s=rng.uniform(0.5, 3.0),
            after_answer_n=rng.randint(1, 3),
            endpoint_s=rng.uniform(0.15, 0.45),
        )
    return LimitedModel(brain, timeout_after_s=interval, setup_s=setup, cut_at=set(rng.sample(CUT_AT, 2)))


def server_restarts(side: str, mode: str, seed: int, rng: random.Random) -> Restarts:
    """How a call on ``side``'s local server has its connections replaced (see the module docstring)."""
    if mode != "cued":
        return Restarts(SCALES[side], seed=seed, refused_resumes=int(side == "gemini"))
    return Restarts(
        SCALES[side],
        seed=seed,
        early=0,
        refused_resumes=int(side == "gemini"),
        cues=("utterance", "answer", "after answer", "utterance"),
        after_answer_s=rng.uniform(0.5, 3.0),
        after_answer_n=rng.randint(1, 3),
        late_transcripts=side == "openai",
        endpoint_s=rng.uniform(0.2, 0.45) if side == "openai" else None,
    )


async def one_call(side: str, index: int, seed: int, summaries: Summaries, speed: float) -> Run:
    rng = random.Random(seed * 1000 + index)
    plan = make_plan(seed * 1000 + index, turns=6)
    mode = MODES[side][index % len(MODES[side])]
    if side == "fake":
        models: list[LimitedModel] = []

        def factory(call: Any) -> BidiAgent:
            models.append(fake_model(plan, rng, mode))
            return BidiAgent(model=models[-1], tools=[end_conversation, lookup], system_prompt="test")

        run = await talk_through(factory, plan, index, summaries, speed)
        return Run(side, mode, run[0], run[1], [s for model in models for s in model.setups])
    restarts = server_restarts(side, mode, seed * 1000 + index, rng)
    async with started(side) as server, LongCallServer(side, server, ToneConversation(plan), restarts) as line:
        result, dropped = await talk_through(line.agent, plan, index, summaries, speed)
    result.problems += [f"{side} server: {violation}" for violation in server.violations]
    return Run(side, mode, result, dropped, line.setups)


async def talk_through(factory: Any, plan: Any, index: int, summaries: Summaries, speed: float) -> tuple[Score, int]:
    """One call through the real app: the caller follows ``plan``; its score and the caller audio dropped."""
    sid = f"CA{index:032d}"
    tap = Tap()
    app = create_app(SETTINGS, agent_factory=factory, observers=[lambda call: tap])
    async with serve_app(app, log_config=None) as base:
        caller = SimulatedCaller(f"ws://{base}/media-stream", call_sid=sid, speed=speed)
        async with caller:
            await caller.connect()
            log = await talk(caller, plan, answer_timeout=25.0)
        for _ in range(100):
            if sid in summaries.dropped:
                break
            await asyncio.sleep(0.05)
    return score(plan, log, tap, caller), summaries.dropped.get(sid, -1)


async def run_side(side: str, restarts: int, concurrency: int, seed: int, summaries: Summaries) -> list[Run]:
    runs: list[Run] = []
    index = 0
    started = time.monotonic()
    while sum(run.score.restarts for run in runs) < restarts:
        batch = [one_call(side, index + k, seed, summaries, 2.0 if side == "fake" else 1.0) for k in range(concurrency)]
        index += concurrency
        runs += await asyncio.gather(*batch)
        total = sum(run.score.restarts for run in runs)
        print(f"  {side}: {len(runs)} calls, {total} restarts, {time.monotonic() - started:.0f} s", file=sys.stderr)
    return runs


def report(title: str, runs: list[Run]) -> None:
    said = sum(run.score.utterances for run in runs)
    whole = sum(run.score.heard_whole_once for run in runs)
    twice = sum(run.score.answered_twice for run in runs)
    split = sum(run.score.split for run in runs)
    restarts = sum(run.score.restarts for run in runs)
    dropped = sum(max(0, run.dropped_chunks) for run in runs)
    cuts = sum(run.score.cuts for run in runs)
    resumed = sum(run.score.resumed for run in runs)
    hung_up = sum(run.score.hung_up_by_bot for run in runs)
    silences = [run.score.longest_silence_s for run in runs]
    setups = [s for run in runs for s in run.setups]
    print(f"\n{title}")
    print(f"  calls {len(runs)}, model connection restarts {restarts}, set-ups {min(setups):.1f}-{max(setups):.1f} s")
    print(f"  caller utterances heard whole and once by the answering connection: {whole} / {said}")
    print(f"  caller utterances answered twice: {twice} (must be 0); split between connections: {split}")
    print(f"  caller audio lost: {dropped} chunks ({dropped * 0.02:.2f} s)")
    print(
        f"  longest silence the caller sat through waiting for the bot: {max(silences):.2f} s "
        f"(median per call {statistics.median(silences):.2f} s)"
    )
    print(f"  answers cut by a restart: {cuts}; picked up again on the new connection: {resumed}")
    print(f"  goodbyes that hung up: {hung_up} / {len(runs)}")
    problems = [problem for run in runs for problem in run.score.problems]
    for problem in problems[:8]:
        print(f"    - {problem}")
    if len(problems) > 8:
        print(f"    ... {len(problems) - 8} more")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", choices=[*MODELS, "all", "both"], default="all", help="one model side, all four, or both: fake, nova"
    )
    parser.add_argument("--restarts", type=int, default=100, help="at least this many restarts per model side")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--without-continuity", action="store_true", help="the bridge as it was before")
    parser.add_argument("--log", type=Path, help="write the calls' INFO log lines to this file")
    args = parser.parse_args()
    os.environ.update(_FAKE_ENV)
    for name in ("NO_PROXY", "no_proxy"):  # loopback past any proxy (websockets honours the proxy variables)
        os.environ[name] = ",".join(filter(None, [os.environ.get(name, ""), "127.0.0.1", "localhost"]))
    logging.basicConfig(level=logging.WARNING)
    summaries = Summaries()
    root = logging.getLogger()
    root.addHandler(summaries)
    logging.getLogger("telephony").setLevel(logging.INFO)  # to the summaries; the console shows errors only
    root.handlers[0].setLevel(logging.ERROR)
    if args.log is not None:
        to_file = logging.FileHandler(args.log, mode="w")
        to_file.setLevel(logging.INFO)
        to_file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        root.addHandler(to_file)
    if args.without_continuity:
        Continuity.attach = lambda self: None  # type: ignore[method-assign]
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print("continuity: " + ("OFF (the bridge before issue 12)" if args.without_continuity else "on"))
    sides = {"all": list(MODELS), "both": ["fake", "nova"]}.get(args.model, [args.model])
    everything: list[Run] = []
    for side in sides:
        concurrency = args.concurrency if side == "fake" else max(1, args.concurrency // 2)
        runs = asyncio.run(run_side(side, args.restarts, concurrency, args.seed, summaries))
        everything += runs
        if len(MODES[side]) > 1:
            for mode in MODES[side]:
                report(f"{side} model, {mode} restarts", [run for run in runs if run.mode == mode])
        report(f"{side} model, all", runs)
    if len(sides) > 1:
        report("overall", everything)
    if summaries.waits:
        print(f"\nheld caller audio: the oldest waited up to {max(summaries.waits):.2f} s before reaching a model")


if __name__ == "__main__":
    main()

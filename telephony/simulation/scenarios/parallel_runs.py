"""``voicebot test --jobs N``: scenario calls in N worker processes at once, reported in file order.

A call takes as long as its conversation and barely uses the processor, so calls side by side finish a folder of
scenarios several times sooner. They run in separate processes, not as tasks of one event loop, because a
scenario's set-up and the agent under test are the user's code, and such code keeps state per process: the
clinic's ``fresh_database`` points ``CLINIC_DB`` at the run's database through the environment, a local model
server is found through environment variables, a sub-agent asks whether stand-ins are active. Each worker
process runs one call at a time, on its own loopback port, in the run's own work folder, with its own
environment; the runs come back to this process, which prints and totals them exactly as a serial run does.

Workers are started fresh (``spawn``), not forked: forking a process that has threads (the recorder's, the
speech synthesizer's) can copy a held lock into the child.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import pickle
import signal
from collections.abc import Callable, Sequence

from telephony.config import Settings
from telephony.simulation.scenarios.results import RunOptions, RunResult, ScenarioResult
from telephony.simulation.scenarios.runner import ScenarioRunner
from telephony.simulation.scenarios.scenario import Scenario

__all__ = ["run_in_workers"]

_worker_runner: ScenarioRunner | None = None
"""The runner of this worker process (set when the worker starts)."""


def run_in_workers(
    scenarios: Sequence[Scenario],
    settings: Settings,
    options: RunOptions,
    jobs: int,
    finished: Callable[[int, ScenarioResult], None],
    quiet_loggers: Sequence[str] = (),
) -> list[ScenarioResult]:
    """Every run of every scenario, ``jobs`` at a time; ``finished(position, result)`` is called in file order,
    for each scenario once its runs and every earlier scenario's are done."""
    results = [ScenarioResult(scenario) for scenario in scenarios]
    runs = [(position, index) for position, scenario in enumerate(scenarios) for index in range(1, scenario.runs + 1)]
    if not runs:
        return results
    context = multiprocessing.get_context("spawn")
    workers = max(1, min(jobs, len(runs)))
    with context.Pool(workers, initializer=_start_worker, initargs=(settings, options, tuple(quiet_loggers))) as pool:
        jobs_in_order = [(scenarios[position], index) for position, index in runs]
        for (position, index), run in zip(runs, pool.imap(_run_one, jobs_in_order, chunksize=1), strict=True):
            results[position].runs.append(run)
            if index == scenarios[position].runs:
                finished(position, results[position])
    return results


def _start_worker(settings: Settings, options: RunOptions, quiet_loggers: tuple[str, ...]) -> None:
    """In each worker: Ctrl-C is the parent's to handle (it ends the workers), and logs as quiet as the parent's."""
    global _worker_runner
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in quiet_loggers:
        logging.getLogger(name).setLevel(logging.ERROR)
    _worker_runner = ScenarioRunner(settings, options)


def _run_one(job: tuple[Scenario, int]) -> RunResult:
    """One call in this worker; never raises, so one broken run cannot stop the others."""
    scenario, index = job
    assert _worker_runner is not None, "a worker runs calls only after _start_worker"
    try:
        run = asyncio.run(_worker_runner.run_once(scenario, index))
    except BaseException as error:  # noqa: BLE001 - reported as the run's failure, in the parent
        return RunResult(index, error=f"the worker running this call failed: {type(error).__name__}: {error}")
    if run.outcome is not None:
        run.outcome.state = {}  # set-up's own objects (a database connection, say) stay here: they may not pickle
    try:
        pickle.dumps(run)
    except Exception:  # noqa: BLE001 - the verdict and figures get back even if some detail cannot
        run.outcome = None
    return run

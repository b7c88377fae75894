"""Shared fixtures: the real app on a loopback port, with a scripted model and fake Twilio peers."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from strands.bidi import BidiAgent

from agent.tools import end_conversation
from telephony.app import create_app
from telephony.bridge.observer import ObserverFactory
from telephony.call_info import CallInfo
from telephony.config import Settings
from telephony.simulation.local_server import serve_app
from tests.fakes.settings import TEST_SETTINGS

from .fakes.model import ScriptedModel, Step
from .fakes.rest import FakeCallControl
from .fakes.twilio import FakeTwilioCall

pytest_plugins = [
    "telephony.simulation.local_nova.pytest_plugin",  # the `local_nova` fixture
    "telephony.simulation.local_gemini.pytest_plugin",  # the `local_gemini` fixture
    "telephony.simulation.local_openai.pytest_plugin",  # the `local_openai` fixture
]

# boto3 must never probe the instance-metadata address; tests touch no network but loopback.
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"


@dataclass
class Harness:
    """One running server plus what the tests need to drive and inspect it."""

    base: str
    app: Any
    hangup: FakeCallControl | None
    models: list[ScriptedModel] = field(default_factory=list)
    calls: list[CallInfo] = field(default_factory=list)

    @property
    def ws_url(self) -> str:
        return f"ws://{self.base}/media-stream"

    def caller(self, **kwargs: Any) -> FakeTwilioCall:
        return FakeTwilioCall(self.ws_url, **kwargs)

    @property
    def model(self) -> ScriptedModel:
        return self.models[-1]


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Put logging back after each test.

    ``voicebot`` commands install a stderr handler (``configure_logging``); under pytest that stderr is a
    capture file closed after the test, and later tests' log lines would hit it ("I/O operation on closed
    file"). ``voicebot test`` and ``voicebot replay --offline`` quiet named loggers (``telephony`` to ERROR): put
    every logger's level back too, or a later test's ``caplog`` sees nothing, depending on which tests ran
    before it in the same process (pytest-xdist orders them differently from a serial run).
    """
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, logger in named_loggers().items():  # to the levels before any test (module fixtures run commands too)
        if logger.level != (before := LOGGER_LEVELS.get(name, logging.NOTSET)):  # a logger made since inherited
            logger.setLevel(before)


def named_loggers() -> dict[str, logging.Logger]:
    return {name: lg for name, lg in logging.Logger.manager.loggerDict.items() if isinstance(lg, logging.Logger)}


LOGGER_LEVELS = {name: logger.level for name, logger in named_loggers().items()}
"""Each named logger's level when the tests were collected."""


serve = serve_app
"""The real app on an ephemeral loopback port, in the test's event loop."""


ModelMaker = Callable[[], Any]
"""Builds the call's model: a ScriptedModel, or any BidiModel (``tools`` gives the agent more tools)."""


@asynccontextmanager
async def harness(
    script: list[Step] | ModelMaker,
    settings: Settings = TEST_SETTINGS,
    hangup: FakeCallControl | None = None,
    tools: list[Any] | None = None,
    observers: Sequence[ObserverFactory] = (),
    **settings_overrides: Any,
) -> AsyncIterator[Harness]:
    """A server whose agent factory builds a ``ScriptedModel`` per call."""
    settings = replace(settings, **settings_overrides)
    state: dict[str, Harness] = {}

    def factory(call: CallInfo) -> BidiAgent:
        model = script() if callable(script) else ScriptedModel(list(script))
        state["h"].models.append(model)
        state["h"].calls.append(call)
        return BidiAgent(model=model, tools=[end_conversation, *(tools or [])], system_prompt="test")

    app = create_app(settings, agent_factory=factory, call_control=hangup, observers=observers)
    async with serve(app) as base:
        baseline = set(asyncio.all_tasks())
        state["h"] = Harness(base=base, app=app, hangup=hangup)
        yield state["h"]
        leftover = await settle_tasks(baseline)
        assert not leftover, f"tasks still running after the calls ended: {leftover}"
        assert not app.state.sessions
        models = state["h"].models
        assert all(getattr(m, "stopped", True) or not getattr(m, "started", False) for m in models), "an agent ran on"


async def settle_tasks(baseline: set[asyncio.Task[Any]], timeout: float = 3.0) -> set[asyncio.Task[Any]]:
    """Tasks started since ``baseline`` that are still alive after ``timeout`` (should be none)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        extra = {task for task in asyncio.all_tasks() if task not in baseline and not task.done()}
        extra.discard(asyncio.current_task())  # type: ignore[arg-type]
        if not extra or loop.time() > deadline:
            return extra
        await asyncio.sleep(0.05)


@pytest.fixture
def settings() -> Settings:
    return TEST_SETTINGS


SLOW_KINDS: dict[str, tuple[str, ...]] = {
    "slow": (
        "operations/",
        "test_cli.py::test_serve_model_flag_reaches_the_default_agent",
        "simulation/test_local_openai.py::test_voicebot_serve_",
        "simulation/test_own_agent.py::test_an_async_phone_call_test_runs_",
        "simulation/test_own_agent.py::test_voicebot_test_finds_mybot_",
        "twilio/test_local_twilio_api.py::test_in_its_own_process_",
    ),
    "browser": (
        "console/test_console_browser.py",
        "console/test_console_pages.py",
        "console/test_console_watch.py",
        "console/test_console_outcomes.py",
    ),
    "exclusive": ("operations/test_serve_as_users_run_it.py",),
    "emulator": (
        "bridge/test_openai_calls.py",
        "bridge/test_warm_transfer_models.py",  # its fixture picks the model's server by name (getfixturevalue)
        "simulation/test_local_nova.py",
        "simulation/test_local_openai.py",
        "simulation/test_long_calls_nova.py",
        "simulation/test_scenarios.py::test_the_brain_also_plays_on_the_local_nova_emulator",
        "simulation/test_scenarios.py::test_the_brain_also_plays_on_the_local_openai_and_gemini_servers",
    ),
    "realtime": (
        "bridge/test_early_barge_in.py::test_a_",
        "bridge/test_early_barge_in.py::test_one_",
        "bridge/test_early_barge_in.py::test_noise_",
        "bridge/test_dead_air.py",
        "bridge/test_long_calls.py",
        "simulation/test_demo.py",
        "simulation/test_long_calls_models.py",
        "simulation/test_long_calls_nova.py",
        "simulation/test_own_agent.py",
        "simulation/test_scenarios.py",
        "simulation/test_scenario_jobs.py",
        "simulation/test_noisy_line.py",
        "simulation/test_scenario_from_recording.py",
    ),
}
"""Test ids under tests/ (prefixes) for each marker in pyproject.toml; tests using a local model server's fixture
(``local_nova``, ``local_openai``, ``local_gemini``) are ``emulator``."""

FIXTURE_KINDS = {"local_nova": "emulator", "local_openai": "emulator", "local_gemini": "emulator"}

SHARED_FIXTURES = ("passing_run", "recognizer", "prism")
"""Module-scoped fixtures that cost seconds (a scenario run, a speech recognizer): under pytest-xdist the tests
using one stay on one worker, so it is made once; every other test goes to whichever worker is free
(``--dist loadgroup``)."""

WORKERS_PER_CORE = 3
"""``-n auto``: most of the suite waits on the pace of a phone line, not on the processor. On a 2-core machine the
suite took 6 min 29 s at two workers per core, 4 min 40 s at three and 3 min 53 s at four; but at four, the bursts
when several workers start a browser or a model client at once made a run or two in three fail a timing check
(two failures per run in three runs on a fresh 2-core machine, 2026-12-02). Three is the price of a green CI. The
tests that load the whole machine by design run alone (``exclusive``)."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Three workers per core (at least four): a call streamed in real time leaves its core idle most of the time."""
    return max(4, WORKERS_PER_CORE * (os.cpu_count() or 1))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow kinds from one table, so a tier is a ``-m`` expression and no test file has to say so."""
    for item in items:
        for kind in kinds_of(item.nodeid.removeprefix("tests/"), getattr(item, "fixturenames", ())):
            item.add_marker(kind)
    items.sort(key=start_rank)


START_FIRST = ("exclusive", "realtime", "emulator", "browser", "slow")
"""The kinds that run longest, in the order they start: pytest-xdist hands out tests in collection order, so a
half-minute call collected last would start last and run on alone while the other workers sit idle."""


def start_rank(item: pytest.Item) -> int:
    """Where ``item`` starts (see ``START_FIRST``); the sort is stable, so a file's own order holds within a kind."""
    return next((rank for rank, kind in enumerate(START_FIRST) if item.get_closest_marker(kind)), len(START_FIRST))


def pytest_itemcollected(item: pytest.Item) -> None:
    """Group the tests of each of ``SHARED_FIXTURES`` (pytest-xdist reads the group before any
    ``pytest_collection_modifyitems`` of ours runs)."""
    for fixture in SHARED_FIXTURES:
        if fixture in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(fixture))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Under pytest-xdist, an ``exclusive`` test runs with no other test at the same time (see machine_share)."""
    with machine_share(alone=item.get_closest_marker("exclusive") is not None):
        yield


@contextmanager
def machine_share(alone: bool) -> Iterator[None]:
    """A readers-writer lock across the workers of one run: every test holds the machine shared, an exclusive
    one (fifty calls that load the whole machine by design) holds it alone.

    Both go through a turnstile first, so a waiting exclusive test is not starved by the others' next tests.
    Outside xdist there is one process and nothing to share."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        yield
        return
    folder = Path(tempfile.gettempdir()) / f"voicebot-tests-{run}"
    folder.mkdir(exist_ok=True)
    with open(folder / "turnstile", "a") as turnstile, open(folder / "machine", "a") as machine:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(machine, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield  # both locks go with the files


def kinds_of(test_id: str, fixtures: Sequence[str]) -> set[str]:
    """The markers a test gets: by where it is (``SLOW_KINDS``) and by the fixtures it uses."""
    kinds = {kind for kind, prefixes in SLOW_KINDS.items() if test_id.startswith(prefixes)}
    return kinds | {kind for fixture, kind in FIXTURE_KINDS.items() if fixture in fixtures}

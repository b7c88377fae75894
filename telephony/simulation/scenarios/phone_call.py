"""The ``phone_call`` pytest fixture: the scenario runner inside your own test suite.

Installed with voicebot (a ``pytest11`` entry point), so any project that depends on it can write::

    async def test_booking(phone_call):
        call = await phone_call("scenarios/booking.yaml")          # a scenario file...
        assert call.passed, call.report()
        assert call.tool_calls[0]["name"] == "find_open_slots"     # ...plus assertions of your own

    async def test_goodbye(phone_call):
        call = await phone_call({                                   # ...or a scenario written inline
            "agent": "mybot:make_agent",
            "caller": [{"say": "Goodbye."}],
            "brain": [
                {"on": "caller", "say": "Bye!", "then": [{"name": "end_conversation", "input": {"reason": "bye"}}]}
            ],
            "expect": {"hang_up": {"by": "bot"}},
        })
        assert call.passed, call.report()

Each call is a real call through the app on a loopback port, as ``voicebot test`` places it; its recording and
its work folder (``setup`` data) are kept under the test's ``tmp_path``. An ``async def`` test using the
fixture runs with pytest alone: when no async plugin (pytest-asyncio, anyio) has taken the test, this plugin
runs it in an event loop of its own (:func:`pytest_pyfunc_call`), so a project needs no asyncio set-up of its
own. ``phone_call.run(...)`` does the same from a plain test. The folder pytest runs in is importable, as it is
for ``voicebot test``, so ``agent="mybot:make_agent"`` finds ``mybot.py`` there. Nothing heavy is imported
until a test uses the fixture.
"""

from __future__ import annotations

import asyncio
import inspect
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from telephony.simulation.scenarios.runner import RunResult, ScenarioResult


class PhoneCallResult:
    """A finished scenario: its verdict (over all its ``runs``), what failed, and what happened on the last call."""

    def __init__(self, scenario: ScenarioResult) -> None:
        self.scenario = scenario
        self.result: RunResult = scenario.runs[-1]
        self.name = scenario.scenario.name

    @property
    def passed(self) -> bool:
        return self.scenario.passed

    @property
    def problems(self) -> list[str]:
        many = len(self.scenario.runs) > 1
        return [f"run {run.index}: {p}" if many else p for run in self.scenario.runs for p in run.problems()]

    @property
    def recording(self) -> Path | None:
        return self.result.recording

    @property
    def transcript(self) -> dict[str, Any]:
        return self.result.outcome.transcript if self.result.outcome else {}

    @property
    def bot_turns(self) -> list[str]:
        return [turn["text"] for turn in self.result.outcome.bot_turns] if self.result.outcome else []

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return self.result.outcome.tool_calls if self.result.outcome else []

    @property
    def workdir(self) -> Path | None:
        return self.result.outcome.workdir if self.result.outcome else None

    def report(self) -> str:
        """Why it failed, one expectation a line (for ``assert call.passed, call.report()``)."""
        lines = [f"scenario {self.name!r}: {'passed' if self.passed else 'FAILED'} ({self.result.model})"]
        lines += [f"  {problem}" for problem in self.problems]
        lines.append(f"  recording: {self.recording}")
        return "\n".join(lines)


class PhoneCall:
    """The fixture's value: ``await phone_call(scenario, agent=..., real_model=...)``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._inline = 0

    async def __call__(
        self, scenario: str | Path | dict[str, Any], agent: str | None = None, real_model: bool = False
    ) -> PhoneCallResult:
        from telephony.config import load_settings
        from telephony.simulation.scenarios.preflight import check_scenarios
        from telephony.simulation.scenarios.runner import RunOptions, ScenarioRunner
        from telephony.simulation.scenarios.scenario_file import read_scenario

        path = self._write(scenario) if isinstance(scenario, dict) else Path(scenario)
        options = RunOptions(
            agent=agent, real_model=real_model, out=self.root / "recordings", workdirs=self.root / "work"
        )
        settings = load_settings(dotenv=None)
        checked = await check_scenarios([read_scenario(path)], options, settings)  # every mistake, before the call
        for notice in checked.notices:
            warnings.warn(notice, UserWarning, stacklevel=2)
        result = await ScenarioRunner(settings, options).run_scenario(checked.scenarios[0])
        return PhoneCallResult(result)

    def run(
        self, scenario: str | Path | dict[str, Any], agent: str | None = None, real_model: bool = False
    ) -> PhoneCallResult:
        """The same, from a test that is not async."""
        return asyncio.run(self(scenario, agent, real_model))

    def _write(self, scenario: dict[str, Any]) -> Path:
        import yaml

        self._inline += 1
        path = self.root / f"inline-scenario-{self._inline}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(scenario, sort_keys=False), encoding="utf-8")
        return path


@pytest.fixture
def phone_call(tmp_path: Path) -> PhoneCall:
    """Place scenario calls against an agent: see this module's docstring."""
    return PhoneCall(tmp_path / "phone_call")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run an ``async def`` test that uses ``phone_call`` when no async plugin took it (pytest alone cannot).

    pytest-asyncio (its auto mode, or a test marked ``asyncio``) hands pytest a synchronous wrapper by now, and
    anyio runs tests that take ``anyio_backend``; either way this leaves the test to them."""
    test = pyfuncitem.obj
    if "phone_call" not in pyfuncitem.fixturenames or not inspect.iscoroutinefunction(test):
        return None
    if "anyio_backend" in pyfuncitem.funcargs:
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(test(**arguments))
    return True

"""JUnit XML for CI (``voicebot test --junit FILE``): one test case per scenario, its failures as messages.

The format most CI systems read (GitHub Actions reporters, GitLab, Jenkins): ``<testsuites>`` holding one
``<testsuite>`` per scenario folder, ``<testcase name classname time>`` with a ``<failure>`` when the
scenario failed; ``<system-out>`` says which model played the model's part and where the recordings are.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from telephony.simulation.scenarios.results import ScenarioResult


def junit_xml(results: list[ScenarioResult]) -> str:
    suites: dict[str, list[ScenarioResult]] = defaultdict(list)
    for result in results:
        suites[str(result.scenario.path.parent)].append(result)
    root = ET.Element("testsuites", name="voicebot test", tests=str(len(results)))
    root.set("failures", str(sum(not result.passed for result in results)))
    root.set("time", f"{sum(result.seconds for result in results):.3f}")
    for folder, members in suites.items():
        suite = ET.SubElement(root, "testsuite", name=folder, tests=str(len(members)))
        suite.set("failures", str(sum(not result.passed for result in members)))
        suite.set("time", f"{sum(result.seconds for result in members):.3f}")
        for result in members:
            _case(suite, result)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _case(suite: ET.Element, result: ScenarioResult) -> None:
    scenario = result.scenario
    case = ET.SubElement(suite, "testcase", name=scenario.name, classname=scenario.path.stem)
    case.set("file", str(scenario.path))
    case.set("time", f"{result.seconds:.3f}")
    if not result.passed:
        problems = [
            f"run {run.index}: {problem}" if len(result.runs) > 1 else problem
            for run in result.runs
            for problem in run.problems()
        ]
        failure = ET.SubElement(case, "failure", type="ExpectationFailed")
        failure.set("message", problems[0] if problems else "not enough runs passed")
        failure.text = "\n".join(
            [f"{result.passes} of {len(result.runs)} run(s) passed; {scenario.passes_needed} needed", *problems]
        )
    lines = [f"model: {result.model}"]
    lines += [
        f"run {run.index}: {'pass' if run.passed else 'fail'} in {run.seconds:.1f} s, recording {run.recording}"
        for run in result.runs
    ]
    ET.SubElement(case, "system-out").text = "\n".join(lines)


def write_junit(results: list[ScenarioResult], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(results), encoding="utf-8")

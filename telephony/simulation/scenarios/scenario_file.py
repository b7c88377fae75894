"""Scenario files: finding them and reading one (YAML) into a checked :class:`Scenario`.

Every mistake is reported as ``file:line: field: what is wrong`` before any call is placed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agent.scripted.brain import TRIGGERS, BrainScript, BrainTurn, ToolStep
from telephony.simulation.scenarios.field_reader import FieldReader
from telephony.simulation.scenarios.line_field import read_line
from telephony.simulation.scenarios.located_yaml import YamlError, load
from telephony.simulation.scenarios.scenario import (
    CallerStep,
    Check,
    Expectations,
    GoalCaller,
    Said,
    Scenario,
    ScenarioError,
    ToolExpectation,
)

__all__ = ["SUFFIXES", "find_scenarios", "load_scenario"]

SUFFIXES = (".yaml", ".yml")
_DIGITS = re.compile(r"[0-9*#]+")


def find_scenarios(paths: Iterable[Path]) -> list[Path]:
    """Scenario files among ``paths`` (folders are searched recursively, sorted); a missing path is an error."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(item for item in path.rglob("*") if item.suffix in SUFFIXES and item.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            raise ScenarioError(f"{path}: no such file or folder")
    return found


def load_scenario(path: Path) -> Scenario:
    """Read and check one scenario file; raises ``ScenarioError`` naming the file, line and field."""
    try:
        document = load(path)
    except YamlError as error:
        raise ScenarioError(str(error)) from None
    return _Parser(path).scenario(document)


class _Parser(FieldReader):
    TOP = (
        "name description agent call greeting setup caller brain expect runs pass_threshold timeout_s patience_s line"
    ).split()

    def scenario(self, document: Any) -> Scenario:
        if document is None:
            raise ScenarioError(f"{self.file}:1: the file is empty: a scenario needs at least 'caller:'")
        top = self.mapping(document, document, None, "scenario", self.TOP)
        if "caller" not in top:
            raise self.fail(top, None, "caller", "is required: what the caller says and does")
        scenario = Scenario(path=self.path, name=self.text(top, "name", "scenario", self.path.stem))
        scenario.description = self.text(top, "description", "scenario", "")
        if "agent" in top:
            scenario.agent = self.spec(top, "agent", "scenario")
        if "greeting" in top:
            scenario.greeting = self.text(top, "greeting", "scenario")
        self.call(top, scenario)
        scenario.setup = [
            self.check(item, top["setup"], index, f"setup[{index}]")
            for index, item in enumerate(self.sequence(top.get("setup", []), top, "setup", "setup"))
        ]
        self.caller(top, scenario)
        if "brain" in top:
            scenario.brain = self.brain(top["brain"], top)
        if "expect" in top:
            scenario.expect = self.expectations(top["expect"], top)
        scenario.runs = int(self.number(top, "runs", "scenario", 1, low=1, integer=True))
        threshold = self.number(top, "pass_threshold", "scenario", 1.0)
        if threshold > 1:
            raise self.fail(
                top, "pass_threshold", "pass_threshold", "is the share of runs that must pass, 0 to 1 (e.g. 0.8)"
            )
        scenario.passes_needed = max(1, -(-round(threshold * scenario.runs * 1000) // 1000))
        scenario.timeout_s = self.number(top, "timeout_s", "scenario", 120.0, low=1.0)
        scenario.patience_s = self.number(top, "patience_s", "scenario", 10.0, low=0.5)
        if "line" in top:
            scenario.line = read_line(self, top, "line")
        return scenario

    def call(self, top: dict[str, Any], scenario: Scenario) -> None:
        if "call" not in top:
            return
        call = self.mapping(top["call"], top, "call", "call", ["from", "to", "parameters"])
        scenario.call_from = self.text(call, "from", "call", scenario.call_from)
        scenario.call_to = self.text(call, "to", "call", scenario.call_to)
        if "parameters" in call:
            parameters = call["parameters"]
            if not isinstance(parameters, dict) or not all(
                isinstance(v, (str, int, float)) for v in parameters.values()
            ):
                raise self.fail(call, "parameters", "call.parameters", "expected name: value pairs of text")
            scenario.parameters = {str(k): str(v) for k, v in parameters.items()}

    def check(self, item: Any, container: Any, index: int, name: str) -> Check:
        entry = self.mapping(item, container, index, name, ["call", "with"])
        arguments = entry.get("with", {})
        if not isinstance(arguments, dict):
            raise self.fail(entry, "with", f"{name}.with", "expected keyword arguments (name: value lines)")
        return Check(self.spec(entry, "call", name), dict(arguments), self.where(container, index, name))

    # --- the caller -------------------------------------------------------------------------------

    def caller(self, top: dict[str, Any], scenario: Scenario) -> None:
        value = top["caller"]
        if isinstance(value, dict):
            if "recording" in value:
                entry = self.mapping(value, top, "caller", "caller", ["recording"])
                recording = self.path.parent / self.text(entry, "recording", "caller")
                if not recording.exists():
                    raise self.fail(entry, "recording", "caller.recording", f"{recording} does not exist")
                scenario.recording = recording
                return
            scenario.goal = self.goal(value, top)
            return
        steps = self.sequence(value, top, "caller", "caller")
        if not steps:
            raise self.fail(top, "caller", "caller", "is empty: give the caller at least one step")
        scenario.caller = [self.step(item, steps, index) for index, item in enumerate(steps)]

    def step(self, item: Any, steps: list[Any], index: int) -> CallerStep:
        name = f"caller[{index}]"
        where = self.where(steps, index, name)
        if item == "hang_up":
            return CallerStep("hang_up", where=where)
        entry = self.mapping(
            item, steps, index, name, ["say", "play", "press", "silence_s", "hang_up", "over_the_bot_ms", "wait"]
        )
        actions = [key for key in ("say", "play", "press", "silence_s", "hang_up") if key in entry]
        if len(actions) != 1:
            raise self.fail(steps, index, name, "needs exactly one of say, play, press, silence_s, hang_up")
        wait = self.flag(entry, "wait", name, True)
        over = entry.get("over_the_bot_ms")
        if over is not None:
            if actions[0] not in ("say", "play"):
                raise self.fail(
                    entry, "over_the_bot_ms", f"{name}.over_the_bot_ms", "only 'say' or 'play' can talk over the bot"
                )
            over = int(self.number(entry, "over_the_bot_ms", name, 0, integer=True))
        action = actions[0]
        if action == "say":
            text = self.text(entry, "say", name).strip()
            if not text:
                raise self.fail(entry, "say", f"{name}.say", "is empty: give the words the caller says")
            return CallerStep("say", text=text, over_the_bot_ms=over, wait=wait, where=where)
        if action == "play":
            audio = self.path.parent / self.text(entry, "play", name)
            if audio.suffix.lower() != ".wav" or not audio.is_file():
                raise self.fail(entry, "play", f"{name}.play", f"{audio} is not a WAV file next to the scenario")
            return CallerStep("play", audio=audio, over_the_bot_ms=over, wait=wait, where=where)
        if action == "press":
            digits = self.text(entry, "press", name)
            if not _DIGITS.fullmatch(digits):
                raise self.fail(entry, "press", f"{name}.press", f"keypad digits are 0-9, * and #, got {digits!r}")
            return CallerStep("press", text=digits, wait=wait, where=where)
        if action == "silence_s":
            return CallerStep("silence", seconds=self.number(entry, "silence_s", name, 0.0), wait=False, where=where)
        if entry["hang_up"] is not True:
            raise self.fail(entry, "hang_up", f"{name}.hang_up", "write '- hang_up' or 'hang_up: true'")
        return CallerStep("hang_up", wait=wait, where=where)

    def goal(self, value: dict[str, Any], top: dict[str, Any]) -> GoalCaller:
        entry = self.mapping(value, top, "caller", "caller", ["goal", "persona", "opening", "max_turns", "offline"])
        rules: list[tuple[str, str]] = []
        done_when = ""
        if "offline" in entry:
            offline = self.mapping(entry["offline"], entry, "offline", "caller.offline", ["replies", "done_when"])
            for index, rule in enumerate(
                self.sequence(offline.get("replies", []), offline, "replies", "caller.offline.replies")
            ):
                name = f"caller.offline.replies[{index}]"
                rule = self.mapping(rule, offline["replies"], index, name, ["when", "say"])
                rules.append((self.regex(rule, "when", name).pattern, self.text(rule, "say", name)))
            if "done_when" in offline:
                done_when = self.regex(offline, "done_when", "caller.offline").pattern
        return GoalCaller(
            goal=self.text(entry, "goal", "caller"),
            persona=self.text(entry, "persona", "caller", ""),
            opening=self.text(entry, "opening", "caller", ""),
            max_turns=int(self.number(entry, "max_turns", "caller", 8, low=1, integer=True)),
            rules=tuple(rules),
            done_when=done_when,
        )

    def brain(self, value: Any, top: dict[str, Any]) -> BrainScript:
        otherwise = ""
        if isinstance(value, dict):
            value = self.mapping(value, top, "brain", "brain", ["turns", "otherwise"])
            otherwise = self.text(value, "otherwise", "brain", "")
            container, value = value, value.get("turns", [])
            turns = self.sequence(value, container, "turns", "brain.turns")
        else:
            turns = self.sequence(value, top, "brain", "brain")
        return BrainScript(tuple(self.brain_turn(item, turns, index) for index, item in enumerate(turns)), otherwise)

    def brain_turn(self, item: Any, turns: list[Any], index: int) -> BrainTurn:
        name = f"brain[{index}]"
        entry = self.mapping(
            item, turns, index, name, ["on", "key", "contains", "heard", "tools", "say", "then", "if_unavailable"]
        )
        on = self.text(entry, "on", name)
        if on not in TRIGGERS:
            raise self.fail(entry, "on", f"{name}.on", f"expected one of {', '.join(TRIGGERS)}, got {on!r}")
        if on == "text" and not entry.get("contains"):
            raise self.fail(
                entry, "on", f"{name}.contains", "an 'on: text' turn needs 'contains:' (text the input holds)"
            )
        if not any(key in entry for key in ("say", "tools", "then")):
            raise self.fail(turns, index, name, "does nothing: give it say, tools or then")
        return BrainTurn(
            on=on,
            key=self.text(entry, "key", name, ""),
            contains=self.text(entry, "contains", name, ""),
            heard=self.text(entry, "heard", name, ""),
            tools=self.tool_steps(entry, "tools", name),
            say=self.text(entry, "say", name, ""),
            then=self.tool_steps(entry, "then", name),
            if_unavailable=self.text(entry, "if_unavailable", name, BrainTurn.if_unavailable),
        )

    def tool_steps(self, entry: dict[str, Any], key: str, name: str) -> tuple[ToolStep, ...]:
        steps = []
        for index, item in enumerate(self.sequence(entry.get(key, []), entry, key, f"{name}.{key}")):
            field_name = f"{name}.{key}[{index}]"
            if isinstance(item, str):
                steps.append(ToolStep(item))
                continue
            tool = self.mapping(item, entry[key], index, field_name, ["name", "input"])
            arguments = tool.get("input", {})
            if not isinstance(arguments, dict):
                raise self.fail(
                    tool, "input", f"{field_name}.input", "expected the tool's arguments (name: value lines)"
                )
            steps.append(ToolStep(self.text(tool, "name", field_name), dict(arguments)))
        return tuple(steps)

    # --- expectations -----------------------------------------------------------------------------

    EXPECT = (
        "bot_says bot_never_says no_apology tools tools_in_order no_tools transfer hang_up barge_in latency "
        "duration checks judge keys"
    ).split()

    def expectations(self, value: Any, top: dict[str, Any]) -> Expectations:
        entry = self.mapping(value, top, "expect", "expect", self.EXPECT)
        expect = Expectations()
        for index, item in enumerate(self.sequence(entry.get("bot_says", []), entry, "bot_says", "expect.bot_says")):
            expect.says.append(self.said(item, entry["bot_says"], index, f"expect.bot_says[{index}]"))
        for index, item in enumerate(
            self.sequence(entry.get("bot_never_says", []), entry, "bot_never_says", "expect.bot_never_says")
        ):
            expect.never_says.append(self.said(item, entry["bot_never_says"], index, f"expect.bot_never_says[{index}]"))
        if self.flag(entry, "no_apology", "expect", False):
            expect.no_apology = self.where(entry, "no_apology", "expect.no_apology")
        for index, item in enumerate(self.sequence(entry.get("tools", []), entry, "tools", "expect.tools")):
            name = f"expect.tools[{index}]"
            if isinstance(item, str):
                item = {"name": item}
            tool = self.mapping(item, entry["tools"], index, name, ["name", "input"])
            arguments = tool.get("input", {})
            if not isinstance(arguments, dict):
                raise self.fail(tool, "input", f"{name}.input", "expected the arguments to match (name: value lines)")
            expect.tools.append(
                ToolExpectation(self.text(tool, "name", name), dict(arguments), self.where(entry["tools"], index, name))
            )
        expect.tools_in_order = self.flag(entry, "tools_in_order", "expect", True)
        if "tools" in entry:
            expect.tools_where = self.where(entry, "tools", "expect.tools")
        for index, item in enumerate(self.sequence(entry.get("no_tools", []), entry, "no_tools", "expect.no_tools")):
            if not isinstance(item, str):
                raise self.fail(entry["no_tools"], index, f"expect.no_tools[{index}]", "expected a tool name")
            expect.no_tools.append((item, self.where(entry["no_tools"], index, f"expect.no_tools[{index}]")))
        if "transfer" in entry:
            transfer = entry["transfer"]
            if not isinstance(transfer, (bool, str)):
                raise self.fail(entry, "transfer", "expect.transfer", "expected true, false or the destination")
            expect.transfer = (transfer, self.where(entry, "transfer", "expect.transfer"))
        self.hang_up(entry, expect)
        if "keys" in entry:
            keys = self.text(entry, "keys", "expect")
            if not _DIGITS.fullmatch(keys):
                raise self.fail(entry, "keys", "expect.keys", f"keypad digits are 0-9, * and #, got {keys!r}")
            expect.keys = (keys, self.where(entry, "keys", "expect.keys"))
        self.barge_in(entry, expect)
        self.latency(entry, expect)
        if "duration" in entry:
            duration = self.mapping(entry["duration"], entry, "duration", "expect.duration", ["max_s", "min_s"])
            if "max_s" in duration:
                expect.duration_max_s = (
                    self.number(duration, "max_s", "expect.duration", 0),
                    self.where(duration, "max_s", "expect.duration.max_s"),
                )
            if "min_s" in duration:
                expect.duration_min_s = (
                    self.number(duration, "min_s", "expect.duration", 0),
                    self.where(duration, "min_s", "expect.duration.min_s"),
                )
        checks = self.sequence(entry.get("checks", []), entry, "checks", "expect.checks")
        expect.checks = [
            self.check(item, checks, index, f"expect.checks[{index}]") for index, item in enumerate(checks)
        ]
        if "judge" in entry:
            self.judge(entry, expect)
        return expect

    def said(self, item: Any, container: Any, index: int, name: str) -> Said:
        if isinstance(item, str):
            item = {"contains": item}
            entry: dict[str, Any] = item
        else:
            entry = self.mapping(item, container, index, name, ["contains", "matches", "turn"])
        if ("contains" in entry) == ("matches" in entry):
            raise self.fail(container, index, name, "needs one of contains (text) or matches (a regular expression)")
        turn = None
        if "turn" in entry:
            turn = int(self.number(entry, "turn", name, 1, low=1, integer=True))
        where = self.where(container, index, name)
        if "matches" in entry:
            pattern = self.regex(entry, "matches", name)
            return Said(pattern, pattern.pattern, True, turn, where)
        text = self.text(entry, "contains", name)
        return Said(re.compile(re.escape(text), re.IGNORECASE), text, False, turn, where)

    def hang_up(self, entry: dict[str, Any], expect: Expectations) -> None:
        if "hang_up" not in entry:
            return
        hang_up = self.mapping(entry["hang_up"], entry, "hang_up", "expect.hang_up", ["by", "within_s"])
        if "by" in hang_up:
            by = self.text(hang_up, "by", "expect.hang_up")
            if by not in ("bot", "caller", "server"):
                raise self.fail(hang_up, "by", "expect.hang_up.by", f"expected bot, caller or server, got {by!r}")
            expect.hang_up_by = (by, self.where(hang_up, "by", "expect.hang_up.by"))
        if "within_s" in hang_up:
            expect.hang_up_within_s = (
                self.number(hang_up, "within_s", "expect.hang_up", 0),
                self.where(hang_up, "within_s", "expect.hang_up.within_s"),
            )

    def barge_in(self, entry: dict[str, Any], expect: Expectations) -> None:
        if "barge_in" not in entry:
            return
        barge = self.mapping(
            entry["barge_in"],
            entry,
            "barge_in",
            "expect.barge_in",
            ["clear_within_ms", "nothing_stale", "max_false_clears"],
        )
        if "max_false_clears" in barge:
            expect.barge_in.max_false_clears = (
                int(self.number(barge, "max_false_clears", "expect.barge_in", 0, integer=True)),
                self.where(barge, "max_false_clears", "expect.barge_in.max_false_clears"),
            )
        if "clear_within_ms" in barge:
            expect.barge_in.clear_within_ms = (
                self.number(barge, "clear_within_ms", "expect.barge_in", 0),
                self.where(barge, "clear_within_ms", "expect.barge_in.clear_within_ms"),
            )
        if self.flag(barge, "nothing_stale", "expect.barge_in", False):
            expect.barge_in.nothing_stale = self.where(barge, "nothing_stale", "expect.barge_in.nothing_stale")

    def latency(self, entry: dict[str, Any], expect: Expectations) -> None:
        if "latency" not in entry:
            return
        latency = self.mapping(
            entry["latency"], entry, "latency", "expect.latency", ["turn_max_s", "p50_max_s", "max_s"]
        )
        for key, attribute in (
            ("turn_max_s", "turn_latency_max_s"),
            ("p50_max_s", "latency_p50_max_s"),
            ("max_s", "latency_max_s"),
        ):
            if key in latency:
                setattr(
                    expect,
                    attribute,
                    (self.number(latency, key, "expect.latency", 0), self.where(latency, key, f"expect.latency.{key}")),
                )

    def judge(self, entry: dict[str, Any], expect: Expectations) -> None:
        judge = self.mapping(entry["judge"], entry, "judge", "expect.judge", ["rubric"])
        rubric = []
        items = self.sequence(judge.get("rubric", []), judge, "rubric", "expect.judge.rubric")
        for index, item in enumerate(items):
            name = f"expect.judge.rubric[{index}]"
            criterion = self.mapping(item, items, index, name, ["criterion", "offline"])
            offline = self.regex(criterion, "offline", name).pattern if "offline" in criterion else ""
            rubric.append((self.text(criterion, "criterion", name), offline))
        if not rubric:
            raise self.fail(entry, "judge", "expect.judge.rubric", "give at least one criterion")
        expect.judge_rubric = tuple(rubric)
        expect.judge_where = self.where(entry, "judge", "expect.judge")

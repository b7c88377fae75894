"""Scenario files: finding them and reading one (YAML) into a checked :class:`Scenario`.

Every mistake in a file is reported at once, in the order of the file's lines, as ``file:line: field: what is
wrong``, before any call is placed: the fields' types and values (declared in ``call_fields`` and
``expect_fields``), then what one section asks of another (``consistency``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.scripted.brain import TRIGGERS, BrainScript, BrainTurn, ToolStep
from telephony.simulation.scenarios import call_fields as fields
from telephony.simulation.scenarios.consistency import consistency_problems
from telephony.simulation.scenarios.expect_reader import DIGITS, ExpectReader
from telephony.simulation.scenarios.line_field import read_line
from telephony.simulation.scenarios.located_yaml import YamlError, load
from telephony.simulation.scenarios.scenario import CallerStep, GoalCaller, Scenario, ScenarioError

__all__ = ["SUFFIXES", "find_scenarios", "load_scenario", "read_scenario"]

SUFFIXES = (".yaml", ".yml")
_ACTIONS = ("say", "play", "press", "silence_s", "hang_up")


def find_scenarios(paths: Iterable[Path]) -> list[Path]:
    """Scenario files among ``paths`` (folders are searched recursively, sorted); missing paths are an error."""
    found: list[Path] = []
    missing: list[ScenarioError] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(item for item in path.rglob("*") if item.suffix in SUFFIXES and item.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            missing.append(ScenarioError(f"{path}: no such file or folder"))
    if missing:
        raise ScenarioError.of(missing)
    return found


def load_scenario(path: Path) -> Scenario:
    """Read and check one scenario file; raises ``ScenarioError`` naming every mistake's line and field."""
    scenario, problems = read_scenario(path)
    if problems or scenario is None:
        raise ScenarioError.of(problems)
    return scenario


def read_scenario(path: Path) -> tuple[Scenario | None, list[ScenarioError]]:
    """The scenario (None if the file cannot be read as one) and every mistake in it, in line order."""
    try:
        document = load(path)
    except YamlError as error:
        return None, [ScenarioError(str(error))]
    parser = _Parser(path)
    scenario = parser.attempt(lambda: parser.scenario(document))
    if scenario is not None:
        parser.problems += consistency_problems(scenario, paired=parser.caller_and_brain_read)
    return scenario, sorted(parser.problems, key=lambda problem: problem.line)


class _Parser(ExpectReader):
    caller_and_brain_read = True
    """No mistake in ``caller`` or ``brain``, so pairing them (``consistency``) compares what was written."""

    def scenario(self, document: Any) -> Scenario:
        if document is None:
            raise ScenarioError(f"{self.file}:1: the file is empty: a scenario needs at least 'caller:'", line=1)
        top = self.mapping(document, document, None, "scenario", fields.SCENARIO.names)
        scenario = Scenario(path=self.path, name=self.path.stem)
        before = len(self.problems)
        if "caller" not in top:
            self.problems.append(self.fail(top, None, "caller", "is required: what the caller says and does"))
        else:
            self.attempt(lambda: self.caller(top, scenario))
        if "brain" in top:
            self.attempt(lambda: self.brain(top["brain"], top, scenario))
        self.caller_and_brain_read = len(self.problems) == before
        self.attempt(lambda: self.about(top, scenario))
        self.attempt(lambda: self.call(top, scenario))
        setup = self.attempt(lambda: self.sequence(top.get("setup", []), top, "setup", "setup")) or []
        scenario.setup = self.each(setup, lambda item, index: self.check(item, setup, index, f"setup[{index}]"))
        if "expect" in top:
            scenario.expect = self.attempt(lambda: self.expectations(top["expect"], top)) or scenario.expect
        self.attempt(lambda: self.runs(top, scenario))
        if "line" in top:
            scenario.line = self.attempt(lambda: read_line(self, top, "line")) or scenario.line
        return scenario

    def about(self, top: dict[str, Any], scenario: Scenario) -> None:
        scenario.name = self.text(top, "name", "scenario", self.path.stem)
        scenario.description = self.text(top, "description", "scenario", "")
        if "agent" in top:
            scenario.agent = self.spec(top, "agent", "scenario")
        if "greeting" in top:
            scenario.greeting = self.text(top, "greeting", "scenario")

    def runs(self, top: dict[str, Any], scenario: Scenario) -> None:
        scenario.runs = int(self.number(top, "runs", "scenario", 1, low=1, integer=True))
        threshold = self.number(top, "pass_threshold", "scenario", 1.0)
        if threshold > 1:
            raise self.fail(
                top, "pass_threshold", "pass_threshold", "is the share of runs that must pass, 0 to 1 (e.g. 0.8)"
            )
        scenario.passes_needed = max(1, -(-round(threshold * scenario.runs * 1000) // 1000))
        scenario.timeout_s = self.number(top, "timeout_s", "scenario", 120.0, low=1.0)
        scenario.patience_s = self.number(top, "patience_s", "scenario", 10.0, low=0.5)

    def call(self, top: dict[str, Any], scenario: Scenario) -> None:
        if "call" not in top:
            return
        call = self.mapping(top["call"], top, "call", "call", fields.CALL.names)
        scenario.call_from = self.text(call, "from", "call", scenario.call_from)
        scenario.call_to = self.text(call, "to", "call", scenario.call_to)
        if "parameters" in call:
            parameters = call["parameters"]
            if not isinstance(parameters, dict) or not all(
                isinstance(v, (str, int, float)) for v in parameters.values()
            ):
                raise self.fail(call, "parameters", "call.parameters", "expected name: value pairs of text")
            scenario.parameters = {str(k): str(v) for k, v in parameters.items()}

    # --- the caller -------------------------------------------------------------------------------

    def caller(self, top: dict[str, Any], scenario: Scenario) -> None:
        value = top["caller"]
        if isinstance(value, dict):
            if "recording" in value:
                entry = self.mapping(value, top, "caller", "caller", fields.RECORDING_CALLER.names)
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
        scenario.caller = self.each(steps, lambda item, index: self.step(item, steps, index))

    def step(self, item: Any, steps: list[Any], index: int) -> CallerStep:
        name = f"caller[{index}]"
        where = self.where(steps, index, name)
        if item == "hang_up":
            return CallerStep("hang_up", where=where)
        entry = self.mapping(item, steps, index, name, fields.CALLER_STEP.names)
        actions = [key for key in _ACTIONS if key in entry]
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
        return self.action(
            actions[0], entry, name, CallerStep(actions[0], over_the_bot_ms=over, wait=wait, where=where)
        )

    def action(self, action: str, entry: dict[str, Any], name: str, step: CallerStep) -> CallerStep:
        if action == "say":
            text = self.text(entry, "say", name).strip()
            if not text:
                raise self.fail(entry, "say", f"{name}.say", "is empty: give the words the caller says")
            return replace(step, text=text)
        if action == "play":
            audio = self.path.parent / self.text(entry, "play", name)
            if audio.suffix.lower() != ".wav" or not audio.is_file():
                raise self.fail(entry, "play", f"{name}.play", f"{audio} is not a WAV file next to the scenario")
            return replace(step, audio=audio)
        if action == "press":
            digits = self.text(entry, "press", name)
            if not DIGITS.fullmatch(digits):
                raise self.fail(entry, "press", f"{name}.press", f"keypad digits are 0-9, * and #, got {digits!r}")
            return replace(step, text=digits)
        if action == "silence_s":
            return replace(step, kind="silence", seconds=self.number(entry, "silence_s", name, 0.0), wait=False)
        if entry["hang_up"] is not True:
            raise self.fail(entry, "hang_up", f"{name}.hang_up", "write '- hang_up' or 'hang_up: true'")
        return step

    def goal(self, value: dict[str, Any], top: dict[str, Any]) -> GoalCaller:
        entry = self.mapping(value, top, "caller", "caller", fields.GOAL_CALLER.names)
        rules: list[tuple[str, str]] = []
        done_when = ""
        if "offline" in entry:
            offline = self.mapping(entry["offline"], entry, "offline", "caller.offline", fields.GOAL_OFFLINE.names)
            replies = self.sequence(offline.get("replies", []), offline, "replies", "caller.offline.replies")
            rules = self.each(replies, lambda rule, index: self.reply(rule, replies, index))
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

    def reply(self, rule: Any, replies: list[Any], index: int) -> tuple[str, str]:
        name = f"caller.offline.replies[{index}]"
        entry = self.mapping(rule, replies, index, name, fields.OFFLINE_REPLY.names)
        return self.regex(entry, "when", name).pattern, self.text(entry, "say", name)

    # --- the model's part -------------------------------------------------------------------------

    def brain(self, value: Any, top: dict[str, Any], scenario: Scenario) -> None:
        otherwise = ""
        if isinstance(value, dict):
            value = self.mapping(value, top, "brain", "brain", fields.BRAIN.names)
            otherwise = self.text(value, "otherwise", "brain", "")
            turns = self.sequence(value.get("turns", []), value, "turns", "brain.turns")
        else:
            turns = self.sequence(value, top, "brain", "brain")
        read = self.each(turns, lambda item, index: (self.brain_turn(item, turns, index), index))
        scenario.brain = BrainScript(tuple(turn for turn, _ in read), otherwise)
        scenario.brain_where = [self.where(turns, index, f"brain[{index}]") for _, index in read]

    def brain_turn(self, item: Any, turns: list[Any], index: int) -> BrainTurn:
        name = f"brain[{index}]"
        entry = self.mapping(item, turns, index, name, fields.BRAIN_TURN.names)
        on = self.text(entry, "on", name)
        if on not in TRIGGERS:
            raise self.fail(entry, "on", f"{name}.on", f"expected one of {', '.join(TRIGGERS)}, got {on!r}")
        if on == "text" and not entry.get("contains"):
            raise self.fail(
                entry, "on", f"{name}.contains", "an 'on: text' turn needs 'contains:' (text the input holds)"
            )
        if "heard" in entry and on != "caller":
            raise self.fail(entry, "heard", f"{name}.heard", f"only 'on: caller' turns hear the caller, not 'on: {on}'")
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
        items = self.sequence(entry.get(key, []), entry, key, f"{name}.{key}")
        return tuple(self.each(items, lambda item, index: self.tool_step(item, items, index, f"{name}.{key}[{index}]")))

    def tool_step(self, item: Any, items: list[Any], index: int, name: str) -> ToolStep:
        if isinstance(item, str):
            return ToolStep(item)
        tool = self.mapping(item, items, index, name, fields.TOOL_CALL.names)
        arguments = tool.get("input", {})
        if not isinstance(arguments, dict):
            raise self.fail(tool, "input", f"{name}.input", "expected the tool's arguments (name: value lines)")
        return ToolStep(self.text(tool, "name", name), dict(arguments))

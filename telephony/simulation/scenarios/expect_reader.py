"""Reading a scenario's ``expect:`` into :class:`Expectations`, every mistake noted with its file, line and field.

The fields each mapping allows are declared in ``expect_fields`` (which ``docs/scenarios.md`` is written from).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from telephony.simulation.scenarios import expect_fields as fields
from telephony.simulation.scenarios.arguments import PATTERN_PREFIX, patterns_in
from telephony.simulation.scenarios.call_fields import FUNCTION
from telephony.simulation.scenarios.field_reader import FieldReader
from telephony.simulation.scenarios.scenario import Check, Expectations, Said, ToolExpectation

DIGITS = re.compile(r"[0-9*#]+")
"""Keypad digits (a caller's ``press`` and ``expect.keys``)."""


class ExpectReader(FieldReader):
    """``expect:`` and its sub-mappings; see :class:`FieldReader` for how mistakes are collected."""

    def expectations(self, value: Any, top: dict[str, Any]) -> Expectations:
        entry = self.mapping(value, top, "expect", "expect", fields.EXPECT.names)
        expect = Expectations()
        expect.says = self._said_list(entry, "bot_says")
        expect.never_says = self._said_list(entry, "bot_never_says")
        if self.attempt(lambda: self.flag(entry, "no_apology", "expect", False)):
            expect.no_apology = self.where(entry, "no_apology", "expect.no_apology")
        tools = self.attempt(lambda: self.sequence(entry.get("tools", []), entry, "tools", "expect.tools")) or []
        expect.tools = self.each(tools, lambda item, index: self.tool(item, tools, index))
        expect.tools_in_order = bool(self.attempt(lambda: self.flag(entry, "tools_in_order", "expect", True)))
        if "tools" in entry:
            expect.tools_where = self.where(entry, "tools", "expect.tools")
        self.attempt(lambda: self.no_tools(entry, expect))
        self.attempt(lambda: self.transfer(entry, expect))
        for part in (self.hang_up, self.keys, self.barge_in, self.latency, self.dead_air, self.duration, self.judge):
            self.attempt(functools.partial(part, entry, expect))
        checks = self.attempt(lambda: self.sequence(entry.get("checks", []), entry, "checks", "expect.checks")) or []
        expect.checks = self.each(
            checks, lambda item, index: self.check(item, checks, index, f"expect.checks[{index}]")
        )
        return expect

    def _said_list(self, entry: dict[str, Any], key: str) -> list[Said]:
        items = self.attempt(lambda: self.sequence(entry.get(key, []), entry, key, f"expect.{key}")) or []
        return self.each(items, lambda item, index: self.said(item, items, index, f"expect.{key}[{index}]"))

    def said(self, item: Any, container: Any, index: int, name: str) -> Said:
        if isinstance(item, str):
            entry: dict[str, Any] = {"contains": item}
        else:
            entry = self.mapping(item, container, index, name, fields.SAID.names)
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

    def tool(self, item: Any, container: list[Any], index: int) -> ToolExpectation:
        name = f"expect.tools[{index}]"
        if isinstance(item, str):
            item = {"name": item}
        tool = self.mapping(item, container, index, name, fields.TOOL_EXPECTATION.names)
        arguments = tool.get("input", {})
        if not isinstance(arguments, dict):
            raise self.fail(tool, "input", f"{name}.input", "expected the arguments to match (name: value lines)")
        for path, pattern in patterns_in(arguments):
            try:
                re.compile(pattern)
            except re.error as error:
                raise self.fail(
                    tool,
                    "input",
                    f"{name}.input.{path}",
                    f"{PATTERN_PREFIX}{pattern!r} is not a regular expression: {error}",
                ) from None
        return ToolExpectation(
            self.text(tool, "name", name),
            dict(arguments),
            self.where(container, index, name),
            ordered_lists=self.flag(tool, "ordered_lists", name, False),
        )

    def no_tools(self, entry: dict[str, Any], expect: Expectations) -> None:
        items = self.sequence(entry.get("no_tools", []), entry, "no_tools", "expect.no_tools")
        for index, item in enumerate(items):
            where = self.where(items, index, f"expect.no_tools[{index}]")
            if not isinstance(item, str):
                self.problems.append(self.fail(items, index, where.field, "expected a tool name"))
            elif any(wanted.name == item for wanted in expect.tools):
                self.problems.append(self.fail(items, index, where.field, f"{item} is also in expect.tools"))
            else:
                expect.no_tools.append((item, where))

    def transfer(self, entry: dict[str, Any], expect: Expectations) -> None:
        if "transfer" not in entry:
            return
        transfer = entry["transfer"]
        if not isinstance(transfer, (bool, str)):
            raise self.fail(entry, "transfer", "expect.transfer", "expected true, false or the destination")
        expect.transfer = (transfer, self.where(entry, "transfer", "expect.transfer"))

    def hang_up(self, entry: dict[str, Any], expect: Expectations) -> None:
        if "hang_up" not in entry:
            return
        hang_up = self.mapping(entry["hang_up"], entry, "hang_up", "expect.hang_up", fields.HANG_UP.names)
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
        barge = self.mapping(entry["barge_in"], entry, "barge_in", "expect.barge_in", fields.BARGE_IN.names)
        wanted = expect.barge_in
        if "clear_within_ms" in barge:
            limit = self.attempt(lambda: self.number(barge, "clear_within_ms", "expect.barge_in", 0))
            if limit is not None:
                wanted.clear_within_ms = (
                    limit,
                    self.where(barge, "clear_within_ms", "expect.barge_in.clear_within_ms"),
                )
        if self.attempt(lambda: self.flag(barge, "nothing_stale", "expect.barge_in", False)):
            wanted.nothing_stale = self.where(barge, "nothing_stale", "expect.barge_in.nothing_stale")
        if "max_false_clears" in barge:
            most = self.attempt(lambda: self.number(barge, "max_false_clears", "expect.barge_in", 0, integer=True))
            if most is not None:
                where = self.where(barge, "max_false_clears", "expect.barge_in.max_false_clears")
                wanted.max_false_clears = (int(most), where)

    def keys(self, entry: dict[str, Any], expect: Expectations) -> None:
        if "keys" not in entry:
            return
        keys = self.text(entry, "keys", "expect")
        if not DIGITS.fullmatch(keys):
            raise self.fail(entry, "keys", "expect.keys", f"keypad digits are 0-9, * and #, got {keys!r}")
        expect.keys = (keys, self.where(entry, "keys", "expect.keys"))

    def latency(self, entry: dict[str, Any], expect: Expectations) -> None:
        if "latency" not in entry:
            return
        latency = self.mapping(entry["latency"], entry, "latency", "expect.latency", fields.LATENCY.names)
        for key, attribute in (
            ("turn_max_s", "turn_latency_max_s"),
            ("p50_max_s", "latency_p50_max_s"),
            ("max_s", "latency_max_s"),
        ):
            if key in latency:
                value = self.attempt(functools.partial(self.number, latency, key, "expect.latency", 0))
                if value is not None:
                    setattr(expect, attribute, (value, self.where(latency, key, f"expect.latency.{key}")))

    def dead_air(self, entry: dict[str, Any], expect: Expectations) -> None:
        if "dead_air" not in entry:
            return
        dead_air = self.mapping(entry["dead_air"], entry, "dead_air", "expect.dead_air", fields.DEAD_AIR.names)
        if "max_s" not in dead_air:
            raise self.fail(dead_air, None, "expect.dead_air.max_s", "is required: the longest wait allowed, e.g. 3")
        expect.dead_air_max_s = (
            self.number(dead_air, "max_s", "expect.dead_air", 0),
            self.where(dead_air, "max_s", "expect.dead_air.max_s"),
        )

    def duration(self, entry: dict[str, Any], expect: Expectations) -> None:
        if "duration" not in entry:
            return
        duration = self.mapping(entry["duration"], entry, "duration", "expect.duration", fields.DURATION.names)
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

    def judge(self, entry: dict[str, Any], expect: Expectations) -> None:
        if "judge" not in entry:
            return
        judge = self.mapping(entry["judge"], entry, "judge", "expect.judge", fields.JUDGE.names)
        items = self.sequence(judge.get("rubric", []), judge, "rubric", "expect.judge.rubric")
        rubric = self.each(items, lambda item, index: self.criterion(item, items, index))
        if not items:
            raise self.fail(entry, "judge", "expect.judge.rubric", "give at least one criterion")
        expect.judge_rubric = tuple(rubric)
        expect.judge_where = self.where(entry, "judge", "expect.judge")

    def criterion(self, item: Any, items: list[Any], index: int) -> tuple[str, str]:
        name = f"expect.judge.rubric[{index}]"
        criterion = self.mapping(item, items, index, name, fields.CRITERION.names)
        offline = self.regex(criterion, "offline", name).pattern if "offline" in criterion else ""
        return self.text(criterion, "criterion", name), offline

    def check(self, item: Any, container: Any, index: int, name: str) -> Check:
        """A function call (``setup`` and ``expect.checks``)."""
        entry = self.mapping(item, container, index, name, FUNCTION.names)
        arguments = entry.get("with", {})
        if not isinstance(arguments, dict):
            raise self.fail(entry, "with", f"{name}.with", "expected keyword arguments (name: value lines)")
        return Check(self.spec(entry, "call", name), dict(arguments), self.where(container, index, name))

"""Callers with a goal, and judges: the pluggable text agents of a scenario.

A goal caller reads the call's transcript so far and decides what to say next (or to hang up); a judge
reads the finished call's transcript and grades it against a rubric. Each has a text-model version (a
Strands ``Agent`` on a model you configure, e.g. Nova Lite on Bedrock) and a deterministic offline
stand-in that follows rules written in the scenario, so the test suite needs no network.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any, Protocol

from telephony.bridge.observer import QuietObserver
from telephony.simulation.scenarios.scenario import GoalCaller

Turn = tuple[str, str]
"""(``bot`` or ``caller``, what was said)."""
GOODBYE = "Thank you, that's everything. Goodbye."


class LiveTranscript(QuietObserver):
    """A call observer that keeps the transcript as the model reports it (caller and bot turns, in order)."""

    def __init__(self) -> None:
        self._turns: list[Turn] = []

    def turns(self) -> list[Turn]:
        return list(self._turns)

    def agent_event(self, event: Any) -> None:
        if isinstance(event, dict) and event.get("type") == "bidi_transcript_block":
            text = str(event.get("transcript", "")).strip()
            if text:
                self._turns.append(("caller" if event.get("role") == "user" else "bot", text))


class CallerBrain(Protocol):
    async def next_line(self, transcript: list[Turn]) -> str | None:
        """What the caller says next, given the call so far; None hangs up."""


@dataclass(frozen=True)
class Verdict:
    criterion: str
    passed: bool
    reason: str


class Judge(Protocol):
    async def grade(self, transcript: list[Turn], rubric: list[tuple[str, str]]) -> list[Verdict]:
        """One verdict per (criterion, offline pattern) of the rubric."""


def transcript_text(transcript: list[Turn]) -> str:
    return "\n".join(f"{who}: {text}" for who, text in transcript)


# --- offline stand-ins ---------------------------------------------------------------------------------


class RuleCaller:
    """The deterministic goal caller: opens with ``opening``, answers the bot's last turn by the first rule whose
    expression it matches, says goodbye once ``done_when`` matches, and hangs up after the bot's next turn."""

    def __init__(self, goal: GoalCaller) -> None:
        self.goal = goal
        self._rules = [(re.compile(pattern, re.IGNORECASE), line) for pattern, line in goal.rules]
        self._done = re.compile(goal.done_when, re.IGNORECASE) if goal.done_when else None
        self._opened = False
        self._said_goodbye = False

    async def next_line(self, transcript: list[Turn]) -> str | None:
        if self._said_goodbye:
            return None
        if not self._opened:
            self._opened = True
            return self.goal.opening or self.goal.goal
        last_bot = next((text for who, text in reversed(transcript) if who == "bot"), "")
        bot_so_far = " ".join(text for who, text in transcript if who == "bot")
        if self._done is not None and self._done.search(bot_so_far):
            self._said_goodbye = True
            return GOODBYE
        for pattern, line in self._rules:
            if pattern.search(last_bot):
                return line
        return None


class PatternJudge:
    """The deterministic judge: a criterion passes when its ``offline`` expression occurs in the transcript
    (``bot: …`` / ``caller: …`` lines); a criterion without one cannot be judged offline and fails, saying so."""

    async def grade(self, transcript: list[Turn], rubric: list[tuple[str, str]]) -> list[Verdict]:
        text = transcript_text(transcript)
        verdicts = []
        for criterion, pattern in rubric:
            if not pattern:
                verdicts.append(Verdict(criterion, False, "no offline pattern: run with --text-model to judge it"))
                continue
            found = re.search(pattern, text, re.IGNORECASE | re.MULTILINE)
            reason = f"found {found.group(0)!r}" if found else f"nothing in the transcript matches /{pattern}/"
            verdicts.append(Verdict(criterion, found is not None, reason))
        return verdicts


# --- text-model versions -------------------------------------------------------------------------------


def bedrock_text_model(model_id: str, region: str) -> Any:
    """A Strands Bedrock text model (e.g. ``us.amazon.nova-lite-v1:0``); needs AWS credentials when used."""
    from strands.models import BedrockModel

    return BedrockModel(model_id=model_id, region_name=region, temperature=0.3)


class TextModelCaller:
    """A goal caller played by a Strands ``Agent``: it sees the transcript and answers with one line, or HANG UP."""

    def __init__(self, goal: GoalCaller, model: Any) -> None:
        from strands import Agent

        prompt = (
            "You are a person phoning a business, in a test of its phone bot. Stay in character.\n"
            f"Who you are: {goal.persona or 'an ordinary caller'}\nYour goal: {goal.goal}\n"
            "Reply with only the next thing you say aloud: one or two short spoken sentences, no stage directions. "
            "When your goal is met or clearly cannot be met, say goodbye; after the bot's goodbye reply HANG UP."
        )
        self._agent = Agent(model=model, system_prompt=prompt, callback_handler=None)
        self._goal = goal
        self._turns = 0

    async def next_line(self, transcript: list[Turn]) -> str | None:
        self._turns += 1
        if self._turns == 1 and self._goal.opening:
            return self._goal.opening
        request = f"The call so far:\n{transcript_text(transcript) or '(nothing yet)'}\n\nWhat do you say next?"
        result = await asyncio.to_thread(self._agent, request)
        line = str(result).strip().strip('"')
        return None if not line or "HANG UP" in line.upper() else line


class TextModelJudge:
    """A judge played by a Strands ``Agent``: one PASS/FAIL line with a reason per criterion."""

    def __init__(self, model: Any) -> None:
        from strands import Agent

        self._agent = Agent(
            model=model,
            system_prompt=(
                "You grade phone calls between a caller and a business's phone bot. For each numbered criterion, "
                "answer one line: '<number>. PASS: <reason>' or '<number>. FAIL: <reason>'. Judge only from the "
                "transcript."
            ),
            callback_handler=None,
        )

    async def grade(self, transcript: list[Turn], rubric: list[tuple[str, str]]) -> list[Verdict]:
        criteria = "\n".join(f"{index + 1}. {criterion}" for index, (criterion, _) in enumerate(rubric))
        request = f"Transcript:\n{transcript_text(transcript)}\n\nCriteria:\n{criteria}"
        answer = str(await asyncio.to_thread(self._agent, request))
        verdicts = []
        for index, (criterion, _) in enumerate(rubric):
            line = re.search(rf"^\s*{index + 1}\.\s*(PASS|FAIL)\s*:?\s*(.*)$", answer, re.MULTILINE | re.IGNORECASE)
            if line is None:
                verdicts.append(Verdict(criterion, False, "the judge gave no verdict for it"))
            else:
                verdicts.append(Verdict(criterion, line.group(1).upper() == "PASS", line.group(2).strip()))
        return verdicts

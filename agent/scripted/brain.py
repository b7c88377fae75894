"""A scripted brain: what a speech-to-speech model would decide, written down turn by turn.

Scenario tests need the *model's* part of a call to be deterministic so that everything around it (the
agent's tools, their database effects, hand-offs, the hang-up, the bridge) is tested for real. A
``BrainScript`` lists the model's turns; each is triggered by one kind of input, in order:

- ``greeting``: the first text the bridge gives the agent when the call starts (its greeting instruction);
- ``caller``: a finished caller utterance (end-pointed by voice activity; the words are not recognised,
  the turn says what the model "heard");
- ``key``: a keypress ("The caller pressed 5 on their keypad."), optionally for one digit;
- ``text``: any other text input containing ``contains`` (e.g. "The transfer failed").

A turn may call tools before speaking (their results fill ``{tool_name}`` / ``{result}`` placeholders in
what it says), speak, then call tools once the reply was said in full (``end_conversation``,
``transfer_call``). What a model takes from its system prompt, the brain takes from ``Name: value`` lines of
the agent's prompt (``{prompt:Name}``), so an agent with the wrong facts in its prompt says wrong things.
A tool the agent does not offer, or one that fails, makes the brain apologise (``if_unavailable``) and give
up the rest of that turn, as a model would have to.

The brain is pure logic with no I/O: :class:`agent.scripted.model.ScriptedBrainModel` plays it over audio,
and the same script can drive any other stand-in for the model (such as a local Nova Sonic emulator).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TRIGGERS", "BrainScript", "BrainTurn", "ScriptedBrain", "ToolStep", "prompt_fields"]

log = logging.getLogger(__name__)

TRIGGERS = ("greeting", "caller", "key", "text")
DEFAULT_UNAVAILABLE = "I'm sorry, I can't do that right now."
_KEYPRESS = re.compile(r"pressed\s+([0-9*#A-D])\b", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\{(prompt:)?([^{}]+)\}")
_FIELD_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 _-]{0,60}?)\s*:\s*(.+?)\s*$")


@dataclass(frozen=True)
class ToolStep:
    """A tool the model calls, with the input it gives it."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BrainTurn:
    """One thing the model does in answer to one input (see the module docstring)."""

    on: str
    key: str = ""
    """For ``on: key``: the digit (empty: any)."""
    contains: str = ""
    """For ``on: text``: text the input must contain."""
    heard: str = ""
    """For ``on: caller``: the caller transcript the model reports (what it understood)."""
    tools: tuple[ToolStep, ...] = ()
    say: str = ""
    then: tuple[ToolStep, ...] = ()
    if_unavailable: str = DEFAULT_UNAVAILABLE

    def __post_init__(self) -> None:
        if self.on not in TRIGGERS:
            raise ValueError(f"a brain turn is triggered by one of {', '.join(TRIGGERS)}, not {self.on!r}")


@dataclass(frozen=True)
class BrainScript:
    turns: tuple[BrainTurn, ...]
    otherwise: str = ""
    """Said for an input no turn is left for (empty: stay silent, as a model might not)."""


def prompt_fields(system_prompt: str | None) -> dict[str, str]:
    """``Name: value`` lines of a system prompt, by lower-cased name (the facts the brain may quote)."""
    fields: dict[str, str] = {}
    for line in (system_prompt or "").splitlines():
        match = _FIELD_LINE.match(line)
        if match:
            fields.setdefault(match.group(1).strip().lower(), match.group(2))
    return fields


class ScriptedBrain:
    """Picks the turn for each input and fills in what it says. Records what it could not answer."""

    def __init__(self, script: BrainScript, system_prompt: str | None = None) -> None:
        self.script = script
        self.fields = prompt_fields(system_prompt)
        self._used: set[int] = set()
        self._texts = 0
        self.caller_turns = 0
        self.unanswered: list[str] = []
        """Inputs the script had no turn for (shown when a scenario fails, to tell script gaps from bugs)."""
        self.missing: list[str] = []
        """Tools or prompt fields a turn needed and did not get."""

    def on_text(self, text: str) -> BrainTurn | None:
        """The turn for a text input: keypress, greeting (the first other text), or a ``text`` turn."""
        self._texts += 1
        key = _KEYPRESS.search(text)
        if key is not None:
            return self._take(lambda turn: turn.on == "key" and turn.key in ("", key.group(1)), f"keypress {text!r}")
        first = self._texts == 1
        chosen = self._take(lambda turn: turn.on == "text" and bool(turn.contains) and turn.contains in text, None)
        if chosen is None and first:
            chosen = self._take(lambda turn: turn.on == "greeting", None)
        if chosen is None:
            self._unanswered(f"text {text!r}")
        return chosen

    def on_caller_turn(self) -> BrainTurn | None:
        """The turn for the next finished caller utterance."""
        self.caller_turns += 1
        return self._take(lambda turn: turn.on == "caller", f"caller turn {self.caller_turns}")

    def _take(self, wanted: Any, what: str | None) -> BrainTurn | None:
        for index, turn in enumerate(self.script.turns):
            if index not in self._used and wanted(turn):
                self._used.add(index)
                return turn
        if what is not None:
            self._unanswered(what)
        return None

    def _unanswered(self, what: str) -> None:
        self.unanswered.append(what)
        log.warning("scripted brain: no turn left for %s", what)

    def render(self, text: str, results: Mapping[str, str]) -> str:
        """``text`` with ``{tool}``/``{result}`` from this turn's tool results and ``{prompt:Name}`` from the prompt."""

        def fill(match: re.Match[str]) -> str:
            name = match.group(2).strip()
            if match.group(1):
                value = self.fields.get(name.lower())
                if value is None:
                    self.missing.append(f"prompt field {name!r}")
                    log.warning("scripted brain: the system prompt has no %r line", f"{name}: ...")
                    return ""
                return value
            if name in results:
                return results[name].strip().rstrip(".")
            return match.group(0)

        return _PLACEHOLDER.sub(fill, text)

"""What the offline model understands and says: a small, readable script of intents.

Each intent lists the phrases that select it (the recogniser's whole vocabulary comes from these), the
keypad digits that select it, what the bot replies, and the tools it calls. Write your own ``Script``
and pass it to ``OfflineModel(script=...)``; keep phrases short and acoustically distinct (three to
five words recognise best over the phone).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .clock import spoken_time

__all__ = ["FRONT_DESK", "Intent", "Script", "ToolCall"]


@dataclass(frozen=True)
class ToolCall:
    """A tool the model calls, by name, with a fixed input."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    fallback: Callable[[], str] | None = None
    """Answers in the tool's place when the agent does not offer it (e.g. the default agent factory)."""


@dataclass(frozen=True)
class Intent:
    name: str
    phrases: tuple[str, ...]
    replies: tuple[str, ...]
    """Said in turn, one per time the intent comes up; ``{result}`` is replaced by the lookup's result."""
    keys: tuple[str, ...] = ()
    """Keypad digits that select this intent."""
    lookup: ToolCall | None = None
    """Called before replying; the model waits for its result and speaks it."""
    lookup_failed: str = "Sorry, I could not do that just now."
    then: ToolCall | None = None
    """Called once the reply has been said in full (e.g. ``end_conversation``)."""


@dataclass(frozen=True)
class Script:
    greeting: str
    """Said when the call starts: the bridge's greeting instruction, or any text that is no intent."""
    not_understood: str
    unknown_key: str
    intents: tuple[Intent, ...]
    check_in: str = "Are you still there? I am here if you need anything."
    """Said when the bridge asks the model to check on a caller who has gone quiet."""
    pronunciations: Mapping[str, str] = field(default_factory=dict)
    """CMUdict phones for phrase words the dictionary lacks, e.g. ``{"voicebot": "V OY S B AA T"}``."""

    def __post_init__(self) -> None:
        names = [intent.name for intent in self.intents]
        if len(set(names)) != len(names):
            raise ValueError(f"intent names must be unique, got {names}")
        if any(not intent.phrases or not intent.replies for intent in self.intents):
            raise ValueError("every intent needs at least one phrase and one reply")

    @property
    def phrases(self) -> dict[str, tuple[str, ...]]:
        return {intent.name: intent.phrases for intent in self.intents}

    def intent(self, name: str) -> Intent:
        return next(intent for intent in self.intents if intent.name == name)

    def intent_for_key(self, key: str) -> Intent | None:
        return next((intent for intent in self.intents if key in intent.keys), None)


FRONT_DESK = Script(
    greeting=(
        "Hello, you have reached the front desk. I am an offline demo, so I only know a few things. "
        "Ask me what time it is, ask for a joke, or say goodbye."
    ),
    not_understood=(
        "Sorry, I only understand a few phrases offline. Try: what time is it, tell me a joke, or goodbye."
    ),
    unknown_key="Press 1 for the time, 2 for a joke, 0 for the operator, or 9 to hang up.",
    intents=(
        Intent(
            name="time",
            phrases=("what time is it", "what is the time", "tell me the time"),
            keys=("1",),
            lookup=ToolCall("current_time", fallback=spoken_time),
            replies=("It is {result}.",),
            lookup_failed="Sorry, I cannot read the clock just now.",
        ),
        Intent(
            name="joke",
            phrases=("tell me a joke", "make me laugh", "another joke"),
            keys=("2",),
            replies=(
                "Why did the smartphone need glasses? It lost all its contacts.",
                "I would tell you a joke about U D P, but you might not get it.",
                "Why was the scarecrow promoted? He was outstanding in his field.",
            ),
        ),
        Intent(
            name="transfer",
            phrases=("transfer me", "talk to a person", "speak to someone", "operator"),
            keys=("0",),
            replies=(
                "I cannot transfer you from this offline demo. Transfers need a real Twilio account and a "
                "number to dial, so I will stay with you. Ask me the time, or for a joke.",
            ),
        ),
        Intent(
            name="help",
            phrases=("help me", "what can you do"),
            replies=(
                "I can tell you the time, tell you a joke, or say goodbye. "
                "You can also press 1 for the time, or 2 for a joke.",
            ),
        ),
        Intent(
            name="hello",
            phrases=("hello", "hi there"),
            replies=("Hi! Ask me what time it is, or ask for a joke.",),
        ),
        Intent(
            name="goodbye",
            phrases=("goodbye", "bye", "bye bye", "that's all", "that's all thanks", "thank you goodbye"),
            keys=("9",),
            replies=("Thanks for calling. Goodbye!",),
            then=ToolCall("end_conversation", {"reason": "the caller said goodbye"}),
        ),
    ),
)
"""The default script: a front desk that greets, tells the time (a tool), jokes, refuses to transfer,
and hangs up on goodbye."""

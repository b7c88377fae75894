"""The offline model's "thinking": from one caller input to one turn of the script. Pure logic, no I/O.

Inputs are speech (what the recognisers heard) or text from the bridge: the greeting instruction at
call start, keypresses ("The caller pressed 5 on their keypad."), or notes. Text that names a known
phrase is that intent; the bridge's instruction to wrap up ("Say a short goodbye …") is the goodbye; its check-in on
a silent caller gets the script's check-in; its nudge of a quiet agent ("Phone line: … waiting …") asks the caller to
say it again; a note not to read out gets no reply; any other text gets the greeting, since the only other text a
caller-facing bridge sends unprompted is the instruction to greet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from agent.prompt import LINE_NOTE

from .matcher import Heard, Match, PhraseMatcher
from .script import Intent, Script, ToolCall

__all__ = ["Conversation", "Turn"]

_KEYPRESS = re.compile(r"pressed\s+([0-9*#A-D])\b", re.IGNORECASE)
_WRAP_UP = re.compile(r"say a short goodbye", re.IGNORECASE)
_NOT_TO_READ_OUT = re.compile(r"^\s*note for you, not to read out", re.IGNORECASE)
_CHECK_IN = re.compile(rf"^\s*{re.escape(LINE_NOTE)}.*\bstill there\b", re.IGNORECASE)
_NUDGE = re.compile(rf"^\s*{re.escape(LINE_NOTE)}.*\bwaiting\b", re.IGNORECASE)
GREETING, NOT_UNDERSTOOD, UNKNOWN_KEY, GOODBYE = "greeting", "not_understood", "unknown_key", "goodbye"
CHECK_IN, ASK_AGAIN = "check_in", "ask_again"
ASK_AGAIN_REPLY = "Sorry, I missed that. Could you say it again?"
"""The reply to the bridge's nudge: the offline model has nothing pending, so whatever it missed was the caller's."""
WRAP_UP_REPLY = "I have to end the call now. Goodbye!"
"""The goodbye to a wrap-up instruction when the script has no ``goodbye`` intent."""


@dataclass(frozen=True)
class Turn:
    """What to do for one input: show what was heard, maybe look something up, reply, maybe act after."""

    intent: str
    """An intent's name, or one of ``greeting``, ``not_understood``, ``unknown_key``."""
    heard: str | None
    """The caller's transcript to report (speech only): the matched phrase, or the raw words."""
    reply: str
    lookup: ToolCall | None = None
    lookup_failed: str = ""
    then: ToolCall | None = None

    def reply_with(self, result: str) -> str:
        """The reply with a lookup's result in place of ``{result}``."""
        return self.reply.replace("{result}", result.strip().rstrip("."))


class Conversation:
    """Maps inputs to turns; remembers only which reply of each intent comes next."""

    def __init__(self, script: Script, matcher: PhraseMatcher | None = None) -> None:
        self.script = script
        self.matcher = matcher or PhraseMatcher(script.phrases)
        self._said: dict[str, int] = {}

    def on_speech(self, heard: Heard) -> Turn:
        return self.on_match(heard, self.matcher.match_heard(heard))

    def on_match(self, heard: Heard, match: Match | None) -> Turn:
        """The turn for speech already matched (``PhraseRecognizer.listen`` matches as it recognises)."""
        if match is None:
            return Turn(NOT_UNDERSTOOD, heard.free or heard.constrained, self.script.not_understood)
        return self._turn(self.script.intent(match.intent), heard=match.phrase)

    def on_text(self, text: str) -> Turn | None:
        """The turn for a text input; None for a note the model is not to answer."""
        if _NOT_TO_READ_OUT.search(text):
            return None
        if _WRAP_UP.search(text):
            return self._goodbye()
        if _CHECK_IN.search(text):
            return Turn(CHECK_IN, None, self.script.check_in)
        if _NUDGE.search(text):
            return Turn(ASK_AGAIN, None, ASK_AGAIN_REPLY)
        keypress = _KEYPRESS.search(text)
        if keypress is not None:
            intent = self.script.intent_for_key(keypress.group(1))
            return self._turn(intent) if intent else Turn(UNKNOWN_KEY, None, self.script.unknown_key)
        match = self.matcher.match(text)
        if match is None:
            return Turn(GREETING, None, self.script.greeting)
        return self._turn(self.script.intent(match.intent))

    def _goodbye(self) -> Turn:
        """The script's goodbye (it ends the call), or a plain one that does."""
        end = ToolCall("end_conversation", {"reason": "asked to wrap up the call"})
        intent = next((intent for intent in self.script.intents if intent.name == GOODBYE), None)
        if intent is not None and intent.then is not None:
            return replace(self._turn(intent), then=end)
        return Turn(GOODBYE, None, WRAP_UP_REPLY, then=end)

    def _turn(self, intent: Intent, heard: str | None = None) -> Turn:
        count = self._said.get(intent.name, 0)
        self._said[intent.name] = count + 1
        reply = intent.replies[count % len(intent.replies)]
        return Turn(intent.name, heard, reply, intent.lookup, intent.lookup_failed, intent.then)

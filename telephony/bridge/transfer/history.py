"""The conversation so far, cut down to what a fresh session's model can resume from.

A caller brought back from a transfer that did not go through meets a new session and a new agent; that
agent is given this history (``CallInfo.history``) so the conversation carries on instead of starting over.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

HISTORY_MESSAGES = 40
HISTORY_CHARS = 1000
"""What a fresh session is given of the conversation so far (Nova Sonic resumes from about 40 messages of
at most 1,000 bytes)."""

Turn = dict[str, Any]


def resumable_history(messages: Sequence[Any]) -> tuple[dict[str, Any], ...]:
    """The conversation so far as plain text messages any model can resume from.

    Tool uses and results are dropped (a trimmed history could split a pair, which models reject), turns of
    the same role are merged, and only the last ``HISTORY_MESSAGES`` of at most ``HISTORY_CHARS`` are kept,
    starting with a user turn."""
    turns: list[Turn] = []
    for message in messages:
        role, text = _role_and_text(message)
        if role is None or not text:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"][0]["text"] += " " + text
        else:
            turns.append({"role": role, "content": [{"text": text}]})
    turns = _from_a_user_turn(turns[-HISTORY_MESSAGES:])
    for turn in turns:
        turn["content"][0]["text"] = turn["content"][0]["text"][-HISTORY_CHARS:]
    return tuple(copy.deepcopy(turns))


def _role_and_text(message: Any) -> tuple[str | None, str]:
    """A user or assistant message's text blocks joined (role None for anything else)."""
    role = message.get("role") if isinstance(message, Mapping) else None
    if role not in ("user", "assistant"):
        return None, ""
    texts = [
        str(block["text"]) for block in message.get("content", []) if isinstance(block, Mapping) and "text" in block
    ]
    return role, " ".join(t.strip() for t in texts if t.strip())


def _from_a_user_turn(turns: list[Turn]) -> list[Turn]:
    """Models expect a conversation to open with the user: drop leading assistant turns."""
    while turns and turns[0]["role"] != "user":
        turns.pop(0)
    return turns

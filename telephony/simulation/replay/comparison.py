"""Did the bridge send the same thing? What it sent Twilio, recorded vs replayed, compared in order, frame by frame."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from telephony.twilio.media_streams import frames_of

_MARK_SUFFIX = re.compile(r"-\d+$")


@dataclass(frozen=True)
class OutboundComparison:
    """The bridge's messages to Twilio, recorded vs replayed, compared in order (mark numbers ignored)."""

    recorded: list[tuple[str, str]]
    replayed: list[tuple[str, str]]

    @property
    def first_difference(self) -> int | None:
        for index, (old, new) in enumerate(zip(self.recorded, self.replayed, strict=False)):
            if old != new:
                return index
        if len(self.recorded) != len(self.replayed):
            return min(len(self.recorded), len(self.replayed))
        return None

    @property
    def matches(self) -> bool:
        return self.first_difference is None

    def count(self, event: str) -> int:
        """Replayed messages of one kind."""
        return sum(1 for kind, _ in self.replayed if kind == event)

    def describe(self) -> str:
        counts = ", ".join(
            _plural(self.count(kind), noun) for kind, noun in (("media", "frame"), ("mark", "mark"), ("clear", "clear"))
        )
        index = self.first_difference
        if index is None:
            return f"bridge output matches the recording ({counts})"
        old = _describe(self.recorded, index)
        new = _describe(self.replayed, index)
        return f"bridge output DIFFERS from the recording at step {index + 1}: recorded {old}, replayed {new}"


def _frames(message: dict[str, Any]) -> list[str]:
    """A media message's frames, each as base64 (the payload as it is where it is not base64)."""
    try:
        return [base64.b64encode(frame).decode("ascii") for frame in frames_of(message)] or [""]
    except (binascii.Error, KeyError, TypeError, AttributeError):
        return [str((message.get("media") or {}).get("payload", ""))]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _describe(shape: list[tuple[str, str]], index: int) -> str:
    if index >= len(shape):
        return "nothing more"
    kind, detail = shape[index]
    frames = sum(1 for item in shape[:index] if item[0] == "media")
    return f"{kind}{f' {detail!r}' if kind == 'mark' else ''} after {frames} frames"


def outbound_shape(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """What went to Twilio as (event, what matters): each 20 ms frame's audio (a message may carry several:
    how frames are joined depends on timing, the frames do not), a mark's label, nothing for clear."""
    shape: list[tuple[str, str]] = []
    for message in messages:
        event = str(message.get("event"))
        if event == "media":
            shape.extend((event, frame) for frame in _frames(message))
        elif event == "mark":
            shape.append((event, _MARK_SUFFIX.sub("", str((message.get("mark") or {}).get("name", "")))))
        else:
            shape.append((event, ""))
    return shape


def compare_outbound(recorded: list[dict[str, Any]], replayed: list[dict[str, Any]]) -> OutboundComparison:
    return OutboundComparison(outbound_shape(recorded), outbound_shape(replayed))

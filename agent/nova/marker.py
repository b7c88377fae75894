"""Nova Sonic's barge-in marker, kept out of transcripts.

When the caller talks over it, Nova sends an assistant ``textOutput`` whose content is
``{ "interrupted" : true }`` next to the ``INTERRUPTED`` stop reason. strands (1.62) passes that text
through as transcript text, so without a filter it lands in the agent's message history (and is
replayed to Nova after a connection restart), ``transcript.json``, ``events.jsonl``, the console's
feed and the "bot said" log line. The stop reason already carries the barge-in (strands turns it into
``BidiBargeInEvent``), so the text is dropped here, in the model's event stream, before anything
downstream sees it.

A transcript that would hold nothing but the marker (the usual case when the reply had already been
streamed in full and was still playing at the caller's end) is dropped whole: its start is held back
until it gets real text, and a stop with no text before it is swallowed with it, so history gets no
empty assistant message either.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from strands.bidi.types import BidiTranscriptDeltaEvent, BidiTranscriptStartEvent, BidiTranscriptStopEvent

__all__ = ["INTERRUPTED_MARKER", "is_marker_text", "strip_marker", "without_interrupted_marker"]

INTERRUPTED_MARKER = '{ "interrupted" : true }'
_MARKER = re.compile(r'\{\s*"interrupted"\s*:\s*true\s*\}')
"""Nova writes it with spaces inside; match any spacing, since nothing else looks like this JSON."""


def strip_marker(text: str) -> str:
    """``text`` without any barge-in marker in it (whitespace around a removed marker goes too)."""
    if "interrupted" not in text:  # the common case costs one substring test
        return text
    return _MARKER.sub("", text).strip() if _MARKER.search(text) else text


def is_marker_text(text: str) -> bool:
    """True when ``text`` is the marker and nothing else (for Nova's raw ``textOutput`` content)."""
    return "interrupted" in text and not strip_marker(text)


async def without_interrupted_marker(events: AsyncIterator[Any]) -> AsyncGenerator[Any, None]:
    """Re-yield ``events`` with the marker removed from transcript deltas (see the module docstring)."""
    held: dict[str, BidiTranscriptStartEvent] = {}
    async for event in events:
        if isinstance(event, BidiTranscriptStartEvent) and event.role == "assistant":
            held[event.content_id] = event
            continue
        if isinstance(event, BidiTranscriptDeltaEvent):
            delta = strip_marker(event.delta)
            if not delta:
                continue
            start = held.pop(event.content_id, None)
            if start is not None:
                yield start
                # strands puts a space before a delta that follows text; the marker may have been that text.
                delta = delta.lstrip()
            if delta != event.delta:
                event = BidiTranscriptDeltaEvent(delta=delta, role=event.role, content_id=event.content_id)
            yield event
            continue
        if isinstance(event, BidiTranscriptStopEvent) and held.pop(event.content_id, None) is not None:
            continue  # a transcript of nothing but the marker: neither its start nor its stop goes on
        yield event

"""What a model's ``receive()`` gives within a time, and how much audio that is: the local servers' fault tests read
a stream this way (a stalled stream never ends, so the wait is bounded, not the stream)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import Any

from strands.bidi.types import BidiAudioDeltaEvent


async def received_within(receiver: Any, seconds: float) -> list[Any]:
    """Every event ``receiver.receive()`` (a model or an agent) gives in ``seconds``; none of them ends the wait."""
    events: list[Any] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            async for event in receiver.receive():
                events.append(event)
    return events


def audio_s(events: list[Any], rate: int) -> float:
    """Seconds of 16-bit mono audio at ``rate`` in the audio deltas among ``events``."""
    deltas = [event for event in events if isinstance(event, BidiAudioDeltaEvent)]
    return sum(len(base64.b64decode(event["audio"])) for event in deltas) / 2 / rate

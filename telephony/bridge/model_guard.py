"""Turn a model stream that ends silently into an error the session can act on.

When a model's ``receive()`` simply returns (Nova Sonic does when the service closes the
stream), ``BidiAgent.receive()`` waits forever and the caller sits in dead air. Wrapping the
model's ``receive`` so that an unrequested end raises makes the agent surface it like any other
model failure; after a connection restart the SDK drops errors from the superseded stream.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

log = logging.getLogger(__name__)

_GUARDED = "_voicebot_guarded"


class ModelStreamClosed(RuntimeError):
    """The model's event stream ended although nobody stopped the agent."""


def guard_model_stream(model: Any) -> None:
    """Patch ``model.receive`` (on this instance only) to raise when its stream ends unasked."""
    if getattr(model, _GUARDED, False):
        return
    original = model.receive

    async def receive() -> AsyncIterator[Any]:
        async for event in original():
            yield event
        raise ModelStreamClosed(f"{type(model).__name__} stream ended without being stopped")

    model.receive = receive
    setattr(model, _GUARDED, True)

"""What every ``BidiModel`` of this project shares: a config dict, mono PCM rates, an event outbox.

The offline model, the replay model and the test fakes differ in what they say, not in how they
declare themselves to the Strands agent and the bridge (``get_audio_config()``) or hand it events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from strands.bidi.models import BidiModel
from strands.bidi.models.configs import AudioConfig, AudioStreamConfig

END = object()
"""Put in the outbox to end ``receive()``: only at ``stop()``, as the contract requires (or to break it on purpose)."""


class PcmModel(BidiModel):
    def __init__(self, model_id: str, input_rate: int, output_rate: int) -> None:
        self._config: dict[str, Any] = {"model_id": model_id}
        self.input_rate = input_rate
        self.output_rate = output_rate
        self._outbox: asyncio.Queue[Any] = asyncio.Queue()
        self._runner: asyncio.Task[None] | None = None
        self.started = False
        self.stopped = False

    def run(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        """Start the task that produces this model's events (owned here, cancelled by ``stop()``)."""
        self.started = True
        self._runner = asyncio.create_task(coroutine, name=name)

    async def stop(self) -> None:
        """Cancel the producing task, then end ``receive()``."""
        self.stopped = True
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
        self.emit(END)

    def emit(self, item: Any) -> None:
        """Queue an event for ``receive()``; an exception is raised from it, ``END`` ends it."""
        self._outbox.put_nowait(item)

    async def receive(self) -> AsyncIterator[Any]:  # type: ignore[override]
        while (item := await self._outbox.get()) is not END:
            if isinstance(item, Exception):
                raise item
            yield item

    def get_config(self) -> Any:
        return self._config

    def update_config(self, **model_config: Any) -> None:
        self._config.update(model_config)

    def get_audio_config(self) -> AudioConfig:
        """Mono PCM16 at the rates this model hears and speaks: the bridge transcodes to them."""
        return AudioConfig(
            input=AudioStreamConfig(sample_rate=self.input_rate, channels=1, format="pcm"),
            output=AudioStreamConfig(sample_rate=self.output_rate, channels=1, format="pcm"),
        )

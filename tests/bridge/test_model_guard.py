"""The guard on a model's event stream: an unasked end raises, and a reconnect ends a read under way with the
timeout strands restarts on, without a task or a wait per event."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from strands.bidi.models import ConnectionTimeoutError

from telephony.bridge.model_guard import ModelStreamClosed, QuietModelRestart, guard_model_stream


class Quiet:
    """A model that yields ``events`` and then waits for ever (a stalled stream), or ends (``end``)."""

    def __init__(self, events: list[Any], end: bool = False, auto_restart: bool = True) -> None:
        self.events, self.end, self.auto_restart = events, end, auto_restart
        self.closed = False

    def get_connection_config(self) -> dict[str, Any]:
        return {"auto_restart": self.auto_restart}

    async def receive(self) -> AsyncIterator[Any]:
        try:
            for event in self.events:
                yield event
            if not self.end:
                await asyncio.Event().wait()
        finally:
            self.closed = True


async def read_all(model: Any, into: list[Any]) -> None:
    async for event in model.receive():
        into.append(event)


async def test_a_reconnect_ends_a_stalled_read_with_the_timeout_strands_restarts_on() -> None:
    model = Quiet(["a", "b"])
    guard = guard_model_stream(model)
    seen: list[Any] = []
    reader = asyncio.create_task(read_all(model, seen))
    await asyncio.sleep(0.05)
    assert guard.reconnect("nothing audible 7.0 s after the caller's turn")
    with pytest.raises(QuietModelRestart, match="replaced by the bridge: nothing audible") as raised:
        await reader
    assert isinstance(raised.value, ConnectionTimeoutError) and seen == ["a", "b"] and model.closed
    assert not reader.cancelled() and reader.cancelling() == 0  # the cancel was ours, and taken back


async def test_the_next_connection_reads_normally_and_a_second_reconnect_works_too() -> None:
    model = Quiet(["a"])
    guard = guard_model_stream(model)
    for _ in range(2):
        seen: list[Any] = []
        reader = asyncio.create_task(read_all(model, seen))
        await asyncio.sleep(0.02)
        assert guard.reconnect("quiet")
        with pytest.raises(QuietModelRestart):
            await reader
        assert seen == ["a"]


async def test_a_cancel_of_the_reader_by_anyone_else_still_cancels_it() -> None:
    model = Quiet(["a"])
    guard = guard_model_stream(model)
    reader = asyncio.create_task(read_all(model, []))
    await asyncio.sleep(0.02)
    guard.reconnect("quiet")
    reader.cancel()  # strands' stop at the same moment
    with pytest.raises(asyncio.CancelledError):
        await reader


async def test_an_unasked_end_raises_and_a_model_that_opted_out_of_restarts_is_not_reconnected() -> None:
    model = Quiet(["a"], end=True, auto_restart=False)
    guard = guard_model_stream(model)
    assert guard_model_stream(model) is guard  # one guard per model, however often it is asked
    with pytest.raises(ModelStreamClosed):
        await read_all(model, [])
    assert not guard.reconnect("quiet")

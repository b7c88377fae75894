"""The tasks one object owns: each kept until it is done, a crash reported, all cancelled together.

A call (``CallSession``) and the warm-transfer desk (``WarmTransfers``) both start short-lived tasks that
must never outlive them nor fail unseen; this is that bookkeeping, once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class OwnedTasks:
    """A set of running tasks; ``on_crash`` hears of any that ends with an exception (not a cancellation)."""

    def __init__(self, on_crash: Callable[[asyncio.Task[Any], BaseException], None]) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._on_crash = on_crash

    def spawn(self, coroutine: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        task = asyncio.create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    async def cancel_all(self) -> None:
        """Cancel every task still running and wait until each has finished."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def __len__(self) -> int:
        return len(self._tasks)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            self._on_crash(task, error)


__all__ = ["OwnedTasks"]

"""The desk's books: every transfer this process knows, how each one moves on and settles, and the tasks,
timers and metrics that go with them.

Everything that changes a transfer's state goes through :meth:`Ledger.set` (logged, and noted on the
caller's timeline) and ends in :meth:`Ledger.settle` (counted, recording closed, forgotten after a while).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from telephony.bridge.tasks import OwnedTasks
from telephony.bridge.transfer.state import WAITING, State, WarmTransfer
from telephony.operations.metrics import Metrics

log = logging.getLogger(__name__)
T = TypeVar("T")

LINGER_S = 180.0
"""How long a settled transfer is remembered: late callbacks are recognised, a returning stream finds its history."""


class Ledger:
    """Transfers by id, caller call SID and person call SID; their state changes, outcomes and background work."""

    def __init__(self, metrics: Metrics | None) -> None:
        self._metrics = metrics
        self._by_id: dict[str, WarmTransfer] = {}
        self._by_caller: dict[str, WarmTransfer] = {}
        self._by_person: dict[str, WarmTransfer] = {}
        self._tasks = OwnedTasks(self._task_crashed)

    # --- lookups ----------------------------------------------------------------------------------

    def add(self, transfer: WarmTransfer) -> None:
        self._by_id[transfer.id] = self._by_caller[transfer.caller.call_sid] = transfer

    def get(self, transfer_id: str) -> WarmTransfer | None:
        return self._by_id.get(transfer_id)

    def for_caller(self, call_sid: str) -> WarmTransfer | None:
        """The transfer this caller is waiting on (none once it has settled: they may be transferred again)."""
        return self._by_caller.get(call_sid)

    def attach_person(self, transfer: WarmTransfer, sid: str) -> None:
        """The person's call SID, first learnt (from the dial request, a callback or their stream)."""
        if transfer.person_sid is None:
            transfer.person_sid = sid
            self._by_person[sid] = transfer
            transfer.log.info("transfer %s: person call=%s placed to %s", transfer.id, sid, transfer.destination)

    @property
    def pending(self) -> int:
        return sum(1 for transfer in self._by_id.values() if not transfer.settled)

    def waiting(self) -> list[WarmTransfer]:
        """Transfers with a caller on hold and nothing decided."""
        return [t for t in self._by_id.values() if t.state in WAITING or t.state is State.HOLDING]

    # --- moving on --------------------------------------------------------------------------------

    def set(self, transfer: WarmTransfer, state: State, detail: str) -> None:
        transfer.state = state
        transfer.log.info("transfer %s: %s (%.2fs) | %s", transfer.id, state, transfer.elapsed(), detail)
        transfer.note("transfer", f"{state}: {detail}")

    def settle(self, transfer: WarmTransfer, outcome: str, summary: str) -> None:
        """Done: count it, close the caller's recording with the outcome, forget it after a while."""
        transfer.cancel_timers()
        transfer.outcome = transfer.outcome or outcome
        transfer.end_reason = summary
        self._by_caller.pop(transfer.caller.call_sid, None)  # a returned caller may be transferred again
        self.count(outcome)
        transfer.log.info(
            "transfer %s settled | outcome=%s person=%s after=%.1fs briefing_after=%s",
            transfer.id,
            outcome,
            transfer.person_sid or "-",
            transfer.elapsed(),
            f"{transfer.briefing_heard_at - transfer.requested_at:.2f}s" if transfer.briefing_heard_at else "-",
        )
        if transfer.timeline.adopted:
            self.close_timeline(transfer)
        asyncio.get_running_loop().call_later(LINGER_S, self.forget, transfer)

    def close_timeline(self, transfer: WarmTransfer) -> None:
        """End the caller's recording and feed with how the transfer ended."""
        self.spawn(self._close_timeline(transfer), f"transfer-close:{transfer.caller.call_sid}")

    async def close_timelines(self, reason: str) -> None:
        """Server stopping: close every caller's recording still open."""
        for transfer in list(self._by_id.values()):
            await transfer.timeline.close(transfer.end_reason or reason, "server")

    def forget(self, transfer: WarmTransfer) -> None:
        transfer.cancel_timers()
        self._by_id.pop(transfer.id, None)
        if self._by_caller.get(transfer.caller.call_sid) is transfer:
            self._by_caller.pop(transfer.caller.call_sid, None)
        if transfer.person_sid is not None and self._by_person.get(transfer.person_sid) is transfer:
            self._by_person.pop(transfer.person_sid, None)

    async def _close_timeline(self, transfer: WarmTransfer) -> None:
        await transfer.timeline.close(transfer.end_reason, "transfer")

    # --- background work -------------------------------------------------------------------------

    def later(self, transfer: WarmTransfer, seconds: float, callback: Callable[..., None], *args: Any) -> None:
        """A timer that dies with the transfer (cancelled when it settles or returns)."""
        transfer.timers.append(asyncio.get_running_loop().call_later(seconds, callback, *args))

    def spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        self.own(coroutine, name)

    def own(self, coroutine: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        """Run ``coroutine`` as a task the desk owns: no session's teardown can cancel it."""
        return self._tasks.spawn(coroutine, name)

    async def cancel_all(self) -> None:
        """Every timer and task, cancelled (app shutdown)."""
        for transfer in self._by_id.values():
            transfer.cancel_timers()
        await self._tasks.cancel_all()

    def _task_crashed(self, task: asyncio.Task[Any], error: BaseException) -> None:
        log.error("transfer task %s crashed: %r", task.get_name(), error, exc_info=error)
        self.error("internal")

    # --- metrics ----------------------------------------------------------------------------------

    def count(self, outcome: str) -> None:
        if self._metrics is not None:
            self._metrics.transfers.labels(mode="warm", outcome=outcome).inc()

    def error(self, kind: str) -> None:
        if self._metrics is not None:
            self._metrics.errors.labels(kind=kind).inc()

    def briefing_delay(self, seconds: float) -> None:
        if self._metrics is not None:
            self._metrics.transfer_briefing_delay.observe(seconds)


__all__ = ["LINGER_S", "Ledger"]

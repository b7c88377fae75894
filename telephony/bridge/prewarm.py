"""Pre-warmed agents: connect the model while Twilio is still setting up the media stream.

Twilio fetches ``/twiml`` about a second before the stream's ``start`` arrives. Building and starting
the agent then, rather than at ``start``, takes the model's connection time off the caller's wait for
the first words. The agent is handed to the call's session when its stream starts; if the stream
never comes (the caller hung up while it rang, or a webhook from a retry), it is stopped after
``ttl_s`` or when Twilio reports the call over.

With several workers or replicas, the TwiML names the one that pre-warmed (``WARM_PARAMETER``, and
the stream URL routes there); a stream that still lands elsewhere starts cold: ``claim_warm`` logs it
and counts it (``voicebot_prewarm_total{outcome="miss"}``), and the call goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from strands.bidi import BidiAgent

from telephony.bridge.agent_factory import AgentFactory, build_agent
from telephony.bridge.model_guard import guard_model_stream
from telephony.call_info import CallInfo, current_call_sid
from telephony.controls import CALL_CONTROL_KEY
from telephony.twilio.parameters import WARM, public_only

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 5.0
WARM_PARAMETER = WARM

Outcome = Callable[[str], None]
"""Counts what became of a pre-warm: ``hit``, ``miss`` (the stream landed elsewhere), ``late`` (the
stream came here after the agent was given up), ``discarded`` (no stream came in time)."""


class DeferredControl:
    """The ``CallControl`` a pre-warmed agent's tools see: forwards to the session once it exists."""

    def __init__(self) -> None:
        self._target: Any = None
        self._pending: list[tuple[str, tuple[Any, ...]]] = []

    def bind(self, target: Any) -> None:
        self._target = target
        for method, args in self._pending:
            getattr(target, method)(*args)
        self._pending.clear()

    def end_call(self, reason: str) -> None:
        self._call("end_call", reason)

    def transfer_call(self, destination: str, reason: str, summary: str = "") -> None:
        self._call("transfer_call", destination, reason, summary)

    def accept_transfer(self) -> None:
        self._call("accept_transfer")

    def decline_transfer(self, reason: str) -> None:
        self._call("decline_transfer", reason)

    def _call(self, method: str, *args: Any) -> None:
        if self._target is None:
            self._pending.append((method, args))
        else:
            getattr(self._target, method)(*args)


@dataclass
class WarmAgent:
    call: CallInfo
    control: DeferredControl = field(default_factory=DeferredControl)
    invocation_state: dict[str, Any] = field(default_factory=dict)
    built: asyncio.Future[BidiAgent] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    task: asyncio.Task[None] | None = None
    expiry: asyncio.TimerHandle | None = None

    async def started(self) -> BidiAgent:
        """The agent once its model connection is up (raises what building or starting raised)."""
        agent = await asyncio.shield(self.built)
        assert self.task is not None
        await asyncio.shield(self.task)
        return agent


class Prewarmer:
    def __init__(self, factory: AgentFactory, ttl_s: float = 30.0, outcome: Outcome | None = None) -> None:
        self._factory = factory
        self._ttl_s = ttl_s
        self._outcome = outcome or (lambda _: None)
        self._warm: dict[str, WarmAgent] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    def warm(self, call: CallInfo) -> None:
        """Start building and connecting an agent for ``call`` (at most one per call SID)."""
        if not call.call_sid or call.call_sid in self._warm:
            return
        warm = WarmAgent(call)
        warm.invocation_state = {CALL_CONTROL_KEY: warm.control, "call": call}
        warm.task = asyncio.create_task(self._start(warm), name=f"prewarm:{call.call_sid}")
        warm.expiry = asyncio.get_running_loop().call_later(self._ttl_s, self._expire, call.call_sid)
        self._warm[call.call_sid] = warm

    def take(self, call_sid: str) -> WarmAgent | None:
        """The pre-warmed agent for this call, now owned by the caller (its session)."""
        warm = self._warm.pop(call_sid, None)
        if warm is not None and warm.expiry is not None:
            warm.expiry.cancel()
        return warm

    def discard(self, call_sid: str, why: str, counted: bool = True) -> None:
        """Give up a pre-warmed agent whose stream will not come (``counted``: as ``discarded``; a stream that
        started on another worker is counted there, as a miss)."""
        warm = self.take(call_sid)
        if warm is not None:
            log.info("call=%s | pre-warmed agent discarded: %s", call_sid, why)
            if counted:
                self._outcome("discarded")
            task = asyncio.create_task(self._stop(warm), name=f"prewarm-stop:{call_sid}")
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    @property
    def pending(self) -> int:
        return len(self._warm)

    async def aclose(self) -> None:
        warms = [self.take(call_sid) for call_sid in list(self._warm)]
        await asyncio.gather(*(self._stop(warm) for warm in warms if warm is not None), *self._stopping)

    def _expire(self, call_sid: str) -> None:
        self.discard(call_sid, f"no stream within {self._ttl_s:.0f}s")

    async def _start(self, warm: WarmAgent) -> None:
        current_call_sid.set(warm.call.call_sid)  # this task's own context: the model's tasks log by call too
        try:
            agent = await build_agent(self._factory, warm.call)
            guard_model_stream(agent.model)
        except Exception as error:  # noqa: BLE001 - handed to the session, which apologises
            warm.built.set_exception(error)
            return
        warm.built.set_result(agent)
        await agent.start(invocation_state=warm.invocation_state)

    async def _stop(self, warm: WarmAgent) -> None:
        assert warm.task is not None
        warm.task.cancel()
        await asyncio.gather(warm.task, return_exceptions=True)
        if warm.built.done() and not warm.built.cancelled() and warm.built.exception() is None:
            try:
                await asyncio.wait_for(warm.built.result().stop(), STOP_TIMEOUT_S)
            except Exception as error:  # noqa: BLE001 - shutdown goes on
                log.warning("call=%s | pre-warmed agent did not stop cleanly: %r", warm.call.call_sid, error)
        elif not warm.built.done():
            warm.built.cancel()


def claim_warm(
    prewarmer: Prewarmer | None,
    call_sid: str,
    warmed_on: str | None,
    here: str,
    outcome: Outcome,
    call_log: logging.Logger | logging.LoggerAdapter[logging.Logger],
) -> WarmAgent | None:
    """The call's pre-warmed agent if this process holds it; else None (a cold start), logged and counted.

    ``warmed_on`` is the webhook's ``WARM_PARAMETER`` (None: nothing was pre-warmed for this call, as for
    console and dialled-out calls); ``here`` names this worker or replica.
    """
    warm = prewarmer.take(call_sid) if prewarmer is not None and call_sid else None
    if warm is not None:
        outcome("hit")
        return warm
    if warmed_on is None:
        return None
    if warmed_on == here:
        outcome("late")
        call_log.info("pre-warmed agent already given up (no stream within the TTL?): starting cold")
        return None
    outcome("miss")
    call_log.warning(
        "pre-warm miss: the agent was pre-warmed on %s but the stream reached %s: starting cold "
        "(route each stream to the worker or replica its URL names; docs/operations.md: Scaling out)",
        warmed_on,
        here,
    )
    return None


def callinfo_from_webhook(form: Callable[[str], object], parameters: dict[str, str]) -> CallInfo:
    """What is known about a call at its webhook (no stream SID yet)."""
    account_sid = form("AccountSid")
    return CallInfo(
        call_sid=parameters.get("CallSid", ""),
        stream_sid="",
        account_sid=account_sid if isinstance(account_sid, str) else "",
        from_number=parameters.get("From", ""),
        to_number=parameters.get("To", ""),
        parameters=public_only(parameters),
    )

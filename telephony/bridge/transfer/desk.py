"""The warm-transfer desk: the one object the app and the sessions talk to about warm transfers.

It starts a transfer (the caller on hold, the person dialled), gives each new stream its role, follows the
briefing, and settles each transfer; the Twilio requests live in :mod:`.calls`, the status callbacks in
:mod:`.callbacks`, the books in :mod:`.ledger`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from telephony.bridge.agent_factory import AgentFactory
from telephony.bridge.observer import Observers
from telephony.bridge.prewarm import Prewarmer, WarmAgent
from telephony.bridge.transfer.callbacks import StatusCallbacks
from telephony.bridge.transfer.calls import RING_GRACE_S, TransferCalls
from telephony.bridge.transfer.history import resumable_history
from telephony.bridge.transfer.ledger import Ledger
from telephony.bridge.transfer.links import BRIEFING_PARAMETER, RETURN_PARAMETER, TransferLinks
from telephony.bridge.transfer.roles import BriefingRole, ReturningRole, StreamRole
from telephony.bridge.transfer.state import TRANSCRIPT_LINES, HandOff, Leg, State, WarmTransfer
from telephony.call_info import CallInfo, TransferBrief
from telephony.config import Settings
from telephony.operations.logs import CallLog
from telephony.operations.metrics import Metrics
from telephony.twilio.calls_api import TransferClient
from telephony.twilio.conference import conference_name
from telephony.twilio.security import CallTokens

log = logging.getLogger(__name__)


class WarmTransfers:
    """Every warm transfer in progress in this process, by id, caller call SID and person call SID."""

    def __init__(
        self,
        settings: Settings,
        client: TransferClient,
        briefing_factory: AgentFactory,
        *,
        stream_url: str,
        status_url: Callable[[str], str | None],
        tokens: CallTokens | None,
        metrics: Metrics | None = None,
        draining: Callable[[], bool] = lambda: False,
    ) -> None:
        self._settings = settings
        self._briefing_factory = briefing_factory
        self._ledger = Ledger(metrics)
        self._warmer = Prewarmer(briefing_factory, ttl_s=settings.transfer_ring_timeout_s + RING_GRACE_S)
        links = TransferLinks(stream_url, status_url, tokens)
        self._calls = TransferCalls(settings, client, self._ledger, self._warmer, links, draining)
        self._callbacks = StatusCallbacks(self._ledger, self._calls, self._warmer)

    # --- queries ----------------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Transfers not settled yet (someone may be on hold): shutdown waits for these."""
        return self._ledger.pending

    @property
    def briefing_factory(self) -> AgentFactory:
        """What builds the agent that briefs the person."""
        return self._briefing_factory

    def get(self, transfer_id: str) -> WarmTransfer | None:
        return self._ledger.get(transfer_id)

    def for_caller(self, call_sid: str) -> WarmTransfer | None:
        return self._ledger.for_caller(call_sid)

    # --- 1. hold ----------------------------------------------------------------------------------

    def start(
        self,
        leg: Leg,
        destination: str,
        reason: str,
        summary: str,
        transcript: Sequence[tuple[str, str]],
        messages: Sequence[Any],
        asked_at: float | None = None,
    ) -> asyncio.Task[WarmTransfer | None]:
        """:meth:`begin` as a task this registry owns: Twilio stops the caller's stream as soon as the hold
        update lands, often before its REST answer, and the session tearing down must not cancel the transfer."""
        begin = self.begin(leg, destination, reason, summary, transcript, messages, asked_at)
        return self._ledger.own(begin, "transfer-begin")

    async def begin(
        self,
        leg: Leg,
        destination: str,
        reason: str,
        summary: str,
        transcript: Sequence[tuple[str, str]],
        messages: Sequence[Any],
        asked_at: float | None = None,
    ) -> WarmTransfer | None:
        """Put the caller on hold and start dialling; None (the agent told why) if the caller stays with the bot."""
        call = leg.call
        assert call is not None
        if self._ledger.for_caller(call.call_sid) is not None:
            leg.tell_agent("A transfer for this caller is already under way. Do not start another.")
            return None
        brief = TransferBrief(
            caller_number=call.from_number,
            destination=destination,
            reason=reason,
            summary=summary,
            transcript=tuple(transcript)[-TRANSCRIPT_LINES:],
        )
        transfer = _new_transfer(call, brief, messages, asked_at)
        self._ledger.add(transfer)
        transfer.log.info("warm transfer %s to %s (%s): moving the caller to hold", transfer.id, destination, reason)
        if not await self._calls.hold(transfer):
            self._hold_failed(transfer, leg)
            return None
        self._ledger.set(transfer, State.DIALLING, f"caller on hold in {transfer.conference}; dialling {destination}")
        self._ledger.spawn(self._calls.dial(transfer), f"transfer-dial:{call.call_sid}")
        return transfer

    def _hold_failed(self, transfer: WarmTransfer, leg: Leg) -> None:
        """Twilio would not put the caller on hold: they stay with the bot, which is told to offer a message."""
        self._ledger.forget(transfer)
        self._ledger.count("rest_failure")
        self._ledger.error("transfer_rest")
        transfer.log.warning("warm transfer %s failed: Twilio did not take the caller to hold", transfer.id)
        leg.tell_agent(
            "The transfer failed: the phone system did not take the request, and the caller is still with you. "
            "Apologise, and offer to take a message or arrange a callback."
        )

    def adopt(self, transfer: WarmTransfer, observers: Observers) -> None:
        """The caller's session has ended: its recording and feed now follow the transfer until it settles."""
        transfer.timeline.adopt(observers)
        if transfer.settled:
            self._ledger.close_timeline(transfer)

    # --- 3. brief ---------------------------------------------------------------------------------

    def role_for(self, parameters: Mapping[str, str], call_sid: str) -> StreamRole | None:
        """How a new stream takes part in a transfer: a briefing leg, a caller coming back, or neither (None).

        A briefing stream for a transfer this process does not know (over, or started by another replica)
        gets a refusing role: its call is hung up rather than briefed about nobody."""
        if BRIEFING_PARAMETER in parameters:
            return self._briefing_role(parameters[BRIEFING_PARAMETER], call_sid)
        if RETURN_PARAMETER in parameters:
            return self._returning_role(parameters[RETURN_PARAMETER], call_sid)
        return None

    def _briefing_role(self, transfer_id: str, call_sid: str) -> StreamRole:
        transfer = self._ledger.get(transfer_id)
        if transfer is None or transfer.state not in (State.DIALLING, State.RINGING):
            why = "unknown transfer" if transfer is None else f"transfer is {transfer.state}"
            return StreamRole(refusal=f"briefing stream refused: {why}")
        self._ledger.attach_person(transfer, call_sid)
        return BriefingRole(self, transfer)

    def _returning_role(self, transfer_id: str, call_sid: str) -> StreamRole | None:
        transfer = self._ledger.get(transfer_id)
        if transfer is None or transfer.caller.call_sid != call_sid or transfer.returned_stream:
            log.warning("call=%s | returning stream for an unknown transfer: starting afresh", call_sid)
            return None
        transfer.returned_stream = True
        return ReturningRole(transfer)

    def briefing_started(self, transfer: WarmTransfer, leg: Leg) -> None:
        transfer.briefing = leg
        transfer.answered_at = transfer.answered_at or time.monotonic()
        self._ledger.set(transfer, State.BRIEFING, f"{transfer.destination} answered: briefing them")
        self._ledger.later(transfer, self._settings.transfer_accept_timeout_s, self._accept_expired, transfer)

    def briefing_heard(self, transfer: WarmTransfer) -> None:
        """The first briefing audio went out to the person: the figure docs/benchmarks.md (Warm transfer) quotes."""
        if transfer.briefing_heard_at is not None:
            return
        transfer.briefing_heard_at = time.monotonic()
        delay = transfer.briefing_heard_at - transfer.requested_at
        transfer.log.info(
            "transfer %s: briefing audio reached person=%s %.2fs after the transfer",
            transfer.id,
            transfer.person_sid,
            delay,
        )
        transfer.note("transfer", f"briefing started {delay:.2f}s after the transfer was requested")
        self._ledger.briefing_delay(delay)

    def take_warm(self, call_sid: str) -> WarmAgent | None:
        return self._warmer.take(call_sid)

    def _accept_expired(self, transfer: WarmTransfer) -> None:
        if transfer.state is not State.BRIEFING:
            return
        limit = self._settings.transfer_accept_timeout_s
        transfer.log.info("transfer %s: no decision within %.0fs", transfer.id, limit)
        if transfer.briefing is not None:
            transfer.briefing.end_call("no decision in time")
        self._calls.spawn_return(transfer, "timeout", f"they did not accept within {limit:.0f} seconds")

    def briefing_ended(self, transfer: WarmTransfer, reason: str) -> None:
        """The briefing leg's session is over; if nothing was decided, the person hung up or was lost."""
        transfer.briefing = None
        if transfer.state is State.BRIEFING:
            transfer.log.info("transfer %s: the briefing leg ended undecided (%s)", transfer.id, reason)
            self._calls.spawn_return(transfer, "person_hung_up", "they hung up during the briefing")

    # --- 4. join, 5. return -----------------------------------------------------------------------

    async def join(self, transfer: WarmTransfer) -> HandOff | None:
        """Accepted: move the person's call into the caller's conference (the briefing stream stops)."""
        return await self._calls.join(transfer)

    def start_join(self, transfer: WarmTransfer) -> asyncio.Task[HandOff | None]:
        """:meth:`join` as this desk's task: joining stops the briefing stream, whose teardown must not cut it."""
        return self._ledger.own(self.join(transfer), "transfer-join")

    def decline(self, transfer: WarmTransfer, reason: str) -> None:
        if transfer.state is State.BRIEFING:
            transfer.log.info("transfer %s: declined (%s)", transfer.id, reason)
            self._calls.spawn_return(transfer, "declined", f"they declined ({reason})")

    # --- Twilio's callbacks -----------------------------------------------------------------------

    def on_status(self, kind: str, form: Mapping[str, Any], transfer_id: str | None) -> None:
        """A signed status callback: the person's call (``transfer``), the conference, or any call (``call``)."""
        self._callbacks.on_status(kind, form, transfer_id)

    # --- shutdown ---------------------------------------------------------------------------------

    async def settle_all(self, reason: str) -> None:
        """Server going away: end every transfer still waiting, so nobody stays on hold (callers are told)."""
        waiting = self._ledger.waiting()
        for transfer in waiting:
            if transfer.briefing is not None:
                transfer.briefing.end_call(reason)
        returns = (self._calls.bring_back(t, "shutdown", reason) for t in waiting)
        await asyncio.gather(*returns, return_exceptions=True)

    async def aclose(self) -> None:
        """App shutdown: cancel every timer and task (after ``settle_all`` in a graceful drain)."""
        await self._ledger.cancel_all()
        await self._warmer.aclose()
        await self._ledger.close_timelines("server stopped mid-transfer")


def _new_transfer(
    call: CallInfo, brief: TransferBrief, messages: Sequence[Any], asked_at: float | None
) -> WarmTransfer:
    """A transfer record for this caller: a fresh id and conference, the conversation as it can be resumed."""
    return WarmTransfer(
        id=secrets.token_urlsafe(12),
        caller=call,
        brief=brief,
        history=resumable_history(messages),
        conference=conference_name(),
        log=CallLog(log, call.call_sid),
        requested_at=asked_at or time.monotonic(),
    )

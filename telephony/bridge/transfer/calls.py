"""What a transfer asks Twilio to do to its two calls: hold the caller, dial the person, join them, or bring
the caller back. Each request is retried where that is safe; when one keeps failing, nobody is left on hold.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from telephony.bridge.prewarm import Prewarmer
from telephony.bridge.transfer.ledger import Ledger
from telephony.bridge.transfer.links import LINKED_PARAMETER, TransferLinks
from telephony.bridge.transfer.state import WAITING, HandOff, State, WarmTransfer
from telephony.call_info import CallInfo
from telephony.config import Settings
from telephony.operations.logs import CallLog
from telephony.twilio.calls_api import (
    CALL_OVER,
    REST_TIMEOUT_S,
    TransferClient,
    hang_up_with_retries,
    redirect_with_retries,
)
from telephony.twilio.conference import hold_twiml, join_twiml, sorry_twiml

log = logging.getLogger(__name__)

RING_GRACE_S = 15.0
"""Past the ring timeout, how long to wait for Twilio's verdict before giving up on the call ourselves
(Twilio may add about 5 s to ``Timeout``)."""
MAX_DIAL_TIME_LIMIT_S = 14400
"""Twilio's ceiling (and default) for ``<Dial timeLimit>``: four hours."""


class TransferCalls:
    """The REST side of every transfer: updates to the caller's call, the call to the person, hang-ups."""

    def __init__(
        self,
        settings: Settings,
        client: TransferClient,
        ledger: Ledger,
        warmer: Prewarmer,
        links: TransferLinks,
        draining: Callable[[], bool],
    ) -> None:
        self._settings = settings
        self._client = client
        self._ledger = ledger
        self._warmer = warmer
        self._links = links
        self._draining = draining

    # --- 1. hold ----------------------------------------------------------------------------------

    async def hold(self, transfer: WarmTransfer) -> bool:
        """Move the caller into the (not yet started) conference, where they hear hold music."""
        wait_url = self._settings.transfer_hold_url
        time_limit = min(round(self._settings.max_call_s), MAX_DIAL_TIME_LIMIT_S)
        twiml = hold_twiml(transfer.conference, wait_url, self._links.conference_url(transfer), time_limit)
        return await redirect_with_retries(
            self._client, transfer.caller.call_sid, twiml, "moving the caller to hold", transfer.log
        )

    # --- 2. dial ----------------------------------------------------------------------------------

    async def dial(self, transfer: WarmTransfer) -> None:
        """Call the person (their stream comes back as the briefing leg) and pre-warm a briefing agent."""
        twiml = self._links.briefing_twiml(transfer)
        from_ = self._settings.twilio_phone_number or transfer.caller.to_number
        sid = await self._place_call(transfer, from_, twiml)
        if sid is None:
            self._ledger.error("transfer_rest")
            await self.bring_back(transfer, "rest_failure", "the call to them could not be placed")
            return
        self._ledger.attach_person(transfer, sid)
        if transfer.state not in WAITING and transfer.state is not State.HOLDING:
            transfer.log.info("the transfer ended while dialling: hanging up person=%s", sid)
            await hang_up_with_retries(self._client, sid, transfer.log)
            return
        self._warmer.warm(self._person_call(transfer, sid, from_))
        give_up = self._settings.transfer_ring_timeout_s + RING_GRACE_S
        self._ledger.later(transfer, give_up, self._ring_expired, transfer)

    async def _place_call(self, transfer: WarmTransfer, from_: str, twiml: str) -> str | None:
        """The person's call SID, or None if Twilio would not place the call."""
        for attempt in (1, 2):
            try:
                return await asyncio.wait_for(
                    self._client.dial(
                        transfer.destination,
                        from_,
                        twiml,
                        self._links.person_url(transfer),
                        self._settings.transfer_ring_timeout_s,
                    ),
                    REST_TIMEOUT_S,
                )
            except Exception as error:  # noqa: BLE001 - the caller is brought back and told
                transfer.log.warning("dialling %s failed (attempt %d): %r", transfer.destination, attempt, error)
                if not _transient(error):
                    break  # a timeout may have created the call: never dial twice (its callbacks hang it up)
                await asyncio.sleep(0.5)
        return None

    @staticmethod
    def _person_call(transfer: WarmTransfer, sid: str, from_: str) -> CallInfo:
        """The person's call as the briefing agent will see it (what the pre-warmed agent is built for)."""
        return CallInfo(
            call_sid=sid,
            stream_sid="",
            account_sid=transfer.caller.account_sid,
            from_number=from_,
            to_number=transfer.destination,
            parameters={LINKED_PARAMETER: transfer.caller.call_sid},
            transfer=transfer.brief,
        )

    def _ring_expired(self, transfer: WarmTransfer) -> None:
        if transfer.state in (State.DIALLING, State.RINGING):
            self.spawn_return(transfer, "no_answer", "nobody answered")

    # --- 4. join ----------------------------------------------------------------------------------

    async def join(self, transfer: WarmTransfer) -> HandOff | None:
        """Accepted: move the person's call into the caller's conference (the briefing stream stops)."""
        if transfer.state is not State.BRIEFING or transfer.person_sid is None:
            why = "the caller is no longer waiting" if transfer.settled else f"transfer is {transfer.state}"
            transfer.log.info("transfer %s: accept ignored: %s", transfer.id, why)
            if transfer.briefing is not None:
                transfer.briefing.tell_agent(f"Note: {why}. Apologise to the colleague, say goodbye, and decline.")
            return None
        self._ledger.set(transfer, State.JOINING, "accepted: joining them to the caller")
        twiml = join_twiml(transfer.conference, self._links.conference_url(transfer))
        if not await redirect_with_retries(
            self._client, transfer.person_sid, twiml, "joining the person", transfer.log
        ):
            self._ledger.error("transfer_rest")
            self.spawn_return(transfer, "rest_failure", "connecting them to you failed")
            return HandOff("could not join the person to the caller", hang_up=True)
        self.joined(transfer)
        return HandOff("joined the caller's conference")

    def joined(self, transfer: WarmTransfer) -> None:
        """The person is in the caller's conference (the join's answer or the conference's callback, whichever
        comes first): the transfer is done."""
        if transfer.state is not State.JOINING:
            return
        self._ledger.set(transfer, State.CONNECTED, f"{transfer.destination} joined the caller; the bot has left")
        self._ledger.settle(transfer, "connected", f"warm transfer to {transfer.destination}: connected")

    # --- 5. return --------------------------------------------------------------------------------

    def spawn_return(self, transfer: WarmTransfer, outcome: str, what_happened: str) -> None:
        """:meth:`bring_back` as the desk's task."""
        name = f"transfer-return:{transfer.caller.call_sid}"
        self._ledger.spawn(self.bring_back(transfer, outcome, what_happened), name)

    async def bring_back(self, transfer: WarmTransfer, outcome: str, what_happened: str) -> None:
        """Bring the caller back to a fresh session that knows the conversation and what happened."""
        if transfer.over_or_returning:
            return
        transfer.cancel_timers()
        transfer.outcome, transfer.what_happened = outcome, what_happened
        self._ledger.set(transfer, State.RETURNING, f"not transferred: {what_happened}; bringing the caller back")
        await self._release_person(transfer)
        await self._redirect_caller_back(transfer)
        self._ledger.settle(transfer, outcome, f"warm transfer to {transfer.destination}: {what_happened}")

    async def _release_person(self, transfer: WarmTransfer) -> None:
        """No briefing will happen: drop the warm agent, and stop the person's phone ringing."""
        if transfer.person_sid is None:
            return
        self._warmer.discard(transfer.person_sid, "transfer over")
        if transfer.briefing is None and transfer.person_status not in CALL_OVER:
            await hang_up_with_retries(self._client, transfer.person_sid, transfer.log)

    async def _redirect_caller_back(self, transfer: WarmTransfer) -> None:
        """The caller's call off hold: back to the bot, or (server draining) an apology; hung up if neither works."""
        call = transfer.caller
        if self._draining():
            twiml, how = sorry_twiml(), "the server is shutting down: caller told and hung up"
        else:
            twiml, how = self._links.return_twiml(transfer), "caller back with the bot"
        if await redirect_with_retries(self._client, call.call_sid, twiml, "bringing the caller back", transfer.log):
            self._ledger.set(transfer, State.RETURNED, how)
            return
        self._ledger.error("transfer_rest")
        transfer.log.error(
            "transfer %s: could not bring the caller back; hanging up so nobody waits on hold", transfer.id
        )
        await hang_up_with_retries(self._client, call.call_sid, transfer.log)
        self._ledger.set(transfer, State.ENDED, "could not bring the caller back: call ended")

    # --- hang-ups ---------------------------------------------------------------------------------

    def spawn_hang_up(self, call_sid: str, transfer: WarmTransfer | None, name: str) -> None:
        """:meth:`hang_up_orphan` as the desk's task."""
        self._ledger.spawn(self.hang_up_orphan(call_sid, transfer), name)

    async def hang_up_orphan(self, call_sid: str, transfer: WarmTransfer | None = None) -> None:
        """A person's call that no transfer needs any more (caller gone, transfer over, or unknown)."""
        clog = transfer.log if transfer is not None else CallLog(log, call_sid)
        clog.info("hanging up person call=%s: no caller to transfer", call_sid)
        await hang_up_with_retries(self._client, call_sid, clog)


def _transient(error: BaseException) -> bool:
    """Twilio answered "try later" (429, 5xx): the call was not created, so dialling again is safe and may work."""
    status = getattr(error, "status", None)
    return isinstance(status, int) and (status == 429 or status >= 500)

"""Twilio's status callbacks during a transfer: the person's call, the conference, and the caller's own call.

They drive the states the bridge cannot see from a media stream: the person's phone ringing, busy or
unanswered; the person joining the conference; the caller hanging up on hold. Every callback has been
signature-checked by the app before it gets here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from telephony.bridge.prewarm import Prewarmer
from telephony.bridge.transfer.calls import TransferCalls
from telephony.bridge.transfer.ledger import Ledger
from telephony.bridge.transfer.state import State, WarmTransfer
from telephony.twilio.calls_api import CALL_OVER

log = logging.getLogger(__name__)

PERSON_OUTCOMES = {
    "busy": ("busy", "their line was busy"),
    "no-answer": ("no_answer", "nobody answered"),
    "failed": ("failed", "the call to them could not be connected"),
    "canceled": ("failed", "the call to them was cancelled"),
    "completed": ("person_hung_up", "they hung up before hearing the briefing"),
}
"""How the person's call ended before the briefing: (outcome, what the returning agent is told)."""


class StatusCallbacks:
    """Turns each callback into the transfer's next step (or a hang-up of a call nobody needs)."""

    def __init__(self, ledger: Ledger, calls: TransferCalls, warmer: Prewarmer) -> None:
        self._ledger = ledger
        self._calls = calls
        self._warmer = warmer

    def on_status(self, kind: str, form: Mapping[str, Any], transfer_id: str | None) -> None:
        """A signed status callback: the person's call (``transfer``), the conference, or any call (``call``)."""
        call_sid = str(form.get("CallSid", ""))
        if kind == "call":
            self._caller_status(call_sid, form.get("CallStatus"))
            return
        transfer = self._ledger.get(transfer_id or "")
        if transfer is None:
            self._unknown_transfer(kind, call_sid, form.get("CallStatus"))
        elif kind == "transfer":
            self._person_status(transfer, call_sid, str(form.get("CallStatus", "")))
        elif kind == "conference":
            self._conference_event(transfer, call_sid, form)

    def caller_gone(self, transfer: WarmTransfer, why: str) -> None:
        """The caller left while waiting: nobody is left to transfer, so the person's call is ended too."""
        if transfer.over_or_returning:
            return
        transfer.cancel_timers()
        self._ledger.set(transfer, State.ENDED, why)
        if transfer.person_sid is not None:
            self._warmer.discard(transfer.person_sid, "caller hung up")
            self._calls.spawn_hang_up(transfer.person_sid, transfer, f"transfer-hangup:{transfer.person_sid}")
        self._ledger.settle(transfer, "caller_hung_up", f"warm transfer to {transfer.destination}: {why}")

    def _caller_status(self, call_sid: str, status: object) -> None:
        """Any call's status: if it is a caller on hold whose call is over, the transfer ends."""
        transfer = self._ledger.for_caller(call_sid)
        if transfer is not None and status in CALL_OVER:
            self.caller_gone(transfer, f"caller's call {status}")

    def _unknown_transfer(self, kind: str, call_sid: str, status: object) -> None:
        """A callback for a transfer that is over or never was here: a person answering it is hung up."""
        log.info("call=%s | %s callback for an unknown or forgotten transfer", call_sid or "?", kind)
        if kind == "transfer" and status == "in-progress" and call_sid:
            self._calls.spawn_hang_up(call_sid, None, f"transfer-orphan:{call_sid}")

    def _person_status(self, transfer: WarmTransfer, call_sid: str, status: str) -> None:
        if call_sid:
            self._ledger.attach_person(transfer, call_sid)
        transfer.person_status = status
        transfer.log.info("transfer %s: person call=%s %s", transfer.id, call_sid, status)
        if status in ("initiated", "queued"):
            return
        if status == "ringing":
            if transfer.state is State.DIALLING:
                self._ledger.set(transfer, State.RINGING, f"ringing {transfer.destination}")
        elif status == "in-progress":
            transfer.answered_at = transfer.answered_at or time.monotonic()
            if transfer.state in (State.RETURNING, State.RETURNED, State.ENDED):
                self._calls.spawn_hang_up(call_sid, None, f"transfer-orphan:{call_sid}")
        elif status in CALL_OVER:
            self._person_gone(transfer, status)

    def _person_gone(self, transfer: WarmTransfer, status: str) -> None:
        if transfer.state in (State.DIALLING, State.RINGING):
            outcome, what = PERSON_OUTCOMES.get(status, ("failed", f"their call ended ({status})"))
            self._calls.spawn_return(transfer, outcome, what)
        elif transfer.state is State.BRIEFING:
            self._calls.spawn_return(transfer, "person_hung_up", "they hung up during the briefing")
        else:
            transfer.note("transfer", f"{transfer.destination}'s call ended ({status})")

    def _conference_event(self, transfer: WarmTransfer, call_sid: str, form: Mapping[str, Any]) -> None:
        event = str(form.get("StatusCallbackEvent", ""))
        who = _who(transfer, call_sid)
        transfer.log.info(
            "transfer %s: conference %s %s %s", transfer.id, event, who, form.get("ReasonParticipantLeft", "")
        )
        if event == "participant-join" and who == "person":
            self._calls.joined(transfer)
        elif event == "participant-leave" and who == "caller":
            moved = form.get("ReasonParticipantLeft") == "participant_updated_via_api"
            if not moved:
                self.caller_gone(transfer, "the caller hung up on hold")
        elif event in ("conference-start", "conference-end"):
            transfer.note("transfer", event.replace("-", " "))


def _who(transfer: WarmTransfer, call_sid: str) -> str:
    """Which of the transfer's two calls a conference event is about."""
    if call_sid == transfer.caller.call_sid:
        return "caller"
    return "person" if call_sid == transfer.person_sid else "?"

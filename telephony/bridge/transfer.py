"""Warm transfer: brief a person on a second call, then hand the caller over, or take the caller back.

One :class:`WarmTransfer` per transfer, owned by the app's :class:`WarmTransfers`. Its steps:

1. **hold** (the caller's session, once the hand-off line has been heard): the caller's call is updated to
   a conference that has not started, so Twilio plays hold music to them. Their media stream stops and their
   session ends; its recording and console feed stay open (adopted here) until the transfer is settled.
2. **dial**: the person is called with TwiML that streams their call back to us, marked as a briefing leg.
   A briefing agent is pre-warmed while it rings.
3. **brief**: the briefing leg's session runs the briefing agent (:meth:`WarmTransfers.role_for`), which
   briefs the person and takes their answer (its tools, or keys 1 and 2).
4. **join** (accepted): the person's call is updated into the conference and starts it: hold music stops,
   caller and person talk, and the bot has left both calls.
5. **return** (no answer, busy, failed, declined, no decision in time, person hung up, a REST request that
   kept failing): the caller's call is updated back to a ``<Connect><Stream>``; the new session's agent gets
   the conversation so far (``CallInfo.history``) and is told what happened.

Twilio's status callbacks (the person's call, the conference) drive the states in between; every one of them
is signature-checked by the app before it gets here. A caller hanging up on hold ends the person's call.
Everything here runs on the event loop; REST requests and timers run as tasks this registry owns.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from telephony.bridge.agent_factory import AgentFactory
from telephony.bridge.observer import Observers
from telephony.bridge.prewarm import Prewarmer, WarmAgent
from telephony.bridge.tasks import OwnedTasks
from telephony.call_info import CallInfo, TransferBrief
from telephony.config import Settings
from telephony.operations.logs import CallLog
from telephony.operations.metrics import Metrics
from telephony.twilio.call_control import (
    CALL_OVER,
    REST_TIMEOUT_S,
    TransferClient,
    hang_up_with_retries,
    redirect_with_retries,
)
from telephony.twilio.conference import conference_name, hold_twiml, join_twiml, sorry_twiml
from telephony.twilio.security import PARAMETER_NAME, CallTokens
from telephony.twilio.twiml import connect_twiml

log = logging.getLogger(__name__)
T = TypeVar("T")

BRIEFING_PARAMETER = "voicebotBriefing"
"""``<Parameter>`` on the person's stream: the id of the transfer it briefs for."""
RETURN_PARAMETER = "voicebotReturn"
"""``<Parameter>`` on a caller's stream after a transfer that did not go through: that transfer's id."""
DIAL_PARAMETER = "voicebotDial"
"""The person's call token is bound to ``dial:<transfer id>`` (their call SID is unknown when it is minted)."""
LINKED_PARAMETER = "transferOf"
"""Public ``<Parameter>`` on the person's stream: the caller's call SID (recorded with the briefing leg)."""
BRIEFING_GREETING = "The colleague has answered the phone. Brief them now."
RING_GRACE_S = 15.0
"""Past the ring timeout, how long to wait for Twilio's verdict before giving up on the call ourselves
(Twilio may add about 5 s to ``Timeout``)."""
LINGER_S = 180.0
"""How long a settled transfer is remembered: late callbacks are recognised, a returning stream finds its history."""
HISTORY_MESSAGES = 40
HISTORY_CHARS = 1000
"""What a fresh session is given of the conversation so far (Nova Sonic resumes from about 40 messages of
at most 1,000 bytes)."""
TRANSCRIPT_LINES = 200
MAX_DIAL_TIME_LIMIT_S = 14400
"""Twilio's ceiling (and default) for ``<Dial timeLimit>``: four hours."""
PERSON_OUTCOMES = {
    "busy": ("busy", "their line was busy"),
    "no-answer": ("no_answer", "nobody answered"),
    "failed": ("failed", "the call to them could not be connected"),
    "canceled": ("failed", "the call to them was cancelled"),
    "completed": ("person_hung_up", "they hung up before hearing the briefing"),
}


class State(StrEnum):
    HOLDING = "holding"
    DIALLING = "dialling"
    RINGING = "ringing"
    BRIEFING = "briefing"
    JOINING = "joining"
    CONNECTED = "connected"
    RETURNING = "returning"
    RETURNED = "returned"
    ENDED = "ended"


SETTLED = {State.CONNECTED, State.RETURNED, State.ENDED}
WAITING = {State.DIALLING, State.RINGING, State.BRIEFING}
"""The caller is on hold and nobody has decided anything yet."""


@dataclass(frozen=True)
class HandOff:
    """What a session does once a hand-off action has run (see ``CallSession.hand_off``)."""

    reason: str
    hang_up: bool = False
    """True: end the call (REST hang-up). False: the call has left this stream (moved elsewhere): just close."""


HandOffAction = Callable[[], Awaitable[HandOff | None]]
"""Runs once the bot's last words have been heard; None means the call goes on with the agent."""


class Leg(Protocol):
    """What a transfer needs from a call's session (``CallSession``), without importing it."""

    call: CallInfo | None

    def tell_agent(self, text: str) -> None: ...

    def end_call(self, reason: str) -> None: ...

    def hand_off(self, reason: str, action: HandOffAction, now: bool = False) -> None: ...


@dataclass
class WarmTransfer:
    """One warm transfer: both legs, the conference, where it stands, and when things happened."""

    id: str
    caller: CallInfo
    destination: str
    reason: str
    summary: str
    transcript: tuple[tuple[str, str], ...]
    history: tuple[dict[str, Any], ...]
    conference: str
    log: CallLog
    requested_at: float = field(default_factory=time.monotonic)
    state: State = State.HOLDING
    person_sid: str | None = None
    person_status: str = ""
    briefing: Leg | None = None
    answered_at: float | None = None
    briefing_heard_at: float | None = None
    outcome: str = ""
    what_happened: str = ""
    """In a few words, why the caller is back (what the returning agent is told)."""
    end_reason: str = ""
    """How the transfer ended, for the caller's recording and feed."""
    returned_stream: bool = False
    timers: list[asyncio.TimerHandle] = field(default_factory=list)
    observers: Observers | None = None
    pending_notes: list[tuple[str, str]] = field(default_factory=list)

    def note(self, kind: str, detail: str) -> None:
        """A line on the caller's timeline (recording, console feed): held until the observers are adopted."""
        if self.observers is None:
            self.pending_notes.append((kind, detail))
        else:
            self.observers.notify("note", kind, detail)

    def elapsed(self) -> float:
        return time.monotonic() - self.requested_at

    def cancel_timers(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()

    @property
    def brief(self) -> TransferBrief:
        return TransferBrief(
            caller_number=self.caller.from_number,
            destination=self.destination,
            reason=self.reason,
            summary=self.summary,
            transcript=self.transcript,
        )


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
        self._client = client
        self._briefing_factory = briefing_factory
        self._stream_url = stream_url
        self._status_url = status_url
        self._tokens = tokens
        self._metrics = metrics
        self._draining = draining
        self._by_id: dict[str, WarmTransfer] = {}
        self._by_caller: dict[str, WarmTransfer] = {}
        self._by_person: dict[str, WarmTransfer] = {}
        self._tasks = OwnedTasks(self._task_crashed)
        self._warmer = Prewarmer(briefing_factory, ttl_s=settings.transfer_ring_timeout_s + RING_GRACE_S)

    # --- queries ----------------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Transfers not settled yet (someone may be on hold): shutdown waits for these."""
        return sum(1 for transfer in self._by_id.values() if transfer.state not in SETTLED)

    def get(self, transfer_id: str) -> WarmTransfer | None:
        return self._by_id.get(transfer_id)

    def for_caller(self, call_sid: str) -> WarmTransfer | None:
        return self._by_caller.get(call_sid)

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
        return self._own(begin, "transfer-begin")

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
        clog = CallLog(log, call.call_sid)
        if call.call_sid in self._by_caller:
            leg.tell_agent("A transfer for this caller is already under way. Do not start another.")
            return None
        transfer = WarmTransfer(
            id=secrets.token_urlsafe(12),
            caller=call,
            destination=destination,
            reason=reason,
            summary=summary,
            transcript=tuple(transcript)[-TRANSCRIPT_LINES:],
            history=resumable_history(messages),
            conference=conference_name(),
            log=clog,
            requested_at=asked_at or time.monotonic(),
        )
        self._by_id[transfer.id] = self._by_caller[call.call_sid] = transfer
        clog.info("warm transfer %s to %s (%s): moving the caller to hold", transfer.id, destination, reason)
        wait_url = self._settings.transfer_hold_url
        time_limit = min(round(self._settings.max_call_s), MAX_DIAL_TIME_LIMIT_S)
        twiml = hold_twiml(transfer.conference, wait_url, self._conference_url(transfer), time_limit)
        if not await redirect_with_retries(self._client, call.call_sid, twiml, "moving the caller to hold", clog):
            self._forget(transfer)
            self._count("rest_failure")
            self._error("transfer_rest")
            clog.warning("warm transfer %s failed: Twilio did not take the caller to hold", transfer.id)
            leg.tell_agent(
                "The transfer failed: the phone system did not take the request, and the caller is still with you. "
                "Apologise, and offer to take a message or arrange a callback."
            )
            return None
        self._set(transfer, State.DIALLING, f"caller on hold in {transfer.conference}; dialling {destination}")
        self._spawn(self._dial(transfer), f"transfer-dial:{call.call_sid}")
        return transfer

    def adopt(self, transfer: WarmTransfer, observers: Observers) -> None:
        """The caller's session has ended: its recording and feed now follow the transfer until it settles."""
        transfer.observers = observers
        for kind, detail in transfer.pending_notes:
            observers.notify("note", kind, detail)
        transfer.pending_notes.clear()
        if transfer.state in SETTLED:
            self._spawn(self._close_observers(transfer), f"transfer-close:{transfer.caller.call_sid}")

    # --- 2. dial ----------------------------------------------------------------------------------

    async def _dial(self, transfer: WarmTransfer) -> None:
        parameters = {
            LINKED_PARAMETER: transfer.caller.call_sid,
            BRIEFING_PARAMETER: transfer.id,
            DIAL_PARAMETER: transfer.id,
        }
        if self._tokens is not None:
            parameters[PARAMETER_NAME] = self._tokens.mint(f"dial:{transfer.id}")
        twiml = connect_twiml(self._stream_url, parameters, self._status_url("stream"))
        from_ = self._settings.twilio_phone_number or transfer.caller.to_number
        sid: str | None = None
        for attempt in (1, 2):
            try:
                sid = await asyncio.wait_for(
                    self._client.dial(
                        transfer.destination,
                        from_,
                        twiml,
                        self._person_url(transfer),
                        self._settings.transfer_ring_timeout_s,
                    ),
                    REST_TIMEOUT_S,
                )
                break
            except Exception as error:  # noqa: BLE001 - the caller is brought back and told
                transfer.log.warning("dialling %s failed (attempt %d): %r", transfer.destination, attempt, error)
                if not _transient(error):
                    break  # a timeout may have created the call: never dial twice (its callbacks hang it up)
                await asyncio.sleep(0.5)
        if sid is None:
            self._error("transfer_rest")
            await self._return(transfer, "rest_failure", "the call to them could not be placed")
            return
        self._attach_person(transfer, sid)
        if transfer.state not in WAITING and transfer.state is not State.HOLDING:
            transfer.log.info("the transfer ended while dialling: hanging up person=%s", sid)
            await hang_up_with_retries(self._client, sid, transfer.log)
            return
        self._warmer.warm(
            CallInfo(
                call_sid=sid,
                stream_sid="",
                account_sid=transfer.caller.account_sid,
                from_number=from_,
                to_number=transfer.destination,
                parameters={LINKED_PARAMETER: transfer.caller.call_sid},
                transfer=transfer.brief,
            )
        )
        give_up = self._settings.transfer_ring_timeout_s + RING_GRACE_S
        self._later(transfer, give_up, self._ring_expired, transfer)

    def _attach_person(self, transfer: WarmTransfer, sid: str) -> None:
        if transfer.person_sid is None:
            transfer.person_sid = sid
            self._by_person[sid] = transfer
            transfer.log.info("transfer %s: person call=%s placed to %s", transfer.id, sid, transfer.destination)

    def _ring_expired(self, transfer: WarmTransfer) -> None:
        if transfer.state in (State.DIALLING, State.RINGING):
            self._spawn_return(transfer, "no_answer", "nobody answered")

    # --- 3. brief ---------------------------------------------------------------------------------

    def role_for(self, parameters: Mapping[str, str], call_sid: str) -> StreamRole | None:
        """How a new stream takes part in a transfer: a briefing leg, a caller coming back, or neither (None).

        A briefing stream for a transfer this process does not know (over, or started by another replica)
        gets a refusing role: its call is hung up rather than briefed about nobody."""
        if BRIEFING_PARAMETER in parameters:
            transfer = self._by_id.get(parameters[BRIEFING_PARAMETER])
            if transfer is None or transfer.state not in (State.DIALLING, State.RINGING):
                why = "unknown transfer" if transfer is None else f"transfer is {transfer.state}"
                return StreamRole(refusal=f"briefing stream refused: {why}")
            self._attach_person(transfer, call_sid)
            return BriefingRole(self, transfer)
        if RETURN_PARAMETER in parameters:
            transfer = self._by_id.get(parameters[RETURN_PARAMETER])
            if transfer is None or transfer.caller.call_sid != call_sid or transfer.returned_stream:
                log.warning("call=%s | returning stream for an unknown transfer: starting afresh", call_sid)
                return None
            transfer.returned_stream = True
            return ReturningRole(transfer)
        return None

    def briefing_started(self, transfer: WarmTransfer, leg: Leg) -> None:
        transfer.briefing = leg
        transfer.answered_at = transfer.answered_at or time.monotonic()
        self._set(transfer, State.BRIEFING, f"{transfer.destination} answered: briefing them")
        self._later(transfer, self._settings.transfer_accept_timeout_s, self._accept_expired, transfer)

    def briefing_heard(self, transfer: WarmTransfer) -> None:
        """The first briefing audio went out to the person: the figure the README quotes."""
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
        if self._metrics is not None:
            self._metrics.transfer_briefing_delay.observe(delay)

    def take_warm(self, call_sid: str) -> WarmAgent | None:
        return self._warmer.take(call_sid)

    def _accept_expired(self, transfer: WarmTransfer) -> None:
        if transfer.state is not State.BRIEFING:
            return
        limit = self._settings.transfer_accept_timeout_s
        transfer.log.info("transfer %s: no decision within %.0fs", transfer.id, limit)
        if transfer.briefing is not None:
            transfer.briefing.end_call("no decision in time")
        self._spawn_return(transfer, "timeout", f"they did not accept within {limit:.0f} seconds")

    def briefing_ended(self, transfer: WarmTransfer, reason: str) -> None:
        """The briefing leg's session is over; if nothing was decided, the person hung up or was lost."""
        transfer.briefing = None
        if transfer.state is State.BRIEFING:
            transfer.log.info("transfer %s: the briefing leg ended undecided (%s)", transfer.id, reason)
            self._spawn_return(transfer, "person_hung_up", "they hung up during the briefing")

    # --- 4. join ----------------------------------------------------------------------------------

    async def join(self, transfer: WarmTransfer) -> HandOff | None:
        """Accepted: move the person's call into the caller's conference (the briefing stream stops)."""
        if transfer.state is not State.BRIEFING or transfer.person_sid is None:
            why = "the caller is no longer waiting" if transfer.state in SETTLED else f"transfer is {transfer.state}"
            transfer.log.info("transfer %s: accept ignored: %s", transfer.id, why)
            if transfer.briefing is not None:
                transfer.briefing.tell_agent(f"Note: {why}. Apologise to the colleague, say goodbye, and decline.")
            return None
        self._set(transfer, State.JOINING, "accepted: joining them to the caller")
        twiml = join_twiml(transfer.conference, self._conference_url(transfer))
        if not await redirect_with_retries(
            self._client, transfer.person_sid, twiml, "joining the person", transfer.log
        ):
            self._error("transfer_rest")
            self._spawn_return(transfer, "rest_failure", "connecting them to you failed")
            return HandOff("could not join the person to the caller", hang_up=True)
        if transfer.state is State.JOINING:
            self._set(transfer, State.CONNECTED, f"{transfer.destination} joined the caller; the bot has left")
            self._settle(transfer, "connected", f"warm transfer to {transfer.destination}: connected")
        return HandOff("joined the caller's conference")

    # --- 5. return --------------------------------------------------------------------------------

    def decline(self, transfer: WarmTransfer, reason: str) -> None:
        if transfer.state is State.BRIEFING:
            transfer.log.info("transfer %s: declined (%s)", transfer.id, reason)
            self._spawn_return(transfer, "declined", f"they declined ({reason})")

    def _spawn_return(self, transfer: WarmTransfer, outcome: str, what_happened: str) -> None:
        self._spawn(self._return(transfer, outcome, what_happened), f"transfer-return:{transfer.caller.call_sid}")

    async def _return(self, transfer: WarmTransfer, outcome: str, what_happened: str) -> None:
        """Bring the caller back to a fresh session that knows the conversation and what happened."""
        if transfer.state in SETTLED or transfer.state is State.RETURNING:
            return
        transfer.cancel_timers()
        transfer.outcome, transfer.what_happened = outcome, what_happened
        self._set(transfer, State.RETURNING, f"not transferred: {what_happened}; bringing the caller back")
        if transfer.person_sid is not None:
            self._warmer.discard(transfer.person_sid, "transfer over")
            if transfer.briefing is None and transfer.person_status not in CALL_OVER:
                await hang_up_with_retries(self._client, transfer.person_sid, transfer.log)  # stop it ringing
        call = transfer.caller
        if self._draining():
            twiml, how = sorry_twiml(), "the server is shutting down: caller told and hung up"
        else:
            twiml, how = self._return_twiml(transfer), "caller back with the bot"
        if await redirect_with_retries(self._client, call.call_sid, twiml, "bringing the caller back", transfer.log):
            self._set(transfer, State.RETURNED, how)
        else:
            self._error("transfer_rest")
            transfer.log.error(
                "transfer %s: could not bring the caller back; hanging up so nobody waits on hold", transfer.id
            )
            await hang_up_with_retries(self._client, call.call_sid, transfer.log)
            self._set(transfer, State.ENDED, "could not bring the caller back: call ended")
        self._settle(transfer, outcome, f"warm transfer to {transfer.destination}: {what_happened}")

    def _return_twiml(self, transfer: WarmTransfer) -> str:
        call = transfer.caller
        parameters = {"From": call.from_number, "To": call.to_number, "CallSid": call.call_sid}
        parameters = {name: value for name, value in parameters.items() if value}
        parameters[RETURN_PARAMETER] = transfer.id
        if self._tokens is not None:
            parameters[PARAMETER_NAME] = self._tokens.mint(call.call_sid)
        return connect_twiml(self._stream_url, parameters, self._status_url("stream"))

    # --- Twilio's callbacks -----------------------------------------------------------------------

    def on_status(self, kind: str, form: Mapping[str, Any], transfer_id: str | None) -> None:
        """A signed status callback: the person's call (``transfer``), the conference, or any call (``call``)."""
        call_sid = str(form.get("CallSid", ""))
        if kind == "call":
            transfer = self._by_caller.get(call_sid)
            if transfer is not None and form.get("CallStatus") in CALL_OVER:
                self._caller_gone(transfer, f"caller's call {form.get('CallStatus')}")
            return
        transfer = self._by_id.get(transfer_id or "")
        if transfer is None:
            log.info("call=%s | %s callback for an unknown or forgotten transfer", call_sid or "?", kind)
            if kind == "transfer" and form.get("CallStatus") == "in-progress" and call_sid:
                self._spawn(self._hang_up_orphan(call_sid), f"transfer-orphan:{call_sid}")
            return
        if kind == "transfer":
            self._person_status(transfer, call_sid, str(form.get("CallStatus", "")))
        elif kind == "conference":
            self._conference_event(transfer, call_sid, form)

    def _person_status(self, transfer: WarmTransfer, call_sid: str, status: str) -> None:
        if call_sid:
            self._attach_person(transfer, call_sid)
        transfer.person_status = status
        transfer.log.info("transfer %s: person call=%s %s", transfer.id, call_sid, status)
        if status in ("initiated", "queued"):
            return
        if status == "ringing":
            if transfer.state is State.DIALLING:
                self._set(transfer, State.RINGING, f"ringing {transfer.destination}")
        elif status == "in-progress":
            transfer.answered_at = transfer.answered_at or time.monotonic()
            if transfer.state in (State.RETURNING, State.RETURNED, State.ENDED):
                self._spawn(self._hang_up_orphan(call_sid), f"transfer-orphan:{call_sid}")
        elif status in CALL_OVER:
            self._person_gone(transfer, status)

    def _person_gone(self, transfer: WarmTransfer, status: str) -> None:
        if transfer.state in (State.DIALLING, State.RINGING):
            outcome, what = PERSON_OUTCOMES.get(status, ("failed", f"their call ended ({status})"))
            self._spawn_return(transfer, outcome, what)
        elif transfer.state is State.BRIEFING:
            self._spawn_return(transfer, "person_hung_up", "they hung up during the briefing")
        else:
            transfer.note("transfer", f"{transfer.destination}'s call ended ({status})")

    def _conference_event(self, transfer: WarmTransfer, call_sid: str, form: Mapping[str, Any]) -> None:
        event = str(form.get("StatusCallbackEvent", ""))
        who = "caller" if call_sid == transfer.caller.call_sid else "person" if call_sid == transfer.person_sid else "?"
        transfer.log.info(
            "transfer %s: conference %s %s %s", transfer.id, event, who, form.get("ReasonParticipantLeft", "")
        )
        if event == "participant-join" and who == "person" and transfer.state is State.JOINING:
            self._set(transfer, State.CONNECTED, f"{transfer.destination} joined the caller; the bot has left")
            self._settle(transfer, "connected", f"warm transfer to {transfer.destination}: connected")
        elif event == "participant-leave" and who == "caller":
            moved = form.get("ReasonParticipantLeft") == "participant_updated_via_api"
            if not moved:
                self._caller_gone(transfer, "the caller hung up on hold")
        elif event in ("conference-start", "conference-end"):
            transfer.note("transfer", event.replace("-", " "))

    def _caller_gone(self, transfer: WarmTransfer, why: str) -> None:
        """The caller left while waiting: nobody is left to transfer, so the person's call is ended too."""
        if transfer.state in SETTLED or transfer.state is State.RETURNING:
            return
        transfer.cancel_timers()
        self._set(transfer, State.ENDED, why)
        if transfer.person_sid is not None:
            self._warmer.discard(transfer.person_sid, "caller hung up")
            self._spawn(self._hang_up_orphan(transfer.person_sid, transfer), f"transfer-hangup:{transfer.person_sid}")
        self._settle(transfer, "caller_hung_up", f"warm transfer to {transfer.destination}: {why}")

    async def _hang_up_orphan(self, call_sid: str, transfer: WarmTransfer | None = None) -> None:
        """A person's call that no transfer needs any more (caller gone, transfer over, or unknown)."""
        clog = transfer.log if transfer is not None else CallLog(log, call_sid)
        clog.info("hanging up person call=%s: no caller to transfer", call_sid)
        await hang_up_with_retries(self._client, call_sid, clog)

    # --- shutdown ---------------------------------------------------------------------------------

    async def settle_all(self, reason: str) -> None:
        """Server going away: end every transfer still waiting, so nobody stays on hold (callers are told)."""
        waiting = [t for t in self._by_id.values() if t.state in WAITING or t.state is State.HOLDING]
        for transfer in waiting:
            if transfer.briefing is not None:
                transfer.briefing.end_call(reason)
        await asyncio.gather(*(self._return(t, "shutdown", reason) for t in waiting), return_exceptions=True)

    async def aclose(self) -> None:
        """App shutdown: cancel every timer and task (after ``settle_all`` in a graceful drain)."""
        for transfer in self._by_id.values():
            transfer.cancel_timers()
        await self._tasks.cancel_all()
        await self._warmer.aclose()
        for transfer in self._by_id.values():
            if transfer.observers is not None:
                await transfer.observers.close(transfer.end_reason or "server stopped mid-transfer", "server")
                transfer.observers = None

    # --- plumbing ---------------------------------------------------------------------------------

    def _set(self, transfer: WarmTransfer, state: State, detail: str) -> None:
        transfer.state = state
        transfer.log.info("transfer %s: %s (%.2fs) | %s", transfer.id, state, transfer.elapsed(), detail)
        transfer.note("transfer", f"{state}: {detail}")

    def _settle(self, transfer: WarmTransfer, outcome: str, summary: str) -> None:
        """Done: count it, close the caller's recording with the outcome, forget it after a while."""
        transfer.cancel_timers()
        transfer.outcome = transfer.outcome or outcome
        transfer.end_reason = summary
        self._by_caller.pop(transfer.caller.call_sid, None)  # a returned caller may be transferred again
        self._count(outcome)
        transfer.log.info(
            "transfer %s settled | outcome=%s person=%s after=%.1fs briefing_after=%s",
            transfer.id,
            outcome,
            transfer.person_sid or "-",
            transfer.elapsed(),
            f"{transfer.briefing_heard_at - transfer.requested_at:.2f}s" if transfer.briefing_heard_at else "-",
        )
        if transfer.observers is not None:
            self._spawn(self._close_observers(transfer), f"transfer-close:{transfer.caller.call_sid}")
        asyncio.get_running_loop().call_later(LINGER_S, self._forget, transfer)

    async def _close_observers(self, transfer: WarmTransfer) -> None:
        observers, transfer.observers = transfer.observers, None
        if observers is not None:
            await observers.close(transfer.end_reason, "transfer")

    def _forget(self, transfer: WarmTransfer) -> None:
        transfer.cancel_timers()
        self._by_id.pop(transfer.id, None)
        if self._by_caller.get(transfer.caller.call_sid) is transfer:
            self._by_caller.pop(transfer.caller.call_sid, None)
        if transfer.person_sid is not None and self._by_person.get(transfer.person_sid) is transfer:
            self._by_person.pop(transfer.person_sid, None)

    def _later(self, transfer: WarmTransfer, seconds: float, callback: Callable[..., None], *args: Any) -> None:
        transfer.timers.append(asyncio.get_running_loop().call_later(seconds, callback, *args))

    def _spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        self._own(coroutine, name)

    def _own(self, coroutine: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        return self._tasks.spawn(coroutine, name)

    def _task_crashed(self, task: asyncio.Task[Any], error: BaseException) -> None:
        log.error("transfer task %s crashed: %r", task.get_name(), error, exc_info=error)
        self._error("internal")

    def _count(self, outcome: str) -> None:
        if self._metrics is not None:
            self._metrics.transfers.labels(mode="warm", outcome=outcome).inc()

    def _error(self, kind: str) -> None:
        if self._metrics is not None:
            self._metrics.errors.labels(kind=kind).inc()

    def _conference_url(self, transfer: WarmTransfer) -> str | None:
        url = self._status_url("conference")
        return f"{url}?transfer={transfer.id}" if url else None

    def _person_url(self, transfer: WarmTransfer) -> str | None:
        url = self._status_url("transfer")
        return f"{url}?transfer={transfer.id}" if url else None


# --- how a stream takes part ----------------------------------------------------------------------


class StreamRole:
    """A media stream's part in a transfer, decided at its ``start``. The base role changes nothing.

    ``refusal`` set: the stream must be closed (its call ends) instead of served."""

    factory: AgentFactory | None = None
    greeting: str | None = None

    def __init__(self, refusal: str | None = None) -> None:
        self.refusal = refusal

    def call_info(self, call: CallInfo) -> CallInfo:
        return call

    def started(self, leg: Leg) -> None:
        """The session is serving this stream."""

    def take_warm(self) -> WarmAgent | None:
        return None

    def control(self, leg: Leg) -> Any:
        """What the agent's tools get as their call control (the session itself unless a role says otherwise)."""
        return leg

    def on_dtmf(self, leg: Leg, digit: str) -> bool:
        """True if the role handled the keypress (the agent is not told)."""
        return False

    def audio_sent(self) -> None:
        """Bot audio went out on this stream (called for every utterance's first frame)."""

    def ended(self, reason: str) -> None:
        """The session is over."""


class BriefingRole(StreamRole):
    """The person's call: the briefing agent talks; 1 accepts, 2 declines; hanging up brings the caller back."""

    greeting = BRIEFING_GREETING

    def __init__(self, desk: WarmTransfers, transfer: WarmTransfer) -> None:
        super().__init__()
        self._desk = desk
        self.transfer = transfer
        self.factory = desk._briefing_factory

    def call_info(self, call: CallInfo) -> CallInfo:
        return replace(call, transfer=self.transfer.brief)

    def started(self, leg: Leg) -> None:
        self._desk.briefing_started(self.transfer, leg)

    def take_warm(self) -> WarmAgent | None:
        return self._desk.take_warm(self.transfer.person_sid or "")

    def control(self, leg: Leg) -> Any:
        return BriefingLegControl(self._desk, self.transfer, leg)

    def on_dtmf(self, leg: Leg, digit: str) -> bool:
        control = BriefingLegControl(self._desk, self.transfer, leg)
        if digit == "1":
            control.accept(now=True)
            return True
        if digit == "2":
            control.decline_transfer("declined on the keypad", now=True)
            return True
        return False

    def audio_sent(self) -> None:
        self._desk.briefing_heard(self.transfer)

    def ended(self, reason: str) -> None:
        self._desk.briefing_ended(self.transfer, reason)


class ReturningRole(StreamRole):
    """The caller back from a transfer that did not go through: same conversation, told what happened."""

    def __init__(self, transfer: WarmTransfer) -> None:
        super().__init__()
        self.transfer = transfer
        self.greeting = (
            f"Note for you, not to read out: the transfer to a colleague did not go through: {transfer.what_happened}. "
            "The caller is back with you now, having waited on hold. Tell them so in one or two sentences, and offer "
            "to take a message or arrange a callback."
        )

    def call_info(self, call: CallInfo) -> CallInfo:
        return replace(call, history=self.transfer.history)

    def started(self, leg: Leg) -> None:
        self.transfer.log.info("transfer %s: the caller is back with the bot", self.transfer.id)


class BriefingLegControl:
    """The ``BriefingControl`` the briefing agent's tools (and keys 1 and 2) act through. Thread-safe."""

    def __init__(self, desk: WarmTransfers, transfer: WarmTransfer, leg: Leg) -> None:
        self._desk = desk
        self._transfer = transfer
        self._leg = leg

    def accept_transfer(self) -> None:
        self.accept(now=False)

    def accept(self, now: bool) -> None:
        # Joining stops this very stream: the join runs as the desk's task so the session's teardown cannot cut it.
        async def join() -> HandOff | None:
            return await asyncio.shield(self._desk._own(self._desk.join(self._transfer), "transfer-join"))

        self._leg.hand_off("the person accepted", join, now=now)

    def decline_transfer(self, reason: str, now: bool = False) -> None:
        async def decline() -> HandOff:
            self._desk.decline(self._transfer, reason)
            return HandOff(f"the person declined ({reason})", hang_up=True)

        self._leg.hand_off(f"the person declined ({reason})", decline, now=now)

    def end_call(self, reason: str) -> None:
        """The briefing agent has no hang-up tool, but a custom one might: that is a decline."""
        self.decline_transfer(reason)

    def transfer_call(self, destination: str, reason: str, summary: str = "") -> None:
        self._leg.tell_agent("You cannot transfer this call: you are briefing a colleague. Use accept or decline.")


# --- helpers --------------------------------------------------------------------------------------


def resumable_history(messages: Sequence[Any]) -> tuple[dict[str, Any], ...]:
    """The conversation so far as plain text messages any model can resume from.

    Tool uses and results are dropped (a trimmed history could split a pair, which models reject), turns of
    the same role are merged, and only the last ``HISTORY_MESSAGES`` of at most ``HISTORY_CHARS`` are kept,
    starting with a user turn."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in ("user", "assistant"):
            continue
        texts = [
            str(block["text"]) for block in message.get("content", []) if isinstance(block, Mapping) and "text" in block
        ]
        text = " ".join(t.strip() for t in texts if t.strip())
        if not text:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"][0]["text"] += " " + text
        else:
            turns.append({"role": role, "content": [{"text": text}]})
    turns = turns[-HISTORY_MESSAGES:]
    while turns and turns[0]["role"] != "user":
        turns.pop(0)
    for turn in turns:
        turn["content"][0]["text"] = turn["content"][0]["text"][-HISTORY_CHARS:]
    return tuple(copy.deepcopy(turns))


def _transient(error: BaseException) -> bool:
    """Twilio answered "try later" (429, 5xx): the call was not created, so dialling again is safe and may work."""
    status = getattr(error, "status", None)
    return isinstance(status, int) and (status == 429 or status >= 500)

"""How a media stream takes part in a transfer: an ordinary call, the person being briefed, or a caller
coming back. The session asks the desk for a role when a stream starts and calls its hooks as it runs.

Roles reach the desk only through :class:`BriefingDesk` (its public briefing methods), so this module does
not depend on the desk itself.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, Protocol

from agent.briefing import BRIEFING_GREETING
from telephony.bridge.agent_factory import AgentFactory
from telephony.bridge.prewarm import WarmAgent
from telephony.bridge.transfer.state import HandOff, Leg, WarmTransfer
from telephony.call_info import CallInfo


class BriefingDesk(Protocol):
    """What a briefing leg needs from the desk (``WarmTransfers``)."""

    @property
    def briefing_factory(self) -> AgentFactory: ...

    def briefing_started(self, transfer: WarmTransfer, leg: Leg) -> None: ...

    def briefing_heard(self, transfer: WarmTransfer) -> None: ...

    def briefing_ended(self, transfer: WarmTransfer, reason: str) -> None: ...

    def take_warm(self, call_sid: str) -> WarmAgent | None: ...

    def start_join(self, transfer: WarmTransfer) -> asyncio.Task[HandOff | None]: ...

    def decline(self, transfer: WarmTransfer, reason: str) -> None: ...


class StreamRole:
    """A media stream's part in a transfer, decided at its ``start``. The base role changes nothing.

    ``refusal`` set: the stream must be closed (its call ends) instead of served."""

    factory: AgentFactory | None = None
    greeting: str | None = None
    checks_in: bool = True
    """A silent caller is checked on (telephony.bridge.dead_air)."""

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
    checks_in = False  # the person has the accept timeout to decide in; no "are you still there?"

    def __init__(self, desk: BriefingDesk, transfer: WarmTransfer) -> None:
        super().__init__()
        self._desk = desk
        self.transfer = transfer
        self.factory = desk.briefing_factory

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

    def __init__(self, desk: BriefingDesk, transfer: WarmTransfer, leg: Leg) -> None:
        self._desk = desk
        self._transfer = transfer
        self._leg = leg

    def accept_transfer(self) -> None:
        self.accept(now=False)

    def accept(self, now: bool) -> None:
        # Joining stops this very stream: the join runs as the desk's task so the session's teardown cannot cut it.
        async def join() -> HandOff | None:
            return await asyncio.shield(self._desk.start_join(self._transfer))

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

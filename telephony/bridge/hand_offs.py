"""How a call leaves the bot for a person: a cold transfer or a warm one, both one ``HandOffAction``.

A tool (or a key on a briefing leg) asks for a hand-off; :class:`CallLeg` takes the request from any thread
and arms it on the call's ending, which runs the action once the bot's last words have been heard (or at once,
cutting the bot off). :class:`HandOffs` makes the action for a transfer:

- **cold** (the default, or without Twilio credentials to hold the caller): the caller's call is redirected to
  a ``<Dial>`` and this stream ends;
- **warm** (``VOICEBOT_TRANSFER_MODE=warm``): the caller goes on hold while the person is briefed on a second
  call (telephony.bridge.transfer); if that does not go through, the caller comes back to a new stream.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from telephony.bridge.ending import CallEnding
from telephony.bridge.observer import Observers
from telephony.bridge.services import CallServices
from telephony.bridge.transfer import HandOff, HandOffAction, WarmTransfer
from telephony.call_info import CallInfo
from telephony.operations.logs import CallLog
from telephony.twilio.calls_api import REST_TIMEOUT_S
from telephony.twilio.twiml import dial_twiml


class HandOffHost(Protocol):
    """What a hand-off needs from its call (``CallSession`` implements it)."""

    call: CallInfo | None
    observers: Observers

    @property
    def log(self) -> CallLog: ...

    def tell_agent(self, text: str) -> None: ...

    def conversation(self) -> tuple[Sequence[tuple[str, str]], Sequence[Any]]:
        """The transcript lines and the agent's messages so far (a warm transfer briefs and resumes from them)."""


class HandOffs:
    """The transfers of one call. At most one warm transfer takes the caller to hold."""

    def __init__(self, services: CallServices, host: HandOffHost, leg: Any) -> None:
        self._services = services
        self._host = host
        self._leg = leg
        """The call as the warm-transfer desk sees it (``transfer.Leg``)."""
        self._handing_to: asyncio.Task[WarmTransfer | None] | None = None
        """The warm transfer taking this caller to hold: once it has, it inherits the recording and the feed."""
        self.transferred_to: str | None = None
        """Where a cold transfer took the caller (a warm one is known from ``handed_to``)."""

    def transfer(self, destination: str, reason: str, summary: str = "") -> HandOffAction:
        """The action that moves the call to ``destination``: warm if this server does warm transfers."""
        services = self._services
        warm = services.transfers is not None and services.settings.transfer_mode == "warm"
        if warm and services.call_control is not None:
            asked_at = time.monotonic()  # the briefing delay is counted from here, hand-off line included
            return functools.partial(self._warm, destination, reason, summary, asked_at)
        return functools.partial(self.cold, destination, reason)

    async def cold(self, destination: str, reason: str) -> HandOff | None:
        """Replace our stream with a ``<Dial>``; if Twilio refuses, the agent hears why and goes on."""
        host, rest = self._host, self._services.call_control
        assert host.call is not None
        if rest is None:
            host.tell_agent("The transfer failed: this server has no Twilio credentials. Tell the caller.")
            return None
        try:
            await asyncio.wait_for(rest.redirect(host.call.call_sid, dial_twiml(destination)), REST_TIMEOUT_S)
        except Exception as error:  # noqa: BLE001 - the call goes on with the agent
            host.log.warning("transfer to %s failed: %r", destination, error)
            host.tell_agent("The transfer failed and the caller is still with you. Apologise and offer other help.")
            return None
        host.log.info("call transferred to %s (%s)", destination, reason)
        host.observers.notify("note", "transfer", destination)
        self.transferred_to = destination
        if self._services.metrics is not None:
            self._services.metrics.transfers.labels(mode="cold", outcome="dialled").inc()
        return HandOff(f"transferred to {destination}")

    async def _warm(self, destination: str, reason: str, summary: str, asked_at: float) -> HandOff | None:
        """Put the caller on hold and brief ``destination`` (telephony.bridge.transfer); None if they stay here."""
        transfers = self._services.transfers
        assert transfers is not None
        transcript, messages = self._host.conversation()
        self._handing_to = transfers.start(
            self._leg, destination, reason, summary, list(transcript), list(messages), asked_at
        )
        transfer = await asyncio.shield(self._handing_to)
        return None if transfer is None else HandOff(f"on hold: warm transfer to {destination}")

    async def handed_to(self) -> WarmTransfer | None:
        """The warm transfer that took this caller to hold, if any (Twilio may stop the stream before it says so)."""
        if self._handing_to is None:
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(self._handing_to), REST_TIMEOUT_S + 1)
        except Exception:  # noqa: BLE001 - no transfer then: the recording ends here
            return None


class CallLeg:
    """This call as the agent's tools (``controls.CallControl``) and the warm-transfer desk (``transfer.Leg``)
    see it. Every request is safe from any thread: it is run on the call's event loop."""

    def __init__(self, ending: CallEnding, tell_agent: Callable[[str], None]) -> None:
        self._ending = ending
        self._tell_agent = tell_agent
        self._loop: asyncio.AbstractEventLoop | None = None
        self._hand_offs: HandOffs | None = None
        self.call: CallInfo | None = None
        """The call, once its stream has started (requests before that are ignored: no agent can make them)."""

    def bind(self, call: CallInfo, loop: asyncio.AbstractEventLoop, hand_offs: HandOffs) -> None:
        """The call has started, on ``loop``; its transfers are made by ``hand_offs``."""
        self.call, self._loop, self._hand_offs = call, loop, hand_offs

    def tell_agent(self, text: str) -> None:
        self._tell_agent(text)

    def end_call(self, reason: str) -> None:
        """Hang up after what has been said is heard."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._ending.arm_goodbye, reason)

    def transfer_call(self, destination: str, reason: str, summary: str = "") -> None:
        """Move the call to ``destination`` once the hand-off line is heard.

        Warm (VOICEBOT_TRANSFER_MODE=warm, a Twilio call): the caller goes on hold while the person is briefed."""
        if self._loop is None or self._hand_offs is None:
            return
        action = self._hand_offs.transfer(destination, reason, summary)
        self.hand_off(f"transfer to {destination}: {reason}", action)

    def hand_off(self, reason: str, action: HandOffAction, now: bool = False) -> None:
        """Run ``action`` once the bot's last words have been heard (``now``: cut them off first).

        The action returns a ``HandOff`` (the call leaves this stream, or is hung up) or None (the call goes on)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._ending.arm_goodbye, reason, action, now)


__all__ = ["CallLeg", "HandOffHost", "HandOffs"]

"""The warm-transfer desk on its own: a recording REST client and a stand-in session, no app, no media.

The end-to-end paths (what each party hears) are in ``test_warm_transfer.py``; these check the steps the
package's parts take between them: hold, dial, callbacks, roles, settling.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace

import pytest
from strands.bidi import BidiAgent

from telephony.bridge.transfer import (
    BRIEFING_PARAMETER,
    RETURN_PARAMETER,
    BriefingRole,
    HandOff,
    HandOffAction,
    ReturningRole,
    State,
    StreamRole,
    WarmTransfer,
    WarmTransfers,
)
from telephony.call_info import CallInfo

from ..conftest import TEST_SETTINGS

CALLER = "CA" + "c" * 32
PERSON = "CA" + "p" * 32
PERSON_NUMBER = "+15557654321"
SETTINGS = replace(TEST_SETTINGS, twilio_phone_number="+15550002222", transfer_to=PERSON_NUMBER, transfer_mode="warm")


@dataclass
class RecordingClient:
    """Twilio's REST API as far as a transfer uses it: every request kept, each one answered at once."""

    redirects: list[tuple[str, str]] = field(default_factory=list)
    hang_ups: list[str] = field(default_factory=list)
    dials: list[str] = field(default_factory=list)
    refuse_redirects: bool = False

    async def redirect(self, call_sid: str, twiml: str) -> None:
        if self.refuse_redirects:
            raise RuntimeError("Twilio said no")
        self.redirects.append((call_sid, twiml))

    async def hang_up(self, call_sid: str) -> None:
        self.hang_ups.append(call_sid)

    async def dial(self, to: str, from_: str, twiml: str, status_callback: str | None, ring_timeout_s: float) -> str:
        self.dials.append(to)
        return PERSON


@dataclass
class StandInLeg:
    """A session as the desk sees it (``Leg``): what it was told and asked to hand off."""

    call: CallInfo | None
    told: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)
    hand_offs: list[tuple[str, HandOffAction, bool]] = field(default_factory=list)

    def tell_agent(self, text: str) -> None:
        self.told.append(text)

    def end_call(self, reason: str) -> None:
        self.ended.append(reason)

    def hand_off(self, reason: str, action: HandOffAction, now: bool = False) -> None:
        self.hand_offs.append((reason, action, now))


async def never_built(call: CallInfo) -> BidiAgent:
    """A briefing agent still being built when the test ends (the desk discards it)."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


@pytest.fixture
async def desk() -> AsyncIterator[tuple[WarmTransfers, RecordingClient]]:
    client = RecordingClient()
    transfers = WarmTransfers(
        SETTINGS,
        client,
        never_built,
        stream_url="wss://bot.example.com/stream",
        status_url=lambda kind: f"https://bot.example.com/status/{kind}",
        tokens=None,
    )
    yield transfers, client
    await transfers.aclose()


async def dialled(transfers: WarmTransfers, client: RecordingClient) -> tuple[WarmTransfer, StandInLeg]:
    leg = StandInLeg(CallInfo(call_sid=CALLER, stream_sid="MZ1", from_number="+15550001111", to_number="+15550002222"))
    messages = [{"role": "user", "content": [{"text": "a person please"}]}]
    transfer = await transfers.begin(leg, PERSON_NUMBER, "wants a human", "Ann, booking", [("caller", "hi")], messages)
    assert transfer is not None
    while transfer.person_sid is None:
        await asyncio.sleep(0.01)
    return transfer, leg


async def until_settled(transfer: WarmTransfer) -> None:
    async with asyncio.timeout(3):
        while not transfer.settled:
            await asyncio.sleep(0.01)


async def test_the_caller_is_held_and_the_person_dialled(desk: tuple[WarmTransfers, RecordingClient]) -> None:
    transfers, client = desk
    transfer, _ = await dialled(transfers, client)
    assert transfer.state is State.DIALLING
    assert client.redirects[0][0] == CALLER and "<Conference" in client.redirects[0][1]
    assert client.dials == [PERSON_NUMBER]
    assert transfers.for_caller(CALLER) is transfer and transfers.get(transfer.id) is transfer
    assert transfer.brief.destination == PERSON_NUMBER and transfer.transcript == (("caller", "hi"),)
    assert transfer.history == ({"role": "user", "content": [{"text": "a person please"}]},)
    assert transfers.pending == 1


async def test_a_second_transfer_for_the_same_caller_is_refused(desk: tuple[WarmTransfers, RecordingClient]) -> None:
    transfers, client = desk
    _, leg = await dialled(transfers, client)
    assert await transfers.begin(leg, PERSON_NUMBER, "again", "", [], []) is None
    assert leg.told == ["A transfer for this caller is already under way. Do not start another."]


async def test_a_busy_person_brings_the_caller_back(desk: tuple[WarmTransfers, RecordingClient]) -> None:
    transfers, client = desk
    transfer, _ = await dialled(transfers, client)
    transfers.on_status("transfer", {"CallSid": PERSON, "CallStatus": "ringing"}, transfer.id)
    assert transfer.state is State.RINGING
    transfers.on_status("transfer", {"CallSid": PERSON, "CallStatus": "busy"}, transfer.id)
    await until_settled(transfer)
    assert (transfer.state, transfer.outcome, transfer.what_happened) == (
        State.RETURNED,
        "busy",
        "their line was busy",
    )
    sid, twiml = client.redirects[-1]
    assert sid == CALLER and RETURN_PARAMETER in twiml and transfer.id in twiml
    assert client.hang_ups == []  # their call is over already
    assert transfers.for_caller(CALLER) is None and transfers.pending == 0


async def test_a_returning_stream_gets_the_history_once(desk: tuple[WarmTransfers, RecordingClient]) -> None:
    transfers, client = desk
    transfer, _ = await dialled(transfers, client)
    transfers.on_status("transfer", {"CallSid": PERSON, "CallStatus": "no-answer"}, transfer.id)
    await until_settled(transfer)
    role = transfers.role_for({RETURN_PARAMETER: transfer.id}, CALLER)
    assert isinstance(role, ReturningRole) and "nobody answered" in (role.greeting or "")
    assert role.call_info(CallInfo(call_sid=CALLER, stream_sid="MZ2")).history == transfer.history
    assert transfers.role_for({RETURN_PARAMETER: transfer.id}, CALLER) is None


async def test_streams_for_unknown_transfers(desk: tuple[WarmTransfers, RecordingClient]) -> None:
    transfers, _ = desk
    refused = transfers.role_for({BRIEFING_PARAMETER: "nope"}, PERSON)
    assert isinstance(refused, StreamRole) and refused.refusal == "briefing stream refused: unknown transfer"
    assert transfers.role_for({RETURN_PARAMETER: "nope"}, CALLER) is None
    assert transfers.role_for({}, CALLER) is None


async def test_a_person_answering_for_a_forgotten_transfer_is_hung_up(
    desk: tuple[WarmTransfers, RecordingClient],
) -> None:
    transfers, client = desk
    transfers.on_status("transfer", {"CallSid": PERSON, "CallStatus": "in-progress"}, "forgotten")
    async with asyncio.timeout(3):
        while client.hang_ups != [PERSON]:
            await asyncio.sleep(0.01)


async def test_pressing_2_declines_and_brings_the_caller_back(desk: tuple[WarmTransfers, RecordingClient]) -> None:
    transfers, client = desk
    transfer, _ = await dialled(transfers, client)
    role = transfers.role_for({BRIEFING_PARAMETER: transfer.id}, PERSON)
    assert isinstance(role, BriefingRole) and role.factory is never_built
    person = StandInLeg(CallInfo(call_sid=PERSON, stream_sid="MZ3"))
    role.started(person)
    assert transfer.state is State.BRIEFING and transfer.briefing is person
    assert role.on_dtmf(person, "2") is True
    reason, action, now = person.hand_offs[-1]
    assert now and reason == "the person declined (declined on the keypad)"
    assert await action() == HandOff(reason, hang_up=True)
    await until_settled(transfer)
    assert (transfer.state, transfer.outcome) == (State.RETURNED, "declined")


async def test_pressing_1_joins_the_person_to_the_caller(desk: tuple[WarmTransfers, RecordingClient]) -> None:
    transfers, client = desk
    transfer, _ = await dialled(transfers, client)
    role = transfers.role_for({BRIEFING_PARAMETER: transfer.id}, PERSON)
    assert isinstance(role, BriefingRole)
    person = StandInLeg(CallInfo(call_sid=PERSON, stream_sid="MZ3"))
    role.started(person)
    role.audio_sent()
    assert transfer.briefing_heard_at is not None
    assert role.on_dtmf(person, "1") is True and role.on_dtmf(person, "5") is False
    _, action, _ = person.hand_offs[-1]
    assert await action() == HandOff("joined the caller's conference")
    assert (transfer.state, transfer.outcome) == (State.CONNECTED, "connected")
    assert client.redirects[-1][0] == PERSON and "<Conference" in client.redirects[-1][1]


async def test_the_caller_hanging_up_on_hold_ends_the_persons_call(
    desk: tuple[WarmTransfers, RecordingClient],
) -> None:
    transfers, client = desk
    transfer, _ = await dialled(transfers, client)
    transfers.on_status("call", {"CallSid": CALLER, "CallStatus": "completed"}, None)
    assert (transfer.state, transfer.outcome) == (State.ENDED, "caller_hung_up")
    async with asyncio.timeout(3):
        while client.hang_ups != [PERSON]:
            await asyncio.sleep(0.01)


async def test_twilio_refusing_the_hold_leaves_the_caller_with_the_bot(
    desk: tuple[WarmTransfers, RecordingClient],
) -> None:
    transfers, client = desk
    client.refuse_redirects = True
    leg = StandInLeg(CallInfo(call_sid=CALLER, stream_sid="MZ1"))
    assert await transfers.begin(leg, PERSON_NUMBER, "wants a human", "", [], []) is None
    assert leg.told and leg.told[0].startswith("The transfer failed")
    assert client.dials == [] and transfers.pending == 0 and transfers.for_caller(CALLER) is None

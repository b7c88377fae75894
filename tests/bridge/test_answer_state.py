"""One owner for "what the model is saying now": a cut reply is over everywhere at once.

End to end: the person being briefed presses 1 while the briefing is still being spoken; the briefing is cut,
and they are joined to the caller as soon as the cut is heard, not after the goodbye's mark cap.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest
from strands.bidi import BidiAgent
from strands.bidi.hooks.events import BidiBeforeConnectionRestartEvent
from strands.bidi.models import ConnectionTimeoutError
from strands.bidi.types import (
    BidiAudioDeltaEvent,
    BidiBargeInEvent,
    BidiResponseStartEvent,
    BidiToolUseBlocksEvent,
    BidiTranscriptDeltaEvent,
)

from agent.quiet_switch import QuietSwitchTimeout
from agent.tools import accept_transfer, decline_transfer, end_conversation, transfer_tool
from telephony.app import create_app
from telephony.bridge.answer import AnswerState
from telephony.bridge.continuity import Continuity
from telephony.call_info import CallInfo
from telephony.operations.logs import CallLog
from telephony.twilio.calls_api import TwilioCallsApi

from ..audio import frame_hz
from ..conftest import TEST_SETTINGS, serve, settle_tasks
from ..fakes.model import CallTool, Hold, Say, ScriptedModel, Step, UserSaid, WaitForText
from ..fakes.twilio import ULAW_SILENCE
from ..fakes.twilio_calls import FakeCall, FakeTwilio
from ..waiting import until

TOKEN = "auth-token-for-tests"
ACCOUNT = "AC" + "5" * 32
CALLER = "CA" + "d" * 32
OUR_NUMBER = "+15550002222"
CALLER_NUMBER = "+15550001111"
PERSON_NUMBER = "+15557654321"
BRIEF_TONE = 700
MARK_CAP_S = 3.0
"""The goodbye's mark cap (``VOICEBOT_HANGUP_MARK_TIMEOUT``'s default): what a cut reply left open cost."""
WARM = replace(
    TEST_SETTINGS,
    twilio_account_sid=ACCOUNT,
    twilio_auth_token=TOKEN,
    twilio_phone_number=OUR_NUMBER,
    transfer_to=PERSON_NUMBER,
    transfer_mode="warm",
    hangup_grace_s=0.2,
    hangup_mark_timeout_s=MARK_CAP_S,
)
CALLER_SCRIPT: list[Step] = [
    UserSaid("I would like to talk to a person"),
    Say("Let me put you through", 0.4),
    CallTool("transfer_call", {"reason": "wants a human", "summary": "Ann wants a person."}),
    Hold(),
]
LONG_BRIEFING: list[Step] = [
    WaitForText("Brief them now"),
    Say("Hello, I have Ann on hold about her booking", 8.0, tone_hz=BRIEF_TONE, realtime=True),
    Hold(),
]
"""A briefing spoken at real time (a slow model): still going, its response still open, when 1 is pressed."""


def heard_tone(call: FakeCall, hz: int) -> bool:
    frames = call.streams[-1].heard if call.streams else []
    return any(round(frame_hz(frame.payload), -2) == hz for frame in frames if frame.payload != ULAW_SILENCE)


@asynccontextmanager
async def warm_line(briefing: list[Step]) -> AsyncIterator[tuple[FakeTwilio, Any]]:
    twilio = FakeTwilio(WARM.public_url or "", TOKEN, ACCOUNT)

    def caller_agent(call: CallInfo) -> BidiAgent:
        tools = [end_conversation, transfer_tool(WARM.transfer_to)]
        return BidiAgent(model=ScriptedModel(list(CALLER_SCRIPT)), tools=tools, system_prompt="test")

    def briefing_agent(call: CallInfo) -> BidiAgent:
        model = ScriptedModel(list(briefing))
        return BidiAgent(model=model, tools=[accept_transfer, decline_transfer], system_prompt="brief")

    control = TwilioCallsApi(ACCOUNT, TOKEN, http_client=twilio)
    app = create_app(WARM, agent_factory=caller_agent, call_control=control, briefing_factory=briefing_agent)
    async with serve(app) as base:
        baseline = set(asyncio.all_tasks())
        twilio.attach(base)
        try:
            yield twilio, app
        finally:
            await twilio.aclose()
            await until(lambda: not app.state.sessions, 5)
        assert not await settle_tasks(baseline)


async def test_the_person_who_presses_1_mid_briefing_is_joined_within_a_second(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with warm_line(LONG_BRIEFING) as (twilio, _):
        caller = await twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(lambda: any(call.to == PERSON_NUMBER for call in twilio.calls.values()))
        [person] = [call for call in twilio.calls.values() if call.to == PERSON_NUMBER]
        await until(lambda: heard_tone(person, BRIEF_TONE))
        pressed = time.monotonic()
        await person.stream.dtmf("1")
        await until(lambda: person.hearing == "conference" and caller.hearing == "conference", 2 * MARK_CAP_S)
        joined = next(at for at, what in person.heard if what == "conference")
        await twilio.settle()

    assert joined - pressed < 1.0, f"joined {joined - pressed:.2f} s after pressing 1"
    assert "goodbye marks did not come back in time" not in caplog.text


# --- the answer state itself ---------------------------------------------------------------------------------


def audio(content_id: str, seconds: float = 0.1, rate: int = 16000) -> BidiAudioDeltaEvent:
    pcm = b"\x01\x00" * round(seconds * rate)
    return BidiAudioDeltaEvent(
        audio=base64.b64encode(pcm).decode(), format="pcm", sample_rate=rate, channels=1, content_id=content_id
    )


def test_a_cut_reply_is_over_and_the_rest_of_it_is_never_played() -> None:
    answer = AnswerState()
    answer.observe(BidiResponseStartEvent(response_id="r1"))
    answer.observe(BidiTranscriptDeltaEvent(delta="Hello there, ", role="assistant", content_id="t1"))
    answer.observe(audio("a1", 0.5))
    assert answer.responding and answer.audio == "a1" and answer.new_utterance
    assert answer.audio_s == pytest.approx(0.5)
    answer.observe(audio("a1"))
    assert not answer.new_utterance and answer.text == "Hello there,"

    assert answer.cut() == "a1"  # a hand-off that cuts the bot off, or a barge-in
    assert not answer.responding and answer.audio is None and answer.is_cut("a1")
    answer.observe(audio("a1"))  # the model goes on generating what nobody hears
    assert answer.audio is None and not answer.responding

    answer.observe(BidiResponseStartEvent(response_id="r2"))
    answer.observe(audio("a2"))
    assert answer.responding and answer.audio == "a2" and answer.new_utterance and not answer.is_cut("a2")


def test_a_barge_in_from_the_model_cuts_the_reply_too() -> None:
    answer = AnswerState()
    answer.observe(BidiResponseStartEvent(response_id="r1"))
    answer.observe(audio("a1"))
    answer.observe(BidiBargeInEvent())
    assert answer.is_cut("a1") and not answer.responding


def test_a_swap_closes_the_answer_but_what_arrived_still_plays() -> None:
    answer = AnswerState()
    answer.observe(BidiResponseStartEvent(response_id="r1"))
    answer.observe(audio("a1"))
    assert answer.close() == "a1"
    assert not answer.responding and answer.audio is None and not answer.is_cut("a1")


def test_a_tool_call_ends_the_response_and_its_result_is_awaited() -> None:
    answer = AnswerState()
    answer.observe(BidiResponseStartEvent(response_id="r1"))
    answer.observe(BidiToolUseBlocksEvent(tool_uses=[{"toolUseId": "t1", "name": "lookup", "input": {}}]))
    assert not answer.responding and answer.used_tool and answer.tools_pending == {"t1"}
    answer.observe({"type": "tool_result", "tool_result": {"toolUseId": "t1"}})
    assert not answer.tools_pending


def test_a_quiet_switch_is_a_typed_timeout() -> None:
    error = QuietSwitchTimeout()
    assert isinstance(error, ConnectionTimeoutError)  # strands restarts the connection as after a timeout
    assert "quiet" in str(error)


# --- continuity reads the same answer ------------------------------------------------------------------------


class Side:
    def __init__(self) -> None:
        self.closed: list[str | None] = []
        self.notes: list[tuple[str, str]] = []

    def close_cut_answer(self, content_id: str | None) -> None:
        self.closed.append(content_id)

    def goodbye_armed(self) -> bool:
        return False

    def note(self, kind: str, detail: str) -> None:
        self.notes.append((kind, detail))


class Inbound:
    def hold(self, max_bytes: int) -> None:
        pass


def continuity_for(answer: AnswerState, side: Side) -> Continuity:
    return Continuity(
        None,  # type: ignore[arg-type]  # the restart hooks below are called directly
        Inbound(),
        side,
        CallLog(logging.getLogger("test")),
        answer=answer,
        sample_rate=16000,
        hold_bytes=0,
    )


async def swap(continuity: Continuity, error: ConnectionTimeoutError | None = None) -> None:
    event = BidiBeforeConnectionRestartEvent(
        agent=None, reason="timeout" if error else "scheduled", timeout_error=error
    )  # type: ignore[arg-type]
    await continuity._before_restart(event)


async def test_a_swap_after_a_cut_finds_no_answer_to_pick_up() -> None:
    answer, side = AnswerState(), Side()
    continuity = continuity_for(answer, side)
    answer.observe(BidiResponseStartEvent(response_id="r1"))
    answer.observe(audio("a1", 1.0))
    answer.cut()  # the person pressed 1: the briefing is over
    await swap(continuity)
    assert continuity.stats.cut_answers == 0 and not side.closed and [kind for kind, _ in side.notes] == ["swap"]


async def test_a_swap_mid_answer_closes_it_for_everyone(caplog: pytest.LogCaptureFixture) -> None:
    answer, side = AnswerState(), Side()
    continuity = continuity_for(answer, side)
    answer.observe(BidiResponseStartEvent(response_id="r1"))
    answer.observe(BidiTranscriptDeltaEvent(delta="Your order shipped on Monday.", role="assistant", content_id="t"))
    answer.observe(audio("a1", 1.0))
    caplog.set_level(logging.INFO)
    await swap(continuity, QuietSwitchTimeout())
    assert (
        continuity.stats.cut_answers == 1
        and side.closed == ["a1"]
        and [kind for kind, _ in side.notes]
        == [
            "swap",
            "cut",
        ]
    )
    assert not answer.responding and answer.audio is None and not answer.is_cut("a1")  # what arrived still plays
    assert "at a quiet moment" in caplog.text

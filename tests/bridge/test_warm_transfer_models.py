"""Warm transfer through each real model client: the caller's agent and the briefing agent both on it.

The fake Twilio (calls, conferences, status callbacks: ``twilio_calls.py``) under the real Twilio SDK places both
calls; the default agent factory builds the caller's agent and the default briefing factory
(``agent.briefing:create_briefing_agent``) the person's, on the same model (VOICEBOT_MODEL=nova, openai or
gemini), so the local server serves two sessions: the call, and the briefing about it. It tells them apart by the
system prompt (``BrainsByPrompt``). ``test_warm_transfer.py`` covers the rest of the flow on a scripted model.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest

import agent.gemini  # noqa: F401  google-genai's import (~1-3 s) paid at collection, not inside a call's start limit
from agent.briefing import BRIEFING_GREETING, BRIEFING_PROMPT
from telephony.config import TWILIO_HOLD_MUSIC
from telephony.simulation.caller.simulated_caller import SimulatedCaller
from telephony.simulation.local_gemini import SessionRecord as GeminiRecord
from telephony.simulation.local_nova import BrainsByPrompt, Reply, ScriptedBrain, Tone, ToolRequest
from telephony.simulation.local_nova import SessionRecord as NovaRecord
from telephony.simulation.local_openai import SessionRecord as OpenAIRecord
from telephony.twilio.calls_api import TwilioCallsApi

from ..conftest import TEST_SETTINGS
from ..fakes.twilio_calls import FakeCall, FakeTwilio
from ..waiting import until
from .model_calls import (
    CALL_SID,
    GEMINI,
    GREETING,
    GREETING_HZ,
    NOVA,
    OPENAI,
    LineModel,
    LocalServer,
    ModelLine,
    caller_tone,
    heard_hz,
    model_line,
    seconds_of,
)

TOKEN = "auth-token-for-tests"
ACCOUNT = "AC" + "3" * 32
OUR_NUMBER = "+15550002222"
CALLER_NUMBER = "+15550001111"
PERSON_NUMBER = "+15557654321"
WARM = {
    "twilio_account_sid": ACCOUNT,
    "twilio_auth_token": TOKEN,
    "twilio_phone_number": OUR_NUMBER,
    "transfer_to": PERSON_NUMBER,
    "transfer_mode": "warm",
    "hangup_grace_s": 0.2,
}
HAND_OFF_HZ, BRIEF_HZ, GOODBYE_HZ, BACK_HZ = 800, 700, 900, 500
ASKED = "I would like to talk to a person about my booking"
SUMMARY = "Ann wants to move her booking to Friday."
BRIEFING = BRIEFING_PROMPT.splitlines()[0]
"""What only the briefing agent's system prompt says: how the local server knows the briefing session."""


@pytest.fixture(params=[NOVA, OPENAI, GEMINI], ids=lambda model: model.name)
def on_model(request: pytest.FixtureRequest) -> tuple[LineModel, LocalServer]:
    """Each model in turn, with its local server running (``local_nova``, ``local_openai``, ``local_gemini``)."""
    model: LineModel = request.param
    return model, request.getfixturevalue(f"local_{model.name}")


@dataclass
class WarmLine:
    """The app with warm transfer on, on one model, and the fake Twilio that places its calls."""

    line: ModelLine
    twilio: FakeTwilio

    def person(self) -> FakeCall:
        [call] = [call for call in self.twilio.calls.values() if call.to == PERSON_NUMBER]
        return call

    def has_person(self) -> bool:
        return any(call.to == PERSON_NUMBER for call in self.twilio.calls.values())

    def transfers(self, outcome: str) -> float:
        registry = self.line.app.state.metrics.registry
        return registry.get_sample_value("voicebot_transfers_total", {"mode": "warm", "outcome": outcome}) or 0.0


@asynccontextmanager
async def warm_line(model: LineModel, server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[WarmLine]:
    twilio = FakeTwilio(TEST_SETTINGS.public_url or "", TOKEN, ACCOUNT)
    control = TwilioCallsApi(ACCOUNT, TOKEN, http_client=twilio)
    async with model_line(model, server, monkeypatch, rest=control, **WARM) as line:
        twilio.attach(line.base)
        try:
            yield WarmLine(line, twilio)
        finally:
            await twilio.aclose()
            await until(lambda: not line.app.state.sessions, 5, what="every session to end")
    assert all(status == 204 for _, _, status in twilio.callbacks), twilio.callbacks


def brains(server: LocalServer, briefer: ScriptedBrain, returned: Reply | None = None) -> ScriptedBrain:
    """The caller's conversation (greeting, then the request for a person and the transfer) and the briefing's."""
    transfer = ToolRequest("transfer_call", {"reason": "wants a person", "summary": SUMMARY})
    caller = ScriptedBrain(
        texts=[Reply(text="Hello, front desk.", audio=Tone(0.4, hz=GREETING_HZ)), *([returned] if returned else [])],
        turns=[
            Reply(
                text="Let me put you through to a colleague.",
                audio=Tone(0.6, hz=HAND_OFF_HZ),
                heard=ASKED,
                tool_uses=(transfer,),
            )
        ],
    )
    server.brain = BrainsByPrompt({BRIEFING: briefer}, default=caller)
    return caller


def tones_heard(stream: SimulatedCaller, min_frames: int = 3) -> set[float]:
    """The tones a party heard for at least ``min_frames`` frames: a frame where a tone starts or stops can peak a
    50 Hz bin away (and round to the next 100 Hz), while anything really said lasts far longer than 60 ms."""
    counts = Counter(hz for hz in heard_hz(stream) if hz)
    return {hz for hz, frames in counts.items() if frames >= min_frames}


def seconds_heard(stream: SimulatedCaller, hz: float) -> float:
    return seconds_of(heard_hz(stream), hz)


async def ask_for_a_person(warm: WarmLine) -> FakeCall:
    """The caller dials in, hears the greeting, asks for a person and is put on hold while the person is dialled."""
    caller = await warm.twilio.incoming(CALL_SID, CALLER_NUMBER, OUR_NUMBER)
    await until(lambda: seconds_heard(caller.stream, GREETING_HZ) >= 0.36, 6, what="the greeting")
    await warm.twilio.speak(caller, caller_tone(0.6))
    await until(warm.has_person, 6, what="the person to be dialled")
    return caller


async def briefed(warm: WarmLine) -> FakeCall:
    """The person answers and hears the briefing in full."""
    person = warm.person()
    await until(lambda: person.streams and seconds_heard(person.stream, BRIEF_HZ) >= 0.76, 8, what="the briefing")
    return person


def tool_names(record: NovaRecord | OpenAIRecord | GeminiRecord) -> list[str]:
    if isinstance(record, NovaRecord):
        start = next(event for event in record.events if event.name == "promptStart")
        return sorted(tool["toolSpec"]["name"] for tool in start.body["toolConfiguration"]["tools"])
    if isinstance(record, OpenAIRecord):
        return sorted(tool["name"] for tool in record.session["tools"])
    return sorted(record.info.tools) if record.info is not None else []


def hearing(call: FakeCall) -> list[str]:
    return [what for _, what in call.heard]


def when_heard(call: FakeCall, what: str) -> float:
    return next(at for at, heard in call.heard if heard == what)


# --- accepted --------------------------------------------------------------------------------------------


async def test_the_person_presses_1_after_the_briefing_and_is_joined_with_the_caller_at_once(
    on_model: tuple[LineModel, LocalServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    model, server = on_model
    briefer = ScriptedBrain(
        texts=[Reply(text="Hello, I have Ann on hold about her booking.", audio=Tone(0.8, BRIEF_HZ))]
    )
    caller_brain = brains(server, briefer)
    async with warm_line(model, server, monkeypatch) as warm:
        caller = await ask_for_a_person(warm)
        person = await briefed(warm)
        pressed = time.monotonic()
        await person.stream.dtmf("1")
        await until(lambda: caller.hearing == person.hearing == "conference", 3, what="the join")
        await warm.twilio.settle()
        assert warm.transfers("connected") == 1

    # Joined within a second of the keypress; the bot left both calls.
    joined_after = when_heard(person, "conference") - pressed
    print(f"keypress -> joined: {joined_after * 1000:.0f} ms")  # shown with -s
    assert joined_after < 1.0
    assert hearing(caller) == ["bot", f"hold:{TWILIO_HOLD_MUSIC}", "conference"]
    assert hearing(person) == ["ringing", "bot", "conference"]
    assert len(caller.streams) == 1 and len(person.streams) == 1
    # The caller heard the greeting and the hand-off line in full, the person the briefing, each nothing else.
    assert seconds_heard(caller.stream, GREETING_HZ) == pytest.approx(0.4, abs=0.06)
    assert seconds_heard(caller.stream, HAND_OFF_HZ) == pytest.approx(0.6, abs=0.06)
    assert seconds_heard(person.stream, BRIEF_HZ) == pytest.approx(0.8, abs=0.06)
    assert tones_heard(caller.stream) == {GREETING_HZ, HAND_OFF_HZ}
    assert tones_heard(person.stream) == {BRIEF_HZ}

    # Two sessions on the model's server: the caller's agent, then the briefing agent, both built by the defaults.
    call, briefing = server.sessions
    assert call.model_id == briefing.model_id == model.model_id
    assert call.text_inputs == [GREETING] and briefing.text_inputs == [BRIEFING_GREETING]
    assert tool_names(call) == ["end_conversation", "transfer_call"]
    assert tool_names(briefing) == ["accept_transfer", "decline_transfer"]
    prompt = briefing.system_prompt
    assert BRIEFING in prompt and SUMMARY in prompt and f"caller: {ASKED}" in prompt
    assert "1 5 5 5 0 0 0 1 1 1 1" in prompt  # the caller's number, as the briefing agent reads it out
    assert BRIEFING not in call.system_prompt
    [(_, name, result)] = caller_brain.tool_results
    assert name == "transfer_call" and "transferred" in json.dumps(result)
    assert len(caller_brain.heard) == 1 and briefer.texts == [BRIEFING_GREETING] and not briefer.heard

    # Twilio was asked to dial the person, then to move them into the caller's conference room.
    [create] = warm.twilio.created()
    assert create["To"] == [PERSON_NUMBER] and create["From"] == [OUR_NUMBER]
    [join] = warm.twilio.updates(person.sid)
    assert "<Conference" in join["Twiml"][0] and 'startConferenceOnEnter="true"' in join["Twiml"][0]


# --- declined ----------------------------------------------------------------------------------------------


async def test_the_person_declines_through_the_tool_and_the_caller_is_back_with_the_bot(
    on_model: tuple[LineModel, LocalServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    model, server = on_model
    decline = ToolRequest("decline_transfer", {"reason": "in a meeting"})
    briefer = ScriptedBrain(
        texts=[Reply(text="Hello, I have Ann on hold about her booking.", audio=Tone(0.8, BRIEF_HZ))],
        turns=[
            Reply(
                text="No problem, goodbye.",
                audio=Tone(0.4, GOODBYE_HZ),
                heard="sorry I am in a meeting",
                tool_uses=(decline,),
            )
        ],
    )
    back = Reply(text="Sorry, nobody could take your call. Can I take a message?", audio=Tone(0.5, BACK_HZ))
    caller_brain = brains(server, briefer, returned=back)
    async with warm_line(model, server, monkeypatch) as warm:
        caller = await ask_for_a_person(warm)
        person = await briefed(warm)
        await warm.twilio.speak(person, caller_tone(0.6))
        await until(lambda: person.status == "completed", 6, what="the person's call to end")
        await until(lambda: len(caller.streams) == 2 and seconds_heard(caller.stream, BACK_HZ) >= 0.46, 8)
        await warm.twilio.settle()
        assert warm.transfers("declined") == 1
        await caller.stream.stop()

    # The person heard their goodbye in full before the line closed; nobody was joined.
    assert seconds_heard(person.stream, GOODBYE_HZ) == pytest.approx(0.4, abs=0.06)
    assert hearing(person) == ["ringing", "bot", "nothing"]
    assert warm.twilio.updates(person.sid) == [{"Status": ["completed"]}]
    # The caller came back from hold to the bot, on a new stream, and heard the bot's apology.
    assert hearing(caller)[:3] == ["bot", f"hold:{TWILIO_HOLD_MUSIC}", "bot"]
    assert seconds_heard(caller.streams[1], BACK_HZ) == pytest.approx(0.5, abs=0.06)
    assert seconds_heard(caller.streams[1], HAND_OFF_HZ) == 0  # not transferred again

    # The briefing heard the person and ran the decline tool; the bot, back, was told why and resumed the call.
    [(_, name, _)] = briefer.tool_results
    assert name == "decline_transfer" and len(briefer.heard) == 1
    note = caller_brain.texts[-1]
    assert "did not go through" in note and "in a meeting" in note
    _, briefing, returned = server.sessions
    assert BRIEFING in briefing.system_prompt and BRIEFING not in returned.system_prompt
    assert returned.text_inputs[-1] == note
    # The conversation so far came first (as history; OpenAI's replayed items are the same events as new text).
    replayed = [text for _, text in returned.history] + returned.text_inputs[:-1]
    assert ASKED in replayed and "Let me put you through to a colleague." in replayed

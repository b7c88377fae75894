"""Warm transfer end to end: the real app and the real Twilio SDK against a fake Twilio that keeps call and
conference state, simulated callers on both legs (the caller, and the person being briefed), scripted models.

Each path checks what each party hears (bot, hold music, the conference), the REST requests against Twilio's
documented shapes, and what the bot is told when the caller comes back.
"""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from strands.bidi import BidiAgent

from agent.briefing import briefing_prompt
from agent.tools import accept_transfer, decline_transfer, end_conversation, transfer_tool
from telephony.app import create_app
from telephony.bridge.transfer import resumable_history
from telephony.call_info import CallInfo
from telephony.config import TWILIO_HOLD_MUSIC
from telephony.operations.shutdown import drain
from telephony.twilio.calls_api import TwilioCallsApi

from ..audio import frame_hz
from ..conftest import TEST_SETTINGS, serve, settle_tasks
from ..fakes.model import CallTool, Hold, Say, ScriptedModel, Step, UserSaid, WaitForAudio, WaitForText
from ..fakes.twilio import ULAW_SILENCE
from ..fakes.twilio_calls import FakeCall, FakeTwilio, Person
from ..fakes.twilio_http import Reply
from ..waiting import until

TOKEN = "auth-token-for-tests"
ACCOUNT = "AC" + "3" * 32
CALLER = "CA" + "c" * 32
OUR_NUMBER = "+15550002222"
CALLER_NUMBER = "+15550001111"
PERSON_NUMBER = "+15557654321"
WARM = replace(
    TEST_SETTINGS,
    twilio_account_sid=ACCOUNT,
    twilio_auth_token=TOKEN,
    twilio_phone_number=OUR_NUMBER,
    transfer_to=PERSON_NUMBER,
    transfer_mode="warm",
    hangup_grace_s=0.2,
)
HOLD_TONE, BRIEF_TONE, CONNECT_TONE, BACK_TONE, SORRY_TONE = 1000, 700, 900, 500, 400

CALLER_SCRIPT: list[Step] = [
    UserSaid("I would like to talk to a person about my booking"),
    Say("Let me put you through to a colleague", 0.6, tone_hz=HOLD_TONE),
    CallTool("transfer_call", {"reason": "wants a human", "summary": "Ann wants to move her booking to Friday."}),
    Hold(),
]
RETURNED_SCRIPT: list[Step] = [
    WaitForText("did not go through"),
    Say("Sorry, nobody could take your call", 0.4, tone_hz=BACK_TONE),
    Hold(),
]
BRIEF_BY_VOICE: list[Step] = [
    WaitForText("Brief them now"),
    Say("Hello, I have Ann on hold about her booking", 0.8, tone_hz=BRIEF_TONE),
    WaitForAudio(0.3),
    UserSaid("yes put her through"),
    Say("Connecting you now", 0.3, tone_hz=CONNECT_TONE),
    CallTool("accept_transfer"),
    Hold(),
]
BRIEF_AND_WAIT: list[Step] = [
    WaitForText("Brief them now"),
    Say("Hello, I have Ann on hold about her booking", 0.8, tone_hz=BRIEF_TONE),
    Hold(),
]


@dataclass
class Line:
    """One running app with warm transfer on, its fake Twilio, and the models it built."""

    twilio: FakeTwilio
    app: Any
    callers: list[ScriptedModel] = field(default_factory=list)
    briefers: list[ScriptedModel] = field(default_factory=list)
    briefed: list[CallInfo] = field(default_factory=list)

    @property
    def transfers(self) -> Any:
        return self.app.state.transfers

    def person(self) -> FakeCall:
        [call] = [call for call in self.twilio.calls.values() if call.to == PERSON_NUMBER]
        return call

    def has_person(self) -> bool:
        return any(call.to == PERSON_NUMBER for call in self.twilio.calls.values())

    def metric(self, outcome: str) -> float:
        value = self.app.state.metrics.registry.get_sample_value(
            "voicebot_transfers_total", {"mode": "warm", "outcome": outcome}
        )
        return value or 0.0


@asynccontextmanager
async def warm_line(
    briefing: list[Step],
    caller: list[Step] = CALLER_SCRIPT,
    returned: list[Step] = RETURNED_SCRIPT,
    person: Person | None = None,
    twilio_api: Callable[[FakeTwilio], str] | None = None,
    **overrides: Any,
) -> AsyncIterator[Line]:
    """``twilio_api``: given the fake Twilio, the VOICEBOT_TWILIO_API_URL the app's own REST client is to use (a
    proxy in front of it); without it the app's client talks to the fake in process."""
    settings = replace(WARM, **overrides)
    twilio = FakeTwilio(settings.public_url or "", TOKEN, ACCOUNT)
    if twilio_api is not None:
        settings = replace(settings, twilio_api_url=twilio_api(twilio))
    if person is not None:
        twilio.people[PERSON_NUMBER] = person
    state: dict[str, Line] = {}

    def caller_agent(call: CallInfo) -> BidiAgent:
        model = ScriptedModel(list(returned if call.history else caller))
        state["line"].callers.append(model)
        tools = [end_conversation, transfer_tool(settings.transfer_to)]
        return BidiAgent(model=model, tools=tools, system_prompt="test", messages=list(call.history) or None)

    def briefing_agent(call: CallInfo) -> BidiAgent:
        model = ScriptedModel(list(briefing))
        state["line"].briefers.append(model)
        state["line"].briefed.append(call)
        assert call.transfer is not None
        prompt = briefing_prompt(call.transfer)
        return BidiAgent(model=model, tools=[accept_transfer, decline_transfer], system_prompt=prompt)

    control = None if twilio_api is not None else TwilioCallsApi(ACCOUNT, TOKEN, http_client=twilio)
    app = create_app(settings, agent_factory=caller_agent, call_control=control, briefing_factory=briefing_agent)
    async with serve(app) as base:
        baseline = set(asyncio.all_tasks())
        state["line"] = line = Line(twilio.attach(base), app)
        try:
            yield line
        finally:
            await twilio.aclose()
            await until(lambda: not app.state.sessions, 5)
        leftover = await settle_tasks(baseline)
        assert not leftover, f"tasks still running after the calls ended: {leftover}"
        assert all(model.stopped or not model.started for model in [*line.callers, *line.briefers])
        assert all(status == 204 for _, _, status in twilio.callbacks), twilio.callbacks


def tones(call: FakeCall, stream: int = -1) -> set[int]:
    """The tones (rounded to 100 Hz) a party heard from the bot on one of its streams."""
    frames = call.streams[stream].heard
    return {round(frame_hz(frame.payload), -2) for frame in frames if frame.payload != ULAW_SILENCE}


def conference_of(twiml: str) -> tuple[ET.Element, ET.Element]:
    dial = ET.fromstring(twiml).find("Dial")
    assert dial is not None
    conference = dial.find("Conference")
    assert conference is not None
    return dial, conference


def hearing(call: FakeCall) -> list[str]:
    return [what for _, what in call.heard]


# --- the happy path ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("accept_by", ["voice", "key"])
async def test_accepted_transfer_puts_the_caller_through_and_the_bot_leaves(accept_by: str) -> None:
    briefing = BRIEF_BY_VOICE if accept_by == "voice" else BRIEF_AND_WAIT
    async with warm_line(briefing) as line:
        caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(line.has_person)
        person = line.person()
        await until(lambda: person.streams and BRIEF_TONE in tones(person))
        if accept_by == "key":
            await person.stream.dtmf("1")
        await until(lambda: caller.hearing == "conference" and person.hearing == "conference")
        await line.twilio.settle()
        assert line.metric("connected") == 1

    # The caller heard the hand-off line, then hold music, then the person; the person, the briefing, then the caller.
    assert hearing(caller) == ["bot", f"hold:{TWILIO_HOLD_MUSIC}", "conference"]
    assert hearing(person) == ["ringing", "bot", "conference"]
    assert HOLD_TONE in tones(caller, 0) and BRIEF_TONE in tones(person)
    if accept_by == "voice":
        assert CONNECT_TONE in tones(person)  # "connecting you now" was heard before the join
    assert all(stream.closed.is_set() for stream in [*caller.streams, *person.streams])
    assert len(caller.streams) == 1  # the bot never came back: it left both calls

    # The caller's move to hold: <Dial timeLimit><Conference> that waits with music, as Twilio documents it.
    [hold] = line.twilio.updates(CALLER)
    dial, room = conference_of(hold["Twiml"][0])
    assert dial.get("timeLimit") == "3600"
    assert room.get("startConferenceOnEnter") == "false" and room.get("endConferenceOnExit") == "true"
    assert room.get("waitUrl") == TWILIO_HOLD_MUSIC and room.get("waitMethod") == "GET"
    assert room.get("statusCallbackEvent") == "start end join leave" and room.get("statusCallbackMethod") == "POST"
    assert room.get("statusCallback", "").startswith("https://bot.example.com/status/conference?transfer=")
    assert (room.text or "").startswith("voicebot-transfer-") and CALLER not in (room.text or "")

    # The person's call: Calls.json with inline TwiML streaming back to us as a briefing leg.
    [create] = line.twilio.created()
    assert create["To"] == [PERSON_NUMBER] and create["From"] == [OUR_NUMBER] and create["Timeout"] == ["25"]
    assert create["StatusCallbackEvent"] == ["initiated", "ringing", "answered", "completed"]
    assert create["StatusCallback"][0].startswith("https://bot.example.com/status/transfer?transfer=")
    stream = ET.fromstring(create["Twiml"][0]).find("Connect/Stream")
    assert stream is not None and stream.get("url") == "wss://bot.example.com/media-stream"
    names = {parameter.get("name") for parameter in stream.findall("Parameter")}
    assert {"voicebotBriefing", "voicebotDial", "voicebotToken", "transferOf"} <= names

    # Accepting moves the person into the same room, starting it.
    [join] = line.twilio.updates(person.sid)
    _, their_room = conference_of(join["Twiml"][0])
    assert their_room.text == room.text
    assert their_room.get("startConferenceOnEnter") == "true" and their_room.get("endConferenceOnExit") == "true"

    # The briefing agent knew who was calling and why, from the caller's call.
    [briefed] = line.briefed
    assert briefed.call_sid == person.sid and briefed.parameters["transferOf"] == CALLER
    prompt = line.briefers[0].system_prompt or ""
    assert "Ann wants to move her booking to Friday." in prompt
    assert "caller: I would like to talk to a person about my booking" in prompt
    assert "1 5 5 5 0 0 0 1 1 1 1" in prompt
    events = [form["StatusCallbackEvent"] for url, form, _ in line.twilio.callbacks if "conference" in url]
    assert events[:3] == ["participant-join", "participant-join", "conference-start"]


# --- the caller comes back ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "outcome, said",
    [("no-answer", "nobody answered"), ("busy", "their line was busy"), ("failed", "could not be connected")],
)
async def test_a_person_who_does_not_answer_gives_the_caller_back_to_the_bot(outcome: str, said: str) -> None:
    async with warm_line(BRIEF_AND_WAIT, person=Person(ring_s=0.3, outcome=outcome)) as line:
        caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(lambda: len(caller.streams) == 2 and BACK_TONE in tones(caller))
        await line.twilio.settle()
        assert line.metric(outcome.replace("-", "_")) == 1
        returned = line.callers[-1]
        await caller.stream.stop()
    assert hearing(caller)[:3] == ["bot", f"hold:{TWILIO_HOLD_MUSIC}", "bot"]
    assert line.person().streams == []  # nobody was briefed: the agent pre-warmed while it rang was stopped unused
    assert all(model.stopped and model.texts == [] for model in line.briefers)
    assert any(said in text for text in returned.texts)
    # The fresh session started from the conversation so far, not from scratch.
    assert returned.messages[0] == {"role": "user", "content": [{"text": CALLER_SCRIPT[0].text}]}  # type: ignore[union-attr]
    back = ET.fromstring(line.twilio.updates(CALLER)[-1]["Twiml"][0]).find("Connect/Stream")
    assert back is not None
    assert {p.get("name") for p in back.findall("Parameter")} >= {"voicebotReturn", "voicebotToken", "CallSid"}


async def test_declined_on_the_keypad_hangs_up_on_the_person_and_brings_the_caller_back() -> None:
    async with warm_line(BRIEF_AND_WAIT) as line:
        caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(line.has_person)
        person = line.person()
        await until(lambda: person.streams and BRIEF_TONE in tones(person))
        await person.stream.dtmf("2")
        await until(lambda: len(caller.streams) == 2 and BACK_TONE in tones(caller))
        assert person.status == "completed"
        assert line.metric("declined") == 1
        await caller.stream.stop()
    assert any("declined" in text for text in line.callers[-1].texts)
    assert line.twilio.conferences[next(iter(line.twilio.conferences))].ended


async def test_declined_through_the_tool_after_a_goodbye() -> None:
    briefing = [
        *BRIEF_AND_WAIT[:2],
        WaitForAudio(0.2),
        UserSaid("sorry I am in a meeting"),
        Say("No problem, goodbye", 0.3, tone_hz=CONNECT_TONE),
        CallTool("decline_transfer", {"reason": "in a meeting"}),
        Hold(),
    ]
    async with warm_line(briefing) as line:
        caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(lambda: len(caller.streams) == 2 and BACK_TONE in tones(caller))
        person = line.person()
        await until(lambda: person.status == "completed")
        await caller.stream.stop()
    assert CONNECT_TONE in tones(person)  # the goodbye was heard before the hang-up
    assert any("in a meeting" in text for text in line.callers[-1].texts)


async def test_the_person_hanging_up_mid_briefing_brings_the_caller_back() -> None:
    async with warm_line(BRIEF_AND_WAIT) as line:
        caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(line.has_person)
        person = line.person()
        await until(lambda: person.streams and BRIEF_TONE in tones(person))
        await line.twilio.hang_up_person(person)
        await until(lambda: len(caller.streams) == 2 and BACK_TONE in tones(caller))
        assert line.metric("person_hung_up") == 1
        await caller.stream.stop()
    assert any("hung up during the briefing" in text for text in line.callers[-1].texts)


async def test_no_decision_in_time_brings_the_caller_back() -> None:
    async with warm_line(BRIEF_AND_WAIT, transfer_accept_timeout_s=1.0) as line:
        caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(lambda: len(caller.streams) == 2 and BACK_TONE in tones(caller))
        await until(lambda: line.person().status == "completed")
        assert line.metric("timeout") == 1
        await caller.stream.stop()
    assert any("did not accept within 1 seconds" in text for text in line.callers[-1].texts)


# --- faults ------------------------------------------------------------------------------------------------


async def test_the_caller_hanging_up_on_hold_ends_the_second_leg() -> None:
    async with warm_line(BRIEF_AND_WAIT, person=Person(ring_s=30)) as line:
        caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(lambda: line.has_person() and line.person().status == "ringing")
        await until(lambda: caller.hearing.startswith("hold:"))
        await line.twilio.hang_up_person(caller)
        person = line.person()
        await until(lambda: person.status == "canceled")
        assert line.metric("caller_hung_up") == 1
    assert line.twilio.updates(person.sid) == [{"Status": ["completed"]}]
    assert person.streams == [] and all(model.stopped or not model.started for model in line.briefers)


async def test_rest_failures_moving_the_caller_are_retried_then_the_caller_is_told() -> None:
    caller_script = [*CALLER_SCRIPT[:3], WaitForText("transfer failed"), Say("Sorry", 0.3, tone_hz=SORRY_TONE), Hold()]
    async with warm_line(BRIEF_AND_WAIT, caller=caller_script) as line:
        url = f"https://api.twilio.com/2010-04-01/Accounts/{ACCOUNT}/Calls/{CALLER}.json"
        line.twilio.script("POST", url, *[Reply(500, {"code": 20500, "message": "down", "status": 500})] * 3)
        caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(lambda: SORRY_TONE in tones(caller))
        assert line.metric("rest_failure") == 1
        await caller.stream.stop()
    assert len([r for r in line.twilio.requests if r["url"] == url]) == 3  # three attempts, as a hang-up gets
    assert line.twilio.created() == [] and hearing(caller) == ["bot"]


async def test_a_join_that_keeps_failing_brings_the_caller_back() -> None:
    async with warm_line(BRIEF_AND_WAIT) as line:
        caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(line.has_person)
        person = line.person()
        await until(lambda: person.streams and BRIEF_TONE in tones(person))
        url = f"https://api.twilio.com/2010-04-01/Accounts/{ACCOUNT}/Calls/{person.sid}.json"
        line.twilio.script("POST", url, *[Reply(503, {"code": 20503, "message": "busy", "status": 503})] * 3)
        await person.stream.dtmf("1")
        await until(lambda: len(caller.streams) == 2 and BACK_TONE in tones(caller))
        await until(lambda: person.status == "completed")
        await caller.stream.stop()
    assert any("connecting them to you failed" in text for text in line.callers[-1].texts)


async def test_shutdown_mid_transfer_leaves_nobody_on_hold() -> None:
    async with warm_line(BRIEF_AND_WAIT, person=Person(ring_s=30)) as line:
        caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(lambda: line.has_person() and caller.hearing.startswith("hold:"))
        await drain(line.app, grace_s=0.3, wrap_up_s=1.0)
        assert line.transfers.pending == 0
        await until(lambda: caller.status == "completed" and line.person().status == "canceled")
    assert caller.said and "call again" in caller.said[0]
    assert line.metric("shutdown") == 1


# --- what the bridge keeps -----------------------------------------------------------------------------------


async def test_the_recording_follows_the_caller_on_hold_and_the_briefing_leg_is_its_own_linked_call(
    tmp_path: Path,
) -> None:
    async with warm_line(BRIEF_BY_VOICE, record_dir=str(tmp_path)) as line:
        caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        person_sid = ""

        def connected() -> bool:
            nonlocal person_sid
            person_sid = line.person().sid if line.has_person() else ""
            return caller.hearing == "conference"

        await until(connected)
        await line.twilio.settle()
    await until(lambda: len(list(tmp_path.glob("*/transcript.json"))) == 2)
    [caller_folder] = tmp_path.glob(f"*-{CALLER}")
    [person_folder] = tmp_path.glob(f"*-{person_sid}")
    records = [json.loads(line) for line in (caller_folder / "events.jsonl").read_text().splitlines()]
    notes = [record["detail"] for record in records if record.get("kind") == "note" and record["note"] == "transfer"]
    states = [note.split(":")[0] for note in notes if ":" in note]
    assert states[:3] == ["dialling", "ringing", "briefing"] and "connected" in states
    assert any(note.startswith("briefing started") for note in notes)
    assert records[-1]["kind"] == "end" and records[-1]["ended_by"] == "transfer"
    assert records[-1]["reason"] == f"warm transfer to {PERSON_NUMBER}: connected"
    header = json.loads((person_folder / "events.jsonl").read_text().splitlines()[0])
    assert header["call"]["parameters"]["transferOf"] == CALLER


async def test_transfer_callbacks_need_twilios_signature() -> None:
    async with warm_line(BRIEF_AND_WAIT) as line:
        async with httpx.AsyncClient(base_url=f"http://{line.twilio.app_base}") as client:
            form = {"CallSid": "CA" + "9" * 32, "CallStatus": "completed"}
            for path in ("/status/transfer?transfer=x", "/status/conference?transfer=x"):
                assert (await client.post(path, data=form)).status_code == 403
                signed = {"X-Twilio-Signature": line.twilio._sign(f"https://bot.example.com{path}", form)}
                assert (await client.post(path, data=form, headers=signed)).status_code == 204


def test_the_history_a_returning_caller_resumes_from_is_plain_text_and_bounded() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": [{"text": "Hello!"}]},  # a leading bot turn is dropped
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "user", "content": [{"text": "I want a person"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "transfer_call", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "status": "success", "content": []}}]},
        {"role": "assistant", "content": [{"text": "x" * 5000}]},
    ]
    history = resumable_history(messages)
    assert history[0] == {"role": "user", "content": [{"text": "hi I want a person"}]}
    assert [turn["role"] for turn in history] == ["user", "assistant"]
    assert len(history[1]["content"][0]["text"]) == 1000
    long_call = [{"role": ("user", "assistant")[i % 2], "content": [{"text": str(i)}]} for i in range(101)]
    assert len(resumable_history(long_call)) <= 40

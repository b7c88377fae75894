"""The call console without a browser: configuration, access, console streams, the event feed, limits."""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

import telephony.console.routes as console_module
from telephony.app import create_app
from telephony.call_info import CallInfo
from telephony.call_outcome import labels_json
from telephony.config import ConfigError, Settings, load_settings
from telephony.console.auth import ConsoleAccess
from telephony.console.events import BACKLOG, CallFeed
from telephony.recording.call_library import DOWNLOADS, CallLibrary
from telephony.simulation.caller.simulated_caller import SimulatedCaller

from ..conftest import TEST_SETTINGS, harness
from ..fakes.model import CallTool, Hold, Say, UserSaid, WaitForAudio
from ..fakes.rest import FakeCallControl

SECRET = "console-secret-for-tests"
AUTH_TOKEN = "twilio-auth-token"
CONSOLE = replace(TEST_SETTINGS, console=True, console_token=SECRET)
SIGNED_CONSOLE = replace(CONSOLE, twilio_auth_token=AUTH_TOKEN)
"""Twilio signatures verified: a console stream must still get in, with its own token."""
BEARER = {"Authorization": f"Bearer {SECRET}"}
GREET_AND_HANG_UP = [
    Say("Hello from the bot.", 0.4, tone_hz=600),
    WaitForAudio(0.3),
    UserSaid("bye now"),
    Say("Goodbye!", 0.3, tone_hz=400),
    CallTool("end_conversation", {"reason": "caller said bye"}),
    Hold(),
]
NOTHING_LISTED = {
    "recording": False,
    "calls": [],
    "live": [],
    "outcomes": dict.fromkeys(labels_json(), 0),
    "outcome_labels": labels_json(),
}
"""The calls list of a console that records nothing and has had no call."""


def never_called(call: CallInfo) -> Any:  # pragma: no cover - these tests open no stream
    raise AssertionError("no agent should be built")


def client_for(settings: Settings) -> httpx.AsyncClient:
    app = create_app(settings, agent_factory=never_called)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://console.test")


async def ticket_from(base: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=f"http://{base}") as client:
        response = await client.post("/console/session", headers=BEARER)
    assert response.status_code == 200, response.text
    return dict(response.json())


def console_caller(base: str, ticket: dict[str, Any], **overrides: Any) -> SimulatedCaller:
    """A caller that speaks exactly as the console page does (same URL, SIDs and parameters)."""
    values: dict[str, Any] = {
        "url": f"ws://{base}{ticket['stream']}",
        "call_sid": ticket["callSid"],
        "stream_sid": ticket["streamSid"],
        "parameters": ticket["parameters"],
        "speed": 4.0,
    }
    return SimulatedCaller(**{**values, **overrides})


async def read_events(
    base: str, path: str, timeout: float = 10.0, headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The SSE feed until the server closes it (the call ended)."""
    events = []
    async with (
        httpx.AsyncClient(base_url=f"http://{base}", timeout=timeout, headers=headers) as client,
        client.stream("GET", path) as response,
    ):
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line.removeprefix("data: ")))
    return events


# --- configuration --------------------------------------------------------------------------------


def test_console_is_off_by_default_and_needs_a_token_when_on() -> None:
    assert load_settings({}, dotenv=None).console is False
    with pytest.raises(ConfigError, match="VOICEBOT_CONSOLE_TOKEN"):
        load_settings({"VOICEBOT_CONSOLE": "1"}, dotenv=None)
    with pytest.raises(ConfigError, match="VOICEBOT_CONSOLE_TOKEN"):
        load_settings({"VOICEBOT_CONSOLE": "on", "VOICEBOT_CONSOLE_TOKEN": "short"}, dotenv=None)
    with pytest.raises(ConfigError, match="VOICEBOT_CONSOLE='maybe'"):
        load_settings({"VOICEBOT_CONSOLE": "maybe"}, dotenv=None)
    settings = load_settings({"VOICEBOT_CONSOLE": "true", "VOICEBOT_CONSOLE_TOKEN": SECRET}, dotenv=None)
    assert settings.console and SECRET not in repr(settings)


# --- access ---------------------------------------------------------------------------------------


def test_operator_secret_as_bearer_or_basic_password() -> None:
    access = ConsoleAccess(SECRET)
    basic = base64.b64encode(f"anyone:{SECRET}".encode()).decode()
    assert access.authorised(f"Bearer {SECRET}") and access.authorised(f"basic {basic}")
    wrong = base64.b64encode(b"anyone:wrong").decode()
    for header in (None, "", "Bearer wrong", f"Basic {wrong}", "Basic !!!", f"Token {SECRET}", SECRET):
        assert not access.authorised(header), header
    assert SECRET not in repr(access)


def test_tickets_are_single_use_and_bound_to_their_call() -> None:
    access = ConsoleAccess(SECRET)
    ticket = access.issue()
    other = access.issue()
    assert ticket.call_sid != other.call_sid and ticket.call_sid.startswith("CA") and len(ticket.call_sid) == 34
    assert access.admits_stream({"console": ticket.stream_token, "call": other.call_sid}) == "wrong call SID"
    assert access.admits_stream({"console": ticket.stream_token, "call": ticket.call_sid}) is None
    assert access.admits_stream({"console": ticket.stream_token, "call": ticket.call_sid}) == "replayed"
    assert access.admits_stream({"call": ticket.call_sid}) == "missing"
    assert access.events_allowed(ticket.call_sid, ticket.events_key)
    assert not access.events_allowed(other.call_sid, ticket.events_key) and not access.events_allowed("x", None)
    assert ConsoleAccess("another secret").admits_stream({"console": other.stream_token, "call": other.call_sid})


async def test_console_routes_do_not_exist_unless_enabled() -> None:
    async with client_for(TEST_SETTINGS) as client:
        for path in ("/console", "/console/calls", "/console/static/softphone.js"):
            assert (await client.get(path, headers=BEARER)).status_code == 404
        assert (await client.post("/console/session", headers=BEARER)).status_code == 404


async def test_console_pages_need_the_secret() -> None:
    async with client_for(SIGNED_CONSOLE) as client:
        refused = await client.get("/console")
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Basic")
        assert "VOICEBOT_CONSOLE_TOKEN" in refused.text
        assert (await client.post("/console/session")).status_code == 401
        assert (await client.get("/console/api/calls", headers={"Authorization": "Bearer nope"})).status_code == 401
        page = await client.get("/console", auth=("operator", SECRET))
        assert page.status_code == 200 and "softphone.js" in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
        script = await client.get("/console/static/phone-audio.js", headers=BEARER)
        assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
        for name in ("..%2Fconsole.py", ".hidden.js", "missing.js", "index.txt"):
            assert (await client.get(f"/console/static/{name}", headers=BEARER)).status_code == 404
        listed = (await client.get("/console/api/calls", headers=BEARER)).json()
        assert listed == NOTHING_LISTED


async def test_twilio_routes_keep_their_signature_checks_with_the_console_on() -> None:
    async with client_for(SIGNED_CONSOLE) as client:
        assert (await client.post("/twiml", data={"CallSid": "CA1"}, headers=BEARER)).status_code == 403


# --- console calls ---------------------------------------------------------------------------------


async def test_a_console_call_gets_in_without_a_twilio_signature_and_streams_its_events() -> None:
    rest = FakeCallControl()
    async with harness(GREET_AND_HANG_UP, settings=SIGNED_CONSOLE, hangup=rest) as h:
        ticket = await ticket_from(h.base)
        feed = asyncio.create_task(read_events(h.base, ticket["events"]))
        async with console_caller(h.base, ticket) as caller:
            await caller.connect()
            await caller.silence(1.0)
            await caller.wait_closed()
        events = await asyncio.wait_for(feed, 10)
    assert h.calls[0].call_sid == ticket["callSid"] and caller.close_code == 1000 and not caller.hung_up
    assert rest.calls == []  # no REST hang-up for a console call: there is no Twilio call to end
    kinds = [event["type"] for event in events]
    assert kinds[0] == "call_started" and kinds[-1] == "ended"
    said = {(event["role"], event["text"]) for event in events if event["type"] == "transcript" and event["final"]}
    assert {("bot", "Hello from the bot."), ("caller", "bye now"), ("bot", "Goodbye!")} <= said
    tool = next(event for event in events if event["type"] == "tool_use")
    assert tool["name"] == "end_conversation" and tool["input"] == {"reason": "caller said bye"}
    assert any(event["type"] == "tool_result" and event["status"] == "success" for event in events)
    assert kinds.index("hangup") < kinds.index("ended") and events[-1]["by"] == "agent"
    assert events[-1]["outcome"] == "completed-by-bot" and events[-1]["outcome_label"] == "completed by the bot"
    assert [event["seq"] for event in events] == sorted({event["seq"] for event in events})


async def test_a_console_stream_with_a_bad_or_used_token_is_refused() -> None:
    async with harness([Hold()], settings=SIGNED_CONSOLE) as h:
        ticket = await ticket_from(h.base)
        forged = f"ws://{h.base}/media-stream?console=AAAA&call={ticket['callSid']}"
        with pytest.raises(websockets.InvalidStatus):
            await websockets.connect(forged)
        plain = f"ws://{h.base}/media-stream"  # neither a Twilio signature nor a console token
        with pytest.raises(websockets.InvalidStatus):
            await websockets.connect(plain)
        async with console_caller(h.base, ticket) as caller:
            await caller.connect()
            await caller.silence(0.2)
            await caller.stop()
            await caller.wait_closed()
        with pytest.raises(websockets.InvalidStatus):  # the same ticket again
            await websockets.connect(f"ws://{h.base}{ticket['stream']}")
    assert len(h.calls) == 1


async def test_a_console_call_needs_its_own_start_token() -> None:
    async with harness([Hold()], settings=CONSOLE) as h:
        first, second = await ticket_from(h.base), await ticket_from(h.base)
        # second's stream, but first's start token under second's call SID: bound to another call
        async with console_caller(h.base, second, parameters=first["parameters"]) as caller:
            await caller.connect()
            await caller.wait_closed()
        # a console start on a stream the console did not open (no upgrade token) is refused too
        async with console_caller(h.base, first, url=f"ws://{h.base}/media-stream") as caller:
            await caller.connect()
            await caller.wait_closed()
    assert h.calls == []


async def test_console_calls_count_against_the_call_limit() -> None:
    async with harness([Say("Hi", 0.2), Hold()], settings=CONSOLE, max_calls=1) as h:
        ticket = await ticket_from(h.base)  # holds the only line until its stream starts
        async with httpx.AsyncClient(base_url=f"http://{h.base}") as client:
            busy = await client.post("/console/session", headers=BEARER)
            assert busy.status_code == 503 and "VOICEBOT_MAX_CALLS" in busy.json()["error"]
            twiml = await client.post("/twiml", data={"CallSid": "CA" + "9" * 32})
            assert "<Hangup" in twiml.text and "<Stream" not in twiml.text  # the busy message, not a stream
            async with console_caller(h.base, ticket) as caller:
                await caller.connect()
                await caller.silence(0.3)
                assert (await client.post("/console/session", headers=BEARER)).status_code == 503
                await caller.stop()
                await caller.wait_closed()
            for _ in range(50):
                if not h.app.state.sessions:
                    break
                await asyncio.sleep(0.02)
            assert (await client.post("/console/session", headers=BEARER)).status_code == 200


async def test_the_event_feed_needs_the_ticket_key() -> None:
    async with harness([Hold()], settings=CONSOLE) as h:
        ticket = await ticket_from(h.base)
        async with httpx.AsyncClient(base_url=f"http://{h.base}") as client:
            wrong = await client.get(f"/console/events?call={ticket['callSid']}&key=nope")
            unknown = await client.get("/console/events?call=CA1&key=x")
        assert wrong.status_code == 404 and unknown.status_code == 404


# --- the feed itself -------------------------------------------------------------------------------


async def test_feed_accumulates_transcript_deltas_and_resumes_after_the_last_event_seen() -> None:
    feed = CallFeed("CA1")
    feed.start(CallInfo(call_sid="CA1", stream_sid="MZ1"))
    for delta in ("Hel", "lo ", "there"):
        feed.agent_event({"type": "bidi_transcript_delta", "delta": delta, "role": "assistant", "content_id": "c1"})
    feed.agent_event(
        {"type": "bidi_transcript_block", "transcript": "Hello there.", "role": "assistant", "content_id": "c1"}
    )
    feed.note("barge_in", "3 queued frames dropped")
    feed.twilio_sent('{"event":"media"}')  # audio is not an event for the page
    await feed.call_ended("caller hung up", "caller")
    events = [event async for event in feed.follow()]
    texts = [event["text"] for event in events if event["type"] == "transcript"]
    assert texts == ["Hel", "Hello", "Hello there", "Hello there."]
    assert [event["type"] for event in events][-2:] == ["barge_in", "ended"]
    resumed = [event async for event in feed.follow(after=events[-2]["seq"])]
    assert [event["type"] for event in resumed] == ["ended"]


async def test_a_slow_subscriber_never_holds_up_the_call() -> None:
    feed = CallFeed("CA1")
    follower = feed.follow(keepalive_s=5)
    feed.note("limit", "first")
    assert (await anext(follower))["detail"] == "first"
    for index in range(3 * BACKLOG):  # the subscriber reads nothing meanwhile; publishing never waits for it
        feed.note("limit", str(index))
    feed.finish("done", "caller")
    rest = [event async for event in follower]
    assert len(rest) == BACKLOG and rest[-1]["type"] == "ended"  # it lost the oldest events, never the end


async def test_draining_ends_the_feed_of_a_console_call_that_never_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console_module, "KEEPALIVE_S", 0.1)
    async with harness([Hold()], settings=CONSOLE) as h:
        ticket = await ticket_from(h.base)
        h.app.state.admission.draining = True  # what SIGTERM does: the page's stream will never come now
        events = await asyncio.wait_for(read_events(h.base, ticket["events"]), 5)
    assert events[-1]["type"] == "ended" and events[-1]["reason"] == "the server is shutting down"


# --- recorded calls ---------------------------------------------------------------------------------


def test_the_library_reads_only_recording_folders_directly_under_its_root(tmp_path: Path) -> None:
    root = tmp_path / "calls"
    done = root / "20260101-120000-CA1"
    done.mkdir(parents=True)
    header = {"format": "voicebot-recording", "started_at": "2026-01-01T12:00:00.000Z", "call": {"call_sid": "CA1"}}
    (done / "events.jsonl").write_text(json.dumps(header) + "\n")
    transcript = {
        "duration_s": 12.5,
        "ended": {"reason": "agent ended the call", "by": "agent"},
        "turns": [{"role": "bot"}, {"role": "caller"}, {"role": "tool"}, {"role": "bot"}],
        "barge_ins": [3.2],
    }
    (done / "transcript.json").write_text(json.dumps(transcript))
    (done / "call.wav").write_bytes(b"RIFF")
    live = root / "20260101-130000-CA2"  # still being recorded: no transcript yet
    live.mkdir()
    (live / "events.jsonl").write_text(json.dumps(header) + "\n")
    (root / "not-a-recording").mkdir()
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "events.jsonl").write_text("{}\n")

    library = CallLibrary(root)
    rows = library.recent()
    assert [row.name for row in rows] == [live.name, done.name]
    assert not rows[0].complete and rows[0].duration_s is None
    row = rows[1]
    assert (row.duration_s, row.turns, row.tool_calls, row.barge_ins, row.ended_by) == (12.5, 3, 1, 1, "agent")
    assert row.has_audio and row.started_at == "2026-01-01T12:00:00.000Z"
    assert library.audio(done.name) == done / "call.wav" and library.audio(live.name) is None
    assert library.transcript(live.name) is None and library.transcript(done.name)["summary"]["call_sid"] == "CA1"
    for name in ("../secret", "..", ".", "not-a-recording", "a/b", ""):
        assert library.folder(name) is None and library.transcript(name) is None
    assert CallLibrary(tmp_path / "missing").recent() == []


async def test_a_twilio_call_is_listed_live_and_followed_then_its_recording_downloads(tmp_path: Path) -> None:
    """Every call, not only the console's, shows on the calls page while it lasts (with who and which model),
    its live events need only the operator's secret, and once recorded its files download (and only they)."""
    settings = replace(CONSOLE, record_dir=str(tmp_path / "calls"))
    async with harness(GREET_AND_HANG_UP, settings=settings) as h:
        async with h.caller(speed=2.0) as call:
            await call.connect()
            await call.silence(0.2)
            async with httpx.AsyncClient(base_url=f"http://{h.base}", headers=BEARER) as client:
                live = (await client.get("/console/api/calls")).json()["live"]
                assert [row["call_sid"] for row in live] == [call.call_sid] and live[0]["live"]
                assert live[0]["from_number"] == "+15550001111" and live[0]["model"] == "scripted"
                assert not live[0]["console"]
                path = f"/console/api/live/{call.call_sid}/events"
                assert (await client.get(path, headers={"Authorization": "Bearer wrong"})).status_code == 401
            feed = asyncio.create_task(read_events(h.base, path, headers=BEARER))
            await call.silence(1.0)
            await call.wait_closed()
        assert [event["type"] for event in await asyncio.wait_for(feed, 10)][-1] == "ended"
        async with httpx.AsyncClient(base_url=f"http://{h.base}", headers=BEARER) as client:
            for _ in range(50):
                rows = (await client.get("/console/api/calls")).json()["calls"]
                if rows and rows[0]["complete"]:
                    break
                await asyncio.sleep(0.1)
            (row,) = rows
            assert row["model"] == "scripted" and set(row["files"]) == set(DOWNLOADS)
            assert row["outcome"] == "completed-by-bot" and row["recovered"] is False
            for file_name in DOWNLOADS:
                response = await client.get(f"/console/api/calls/{row['name']}/files/{file_name}")
                assert response.status_code == 200 and response.content, file_name
                assert f'filename="{row["name"]}-{file_name}"' in response.headers["content-disposition"]
            for bad in ("../events.jsonl", "%2E%2E%2Fsecret", ".track-x", "recorder.log"):
                assert (await client.get(f"/console/api/calls/{row['name']}/files/{bad}")).status_code == 404
            levels = (await client.get(f"/console/api/calls/{row['name']}/levels")).json()
            assert levels["per_s"] == 20 and max(levels["bot"]) > 0.5 and len(levels["caller"]) == len(levels["bot"])


async def test_a_console_call_may_choose_its_caller_id_and_bad_ones_are_refused() -> None:
    async with harness([Hold()], settings=CONSOLE) as h, httpx.AsyncClient(base_url=f"http://{h.base}") as client:
        chosen = await client.post("/console/session", headers=BEARER, json={"from": "+15550100", "to": "sip:desk@x"})
        assert chosen.json()["parameters"]["From"] == "+15550100" and chosen.json()["parameters"]["To"] == "sip:desk@x"
        for bad in ({"from": "<script>"}, {"to": "two words"}, {"from": "+1" * 30}):
            refused = await client.post("/console/session", headers=BEARER, json=bad)
            assert refused.status_code == 400 and "must be a number" in refused.json()["error"]
        default = await client.post("/console/session", headers=BEARER)
        assert default.json()["parameters"]["From"] == "console"


def test_the_live_feed_counts_turns_as_the_recording_does() -> None:
    """A bot answer in several transcript blocks is one turn (the calls page showed 9 where the recording had 5)."""
    feed = CallFeed("CA1")

    def block(role: str, text: str) -> None:
        feed.agent_event({"type": "bidi_transcript_block", "role": role, "transcript": text, "content_id": text})

    feed.agent_event({"type": "bidi_response_start"})
    block("assistant", "Hello.")
    block("assistant", "How can I help?")
    feed.agent_event({"type": "bidi_response_stop"})
    block("user", "Opening hours?")
    feed.agent_event({"type": "bidi_response_start"})
    block("assistant", "We open at nine.")
    block("assistant", "And close at six.")
    assert feed.counts["turns"] == 3


async def test_a_browser_without_the_token_gets_a_sign_in_page_and_scripts_get_json() -> None:
    async with client_for(SIGNED_CONSOLE) as client:
        html = {"Accept": "text/html,application/xhtml+xml"}
        page = await client.get("/console/calls", headers=html, auth=("operator", "wrong"))
        assert page.status_code == 401 and page.headers["content-type"].startswith("text/html")
        assert "Sign in to the voicebot console" in page.text and "not the console token" in page.text
        assert page.headers["www-authenticate"].startswith("Basic") and "script" not in page.text
        first = await client.get("/console", headers=html)
        assert "needs its token" in first.text
        script = await client.get("/console/api/calls", auth=("operator", "wrong"))
        assert script.status_code == 401 and "VOICEBOT_CONSOLE_TOKEN" in script.json()["detail"]
        search = await client.get("/console/api/search?q=hello", headers=BEARER)
        assert search.status_code == 404  # calls are not recorded here: said so, not a crash

"""A stateful fake of api.twilio.com for warm transfers: calls, their TwiML, conferences and status callbacks.

:class:`FakeTwilio` is a :class:`~tests.fakes.twilio_http.RecordingHttpClient` (so the real
Twilio SDK talks to it) that also does what Twilio does with each request, as its docs describe:

- ``Calls.json`` (create): the call rings the person (:class:`Person` scripts answer, no answer, busy,
  failed), posts the ``StatusCallbackEvent``s it was asked for, and on answer runs its TwiML;
- ``Calls/{sid}.json`` with ``Twiml``: whatever the call was doing stops (a media stream gets ``stop``,
  a conference participant leaves with ``participant_updated_via_api``) and the new TwiML runs;
  with ``Status=completed``: the call ends (a ringing call is cancelled);
- ``<Connect><Stream>``: a :class:`~telephony.simulation.caller.SimulatedCaller` connects to the app, signed as
  Twilio signs the upgrade, with the ``<Parameter>``s, and keeps streaming silence like a quiet phone line, or
  the party's voice when they talk (:meth:`FakeTwilio.speak`); when the app closes the socket, the call ends
  (nothing follows ``<Connect>``);
- ``<Dial>`` a number, SIP address or client (a cold transfer): the party hears ``dial:<whom>``; the call
  stays in progress (who answers is beyond this fake);
- ``<Dial><Conference>``: conference rooms with ``startConferenceOnEnter`` / ``endConferenceOnExit`` /
  ``waitUrl`` semantics (a participant waiting for the start hears the wait URL), posting ``participant-join``,
  ``participant-leave`` (with ``ReasonParticipantLeft``), ``conference-start`` and ``conference-end``;
- ``<Say>`` / ``<Hangup>``: the words are noted and the call ends.

Every status callback is POSTed to the app over loopback, signed over its public URL with the auth token, with
the form fields Twilio's docs list for call progress and conference events (see ``_status``, ``_conference_event``).
Scripted failures (``script``/``then`` of the base class) answer a request without changing any state.
Nothing is fetched from the network: the wait URL is only recorded.
"""

from __future__ import annotations

import asyncio
import re
import time
import xml.etree.ElementTree as ET
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from twilio.http.response import Response
from twilio.request_validator import RequestValidator

from telephony.codec import FRAME_BYTES, FRAME_SECONDS
from telephony.simulation.caller.simulated_caller import ULAW_SILENCE, SimulatedCaller, parse_stream
from telephony.twilio.calls_api import CALL_OVER

from .twilio_http import RecordingHttpClient, Reply, form_fields
from .twilio_resources import Conference, FakeCall, Participant, Person, new_sid

_CALL_URL = re.compile(r"/Accounts/(AC\w+)/Calls(?:/(CA\w+))?\.json$")
LINE_CHUNK_FRAMES = 10
"""What a stream's line sends at a time (200 ms): silence, or as much of the party's voice as is waiting."""


class FakeTwilio(RecordingHttpClient):
    """See the module docstring. ``app_base`` is the app's loopback ``host:port``."""

    def __init__(self, public_url: str, auth_token: str, account_sid: str) -> None:
        super().__init__()
        self.public_url = public_url.rstrip("/")
        self.auth_token = auth_token
        self.account_sid = account_sid
        self.app_base = ""
        self.calls: dict[str, FakeCall] = {}
        self.conferences: dict[str, Conference] = {}
        self.people: dict[str, Person] = {}
        self.callbacks: list[tuple[str, dict[str, str], int]] = []
        """Every status callback posted: (public URL, form, the app's answer)."""
        self._callback_queue: asyncio.Queue[tuple[str, dict[str, str]]] = asyncio.Queue()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._http: httpx.AsyncClient | None = None
        self._poster: asyncio.Task[None] | None = None

    # --- lifecycle --------------------------------------------------------------------------------

    def attach(self, app_base: str) -> FakeTwilio:
        self.app_base = app_base
        self._http = httpx.AsyncClient(base_url=f"http://{app_base}", timeout=10)
        self._poster = asyncio.create_task(self._post_callbacks())
        return self

    async def aclose(self) -> None:
        for call in self.calls.values():
            for stream in call.streams:
                if not stream.closed.is_set():
                    await self._stop_stream(call, stream)
        tasks = [*self._tasks, *([self._poster] if self._poster else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._http is not None:
            await self._http.aclose()

    async def settle(self, timeout: float = 5.0) -> None:
        """Wait until every callback posted so far has been answered."""
        await asyncio.wait_for(self._callback_queue.join(), timeout)

    # --- an inbound call, as Twilio places it ----------------------------------------------------

    async def incoming(self, call_sid: str, from_: str, to: str) -> FakeCall:
        """A caller dials our number: Twilio fetches /twiml (signed) and runs what it answers."""
        call = self.calls[call_sid] = FakeCall(call_sid, to=to, from_=from_, status="in-progress")
        call.answered_at = time.monotonic()
        form = {"CallSid": call_sid, "From": from_, "To": to, "AccountSid": self.account_sid, "CallStatus": "ringing"}
        assert self._http is not None
        response = await self._http.post(
            "/twiml", data=form, headers={"X-Twilio-Signature": self._sign(f"{self.public_url}/twiml", form)}
        )
        assert response.status_code == 200, response.text
        await self._run_twiml(call, response.text)
        return call

    # --- the REST API -----------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        url: str,
        params: Any = None,
        data: Any = None,
        headers: Any = None,
        auth: Any = None,
        timeout: Any = None,
        allow_redirects: bool = False,
    ) -> Response:
        scripted = (method.upper(), url) in self._by_route and self._by_route[(method.upper(), url)]
        if scripted or self._in_order:
            return await super().request(method, url, params, data, headers, auth, timeout, allow_redirects)
        self._record(method, url, params, data, auth)
        match = _CALL_URL.search(urlsplit(url).path)
        if method.upper() != "POST" or match is None:
            return Reply(404, {"code": 20404, "message": "not found", "status": 404}).response()
        form = form_fields(data)
        if match.group(2) is None:
            return self._create(form)
        return self._update(match.group(2), form)

    def _create(self, form: dict[str, list[str]]) -> Response:
        to, from_ = form["To"][0], form["From"][0]
        call = FakeCall(new_sid("CA"), to=to, from_=from_)
        call.status_callback = form.get("StatusCallback", [None])[0]
        call.events = tuple(form.get("StatusCallbackEvent", ["completed"]))
        self.calls[call.sid] = call
        self._spawn(self._ring(call, form["Twiml"][0], self.people.get(to, Person())))
        return Reply(201, self._resource(call)).response()

    def _update(self, sid: str, form: dict[str, list[str]]) -> Response:
        call = self.calls.get(sid)
        if call is None:
            return Reply(
                404, {"code": 20404, "message": "The requested resource was not found", "status": 404}
            ).response()
        if "Twiml" in form:
            if call.status != "in-progress":
                return Reply(400, {"code": 21220, "message": "Call is not in-progress", "status": 400}).response()
            call.twimls.append(form["Twiml"][0])
            self._spawn(self._redirect(call, form["Twiml"][0]))
        elif form.get("Status") == ["completed"] or form.get("Status") == ["canceled"]:
            if call.status in ("completed", "canceled", "busy", "failed", "no-answer"):
                return Reply(400, {"code": 21220, "message": "Call is not in-progress", "status": 400}).response()
            self._spawn(self._hang_up(call))
        return Reply(200, self._resource(call)).response()

    def _resource(self, call: FakeCall) -> dict[str, Any]:
        return {
            "sid": call.sid,
            "account_sid": self.account_sid,
            "to": call.to,
            "from": call.from_,
            "status": call.status,
        }

    # --- what a call does -------------------------------------------------------------------------

    async def _ring(self, call: FakeCall, twiml: str, person: Person) -> None:
        await self._status(call, "initiated", "initiated")
        call.status = "ringing"
        call.hear("ringing")
        await self._status(call, "ringing", "ringing")
        await asyncio.sleep(person.ring_s)
        if call.status != "ringing":
            return  # cancelled while ringing
        if person.outcome != "answer":
            await self._finish(call, person.outcome)
            return
        call.status, call.answered_at = "in-progress", time.monotonic()
        await self._status(call, "answered", "in-progress")
        await self._run_twiml(call, twiml)

    async def _redirect(self, call: FakeCall, twiml: str) -> None:
        await self._leave_current(call, "participant_updated_via_api")
        await self._run_twiml(call, twiml)

    async def _hang_up(self, call: FakeCall) -> None:
        if call.status in ("ringing", "queued"):
            await self._finish(call, "canceled")
            return
        await self._leave_current(call, "participant_updated_via_api")
        await self._finish(call, "completed")

    async def _leave_current(self, call: FakeCall, reason: str) -> None:
        for stream in call.streams:
            if not stream.closed.is_set():
                await self._stop_stream(call, stream)
        if call.conference is not None:
            await self._leave(call, reason)

    async def _finish(self, call: FakeCall, status: str) -> None:
        if call.status in ("completed", "canceled", "busy", "failed", "no-answer"):
            return
        call.status = status
        call.hear("nothing")
        call.over.set()
        await self._status(call, "completed", status)

    async def _run_twiml(self, call: FakeCall, twiml: str) -> None:
        root = ET.fromstring(twiml)
        for verb in root:
            if verb.tag == "Connect":
                await self._connect(call, twiml)
                return  # the rest runs only after the socket closes; ours never has anything after it
            if verb.tag == "Dial":
                conference = verb.find("Conference")
                if conference is None:  # a cold transfer: the party dialled talks to the caller, outside this fake
                    call.hear(f"dial:{_dialled(verb)}")
                    return
                await self._join(call, conference)
                return
            if verb.tag == "Say":
                call.said.append(verb.text or "")
            elif verb.tag == "Hangup":
                break
        await self._finish(call, "completed")

    # --- media streams ----------------------------------------------------------------------------

    async def _connect(self, call: FakeCall, twiml: str) -> None:
        target = parse_stream(twiml)
        public = urlsplit(target.url)
        assert public.scheme == "wss" and not public.query, "Twilio streams only to wss:// URLs without a query"
        signature = self._sign(target.url, {})
        stream = SimulatedCaller(
            f"ws://{self.app_base}{public.path}",
            call_sid=call.sid,
            stream_sid=new_sid("MZ"),
            account_sid=self.account_sid,
            parameters=target.parameters,
            headers={"X-Twilio-Signature": signature},
        )
        await stream.__aenter__()
        await stream.connect()
        call.streams.append(stream)
        call.hear("bot")
        self._spawn(self._line_noise(call, stream))
        self._spawn(self._watch_stream(call, stream))

    async def _line_noise(self, call: FakeCall, stream: SimulatedCaller) -> None:
        """A phone line never goes quiet on the wire: a frame every 20 ms until the stream ends, silence unless the
        party is talking (one sender per stream, so their voice keeps the line's pace)."""
        size = LINE_CHUNK_FRAMES * FRAME_BYTES
        while not stream.closed.is_set() and not stream.hung_up:
            voice = bytes(call.voice[:size])
            del call.voice[:size]
            await stream.stream(voice + ULAW_SILENCE * ((size - len(voice)) // FRAME_BYTES))

    async def speak(self, call: FakeCall, ulaw: bytes) -> None:
        """The party talks into their phone (μ-law 8 kHz); returns once their words have gone down the line."""
        call.voice += ulaw[: len(ulaw) // FRAME_BYTES * FRAME_BYTES]
        while call.voice and call.streams and not call.stream.closed.is_set():
            await asyncio.sleep(FRAME_SECONDS)
        await asyncio.sleep(LINE_CHUNK_FRAMES * FRAME_SECONDS)  # the last of it is on its way

    async def _watch_stream(self, call: FakeCall, stream: SimulatedCaller) -> None:
        await stream.closed.wait()
        if stream.hung_up or stream is not call.streams[-1] or call.conference is not None:
            return
        await asyncio.sleep(0)  # a redirect racing the close moves the call instead
        if call.status == "in-progress" and call.hearing == "bot":
            await self._finish(call, "completed")  # the app closed the socket: nothing follows <Connect>

    async def _stop_stream(self, call: FakeCall, stream: SimulatedCaller) -> None:
        """Twilio ends a stream (the call moved or ended): ``stop``, then the socket closes."""
        stream.hung_up = True
        try:
            await stream.stop()
        except Exception:  # noqa: BLE001 - already closed by the app
            pass
        await stream.__aexit__(None, None, None)

    async def hang_up_person(self, call: FakeCall) -> None:
        """The party hangs up their phone."""
        await self._leave_current(call, "participant_hung_up")
        await self._finish(call, "completed")

    # --- conferences ------------------------------------------------------------------------------

    async def _join(self, call: FakeCall, element: ET.Element) -> None:
        name = (element.text or "").strip()
        room = self.conferences.get(name)
        if room is None or room.ended:
            room = self.conferences[name] = Conference(name)
        participant = Participant(
            call,
            starts=element.get("startConferenceOnEnter", "true") == "true",
            ends=element.get("endConferenceOnExit", "false") == "true",
            wait_url=element.get("waitUrl"),
            label=element.get("participantLabel", ""),
            callback=element.get("statusCallback"),
        )
        events = (element.get("statusCallbackEvent") or "").split()
        if participant.callback and participant.callback not in room.callbacks:
            room.callbacks.append(participant.callback)
        room.participants[call.sid] = participant
        call.conference = name
        if "join" in events or room.callbacks:
            await self._conference_event(room, "participant-join", participant)
        if participant.starts and not room.started:
            room.started = True
            await self._conference_event(room, "conference-start")
        for other in room.participants.values():
            other.call.hear("conference" if room.started else f"hold:{other.wait_url}")

    async def _leave(self, call: FakeCall, reason: str) -> None:
        name = call.conference
        assert name is not None
        room = self.conferences[name]
        participant = room.participants.pop(call.sid)
        call.conference = None
        await self._conference_event(room, "participant-leave", participant, reason)
        if participant.ends or not room.participants:
            await self._end_conference(room, participant if participant.ends else None)

    async def _end_conference(self, room: Conference, ended_by: Participant | None) -> None:
        room.ended = True
        for other in list(room.participants.values()):
            room.participants.pop(other.call.sid)
            other.call.conference = None
            await self._conference_event(
                room, "participant-leave", other, "participant_with_end_conference_on_exit_left"
            )
            await self._finish(other.call, "completed")  # nothing follows their <Dial>
        await self._conference_event(room, "conference-end", ended_by=ended_by)

    async def _conference_event(
        self,
        room: Conference,
        event: str,
        participant: Participant | None = None,
        reason: str = "",
        ended_by: Participant | None = None,
    ) -> None:
        """Post ``event`` with the fields Twilio's docs list for a ``<Conference statusCallback>`` request."""
        room.sequence += 1
        form = {
            "AccountSid": self.account_sid,
            "ConferenceSid": room.sid,
            "FriendlyName": room.name,
            "StatusCallbackEvent": event,
            "SequenceNumber": str(room.sequence),
            "Timestamp": _now_rfc2822(),
        }
        if participant is not None:
            form |= {
                "CallSid": participant.call.sid,
                "Muted": "false",
                "Hold": "false",
                "Coaching": "false",
                "EndConferenceOnExit": str(participant.ends).lower(),
                "StartConferenceOnEnter": str(participant.starts).lower(),
            }
            if participant.label:
                form["ParticipantLabel"] = participant.label
        if reason:
            form["ReasonParticipantLeft"] = reason
            form["ParticipantCallStatus"] = "in-progress" if reason == "participant_updated_via_api" else "completed"
        if event == "conference-end":
            form["ReasonConferenceEnded"] = (
                "participant-with-end-conference-on-exit-left" if ended_by else "last-participant-left"
            )
            if ended_by is not None:
                form["CallSidEndingConference"] = ended_by.call.sid
                form["ParticipantLabelEndingConference"] = ended_by.label
        for url in room.callbacks:
            self._callback_queue.put_nowait((url, form))

    # --- callbacks --------------------------------------------------------------------------------

    async def _status(self, call: FakeCall, event: str, status: str) -> None:
        if call.status_callback and event in call.events:
            form = {
                "AccountSid": self.account_sid,
                "ApiVersion": "2010-04-01",
                "CallSid": call.sid,
                "CallStatus": status,
                "From": call.from_,
                "Caller": call.from_,
                "To": call.to,
                "Called": call.to,
                "Direction": "outbound-api",
                "CallbackSource": "call-progress-events",
                "SequenceNumber": str(call.events.index(event)),
                "Timestamp": _now_rfc2822(),
            }
            if status in CALL_OVER:  # how long it was answered, in whole seconds (0: never)
                form["CallDuration"] = str(round(time.monotonic() - call.answered_at) if call.answered_at else 0)
            self._callback_queue.put_nowait((call.status_callback, form))

    async def _post_callbacks(self) -> None:
        assert self._http is not None
        while True:
            url, form = await self._callback_queue.get()
            try:
                parts = urlsplit(url)
                local = urlunsplit(("", "", parts.path, parts.query, ""))
                response = await self._http.post(
                    local, data=form, headers={"X-Twilio-Signature": self._sign(url, form)}
                )
                self.callbacks.append((url, form, response.status_code))
            finally:
                self._callback_queue.task_done()

    def _sign(self, url: str, form: dict[str, str]) -> str:
        return str(RequestValidator(self.auth_token).compute_signature(url, form))

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- views --------------------------------------------------------------------------------------

    def updates(self, sid: str) -> list[dict[str, Any]]:
        """The REST updates of call ``sid``, as their form fields."""
        return [r["form"] for r in self.requests if r["url"].endswith(f"/Calls/{sid}.json")]

    def created(self) -> list[dict[str, list[str]]]:
        """The ``Calls.json`` create requests, as their form fields."""
        return [r["form"] for r in self.requests if r["url"].endswith("/Calls.json")]


def _dialled(dial: ET.Element) -> str:
    """Whom a ``<Dial>`` rings: its ``<Number>``, ``<Sip>`` or ``<Client>``, or the number written inside it."""
    target = next(iter(dial), None)
    return ((target.text if target is not None else dial.text) or "").strip()


def _now_rfc2822() -> str:
    """Now, as Twilio writes a callback's ``Timestamp`` (RFC 2822, UTC)."""
    return time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime())

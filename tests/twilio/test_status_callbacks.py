"""The status callbacks the bot asks Twilio for, as Twilio sends them: the form fields its docs list, signed
as it signs them (``twilio.request_validator``), through the app's own check, and what they do to a call.

Already elsewhere: the signature itself against Twilio's published vectors (``test_security.py``), a signed and
an unsigned ``/status/call`` (``test_twilio_requests.py``), and the warm-transfer callbacks with and without a
signature (``tests/bridge/test_warm_transfer.py``, whose fake Twilio now posts every callback with the fields
below). Here: the answering-machine result, conference events and call progress with their documented fields,
and forged ones (unsigned, signed for another URL or another transfer, altered, signed with another token)
refused with nothing changed. Twilio's signature carries no timestamp or nonce, so a verbatim replay of a real
callback cannot be told from Twilio resending it: the last test shows that one changes nothing.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

import httpx
from twilio.request_validator import RequestValidator

from ..bridge.test_warm_transfer import (
    ACCOUNT,
    BRIEF_AND_WAIT,
    BRIEF_TONE,
    CALLER,
    CALLER_NUMBER,
    OUR_NUMBER,
    PERSON_NUMBER,
    TOKEN,
    Line,
    tones,
    warm_line,
)
from ..fakes.model import Hold, Say, WaitForText
from ..waiting import until

PUBLIC = "https://bot.example.com"
CALL_PROGRESS = {"AccountSid", "ApiVersion", "CallSid", "CallStatus", "From", "To", "Called", "Caller", "Direction"}
CALL_PROGRESS |= {"CallbackSource", "SequenceNumber", "Timestamp"}
"""What Twilio's docs list for a call-progress status callback (``CallDuration`` too, once the call is over)."""
CONFERENCE = {"AccountSid", "ConferenceSid", "FriendlyName", "StatusCallbackEvent", "SequenceNumber", "Timestamp"}
PARTICIPANT = {"CallSid", "Muted", "Hold", "Coaching", "EndConferenceOnExit", "StartConferenceOnEnter"}
"""What Twilio's docs list for a conference event, and what a participant's events add."""


def timestamp() -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime())


def amd_result(call_sid: str, answered_by: str = "machine_end_beep") -> dict[str, str]:
    """The asynchronous answering-machine result, with the fields Twilio's docs list for it."""
    return {"AccountSid": ACCOUNT, "CallSid": call_sid, "AnsweredBy": answered_by, "MachineDetectionDuration": "4210"}


def caller_left(call_sid: str, conference_sid: str, room: str) -> dict[str, str]:
    """A conference's participant-leave for the caller hanging up on hold: what would end a transfer."""
    return {
        "AccountSid": ACCOUNT,
        "ConferenceSid": conference_sid,
        "FriendlyName": room,
        "StatusCallbackEvent": "participant-leave",
        "SequenceNumber": "9",
        "Timestamp": timestamp(),
        "CallSid": call_sid,
        "ParticipantLabel": "caller",
        "Muted": "false",
        "Hold": "false",
        "Coaching": "false",
        "EndConferenceOnExit": "true",
        "StartConferenceOnEnter": "false",
        "ReasonParticipantLeft": "participant_hung_up",
        "ParticipantCallStatus": "completed",
    }


def call_over(call_sid: str) -> dict[str, str]:
    """A call-progress callback saying the caller's call is over, with Twilio's documented fields."""
    fields = dict.fromkeys(CALL_PROGRESS, "")
    fields |= {"AccountSid": ACCOUNT, "ApiVersion": "2010-04-01", "CallSid": call_sid, "CallStatus": "completed"}
    fields |= {"From": CALLER_NUMBER, "Caller": CALLER_NUMBER, "To": OUR_NUMBER, "Called": OUR_NUMBER}
    fields |= {"Direction": "inbound", "CallbackSource": "call-progress-events", "SequenceNumber": "3"}
    return fields | {"Timestamp": timestamp(), "CallDuration": "42"}


def signed(url: str, form: dict[str, str], token: str = TOKEN) -> dict[str, str]:
    return {"X-Twilio-Signature": RequestValidator(token).compute_signature(url, form)}


async def post(line: Line, url: str, form: dict[str, str], headers: dict[str, str]) -> int:
    """POST ``form`` to the app at public ``url``'s path and query, as Twilio would reach it; the status."""
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    async with httpx.AsyncClient(base_url=f"http://{line.twilio.app_base}") as client:
        return (await client.post(target, data=form, headers=headers)).status_code


async def test_the_answering_machine_result_reaches_the_agent_only_as_twilio_signs_it() -> None:
    script = [WaitForText("answered by a machine"), Say("leaving a message", 0.2, tone_hz=600), Hold()]
    async with warm_line([], caller=script) as line:
        call = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(lambda: line.callers and line.callers[0].started, 5)
        amd = f"{PUBLIC}/status/amd"
        result = amd_result(CALLER)
        forged = [
            ({}, result),  # unsigned
            (signed(f"{PUBLIC}/status/call", result), result),  # signed for another callback URL
            (signed(amd, amd_result(CALLER, "human")), result),  # signed over another verdict
            (signed(amd, result, token="not-our-token"), result),  # signed by someone else
        ]
        assert [await post(line, amd, form, headers) for headers, form in forged] == [403, 403, 403, 403]
        assert not any("machine" in text for text in line.callers[0].texts)
        assert await post(line, amd, result, signed(amd, result)) == 204
        await until(lambda: any("machine_end_beep" in text for text in line.callers[0].texts), 5)
        await until(lambda: 600 in tones(call), 5)
        await line.twilio.hang_up_person(call)


async def test_conference_and_call_progress_callbacks_as_twilio_sends_them_and_forgeries_change_nothing() -> None:
    async with warm_line(BRIEF_AND_WAIT) as line:
        caller = await line.twilio.incoming(CALLER, CALLER_NUMBER, OUR_NUMBER)
        await until(line.has_person, 10)
        person = line.person()
        await until(lambda: person.streams and BRIEF_TONE in tones(person), 10)
        room = ET.fromstring(line.twilio.updates(CALLER)[0]["Twiml"][0]).find("Dial/Conference")
        assert room is not None and room.text
        ours = room.get("statusCallback", "")
        [conference] = line.twilio.conferences.values()
        other = ours.split("?")[0] + "?transfer=someone-else"
        leave, over = caller_left(CALLER, conference.sid, room.text), call_over(CALLER)
        forged = [
            (ours, leave, {}),  # unsigned
            (ours, leave, signed(other, leave)),  # replayed from another transfer's URL
            (ours, leave, signed(ours, {**leave, "CallSid": "CA" + "0" * 32})),  # altered after signing
            (ours, leave, signed(ours, leave, token="not-our-token")),
            (f"{PUBLIC}/status/call", over, {}),
            (f"{PUBLIC}/status/call", over, signed(ours, over)),
        ]
        requests_before = len(line.twilio.requests)
        assert [await post(line, url, form, headers) for url, form, headers in forged] == [403] * len(forged)
        assert len(line.twilio.requests) == requests_before  # nobody was hung up or moved
        assert caller.hearing.startswith("hold:") and person.status == "in-progress"

        await person.stream.dtmf("1")  # the transfer goes on as if nothing had been posted
        await until(lambda: caller.hearing == "conference" and person.hearing == "conference", 10)
        await line.twilio.settle()
        assert line.metric("connected") == 1

        # Twilio's own callbacks (the fake posts them with Twilio's documented fields) were all accepted...
        posted = line.twilio.callbacks
        progress = [form for url, form, _ in posted if "/status/transfer" in url]
        events = [form for url, form, _ in posted if "/status/conference" in url]
        assert progress and all(CALL_PROGRESS <= set(form) for form in progress)
        assert events and all(CONFERENCE <= set(form) for form in events)
        assert all(PARTICIPANT <= set(form) for form in events if form["StatusCallbackEvent"].startswith("participant"))
        assert [form["SequenceNumber"] for form in events] == [str(n) for n in range(1, len(events) + 1)]
        assert {form["To"] for form in progress} == {PERSON_NUMBER}

        # ...and one of them again, word for word (Twilio may resend; a replay looks the same): nothing changes.
        url, form, _ = next(entry for entry in posted if entry[1].get("StatusCallbackEvent") == "participant-join")
        requests_before = len(line.twilio.requests)
        assert await post(line, url, form, signed(url, form)) == 204
        await line.twilio.settle()
        assert line.metric("connected") == 1 and len(line.twilio.requests) == requests_before
        assert caller.hearing == "conference" and person.hearing == "conference"

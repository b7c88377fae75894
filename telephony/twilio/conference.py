"""The Twilio side of a warm transfer: the TwiML that moves calls, and the REST request that dials the person.

A warm transfer touches two calls and one conference (see ``telephony.bridge.transfer`` for the steps):

- the caller's call is updated (``calls(sid).update(twiml=…)``) to :func:`hold_twiml`: a ``<Dial><Conference>``
  that does not start the conference (``startConferenceOnEnter="false"``), so Twilio plays ``waitUrl`` music
  to the caller instead of silence until someone who starts it joins;
- the person is dialled (``calls.create``, :func:`dial_person`) with :func:`~telephony.twilio.twiml.connect_twiml`
  pointing at our media stream, so the bot can brief them on a second stream;
- if they accept, their call is updated to :func:`join_twiml` (``startConferenceOnEnter="true"``): the hold
  music stops, caller and person talk, and the bot has left both calls;
- if not, the caller's call is updated back to a ``<Connect><Stream>`` (a fresh session with the bot).

Both conference legs carry ``endConferenceOnExit="true"``: when either party hangs up the conference ends and
the other's ``<Dial>`` completes; with nothing after it, that call ends too. Nobody is left alone in a room.
The caller's ``<Dial timeLimit>`` bounds the whole conference (hold included) even if this server dies mid-transfer.
"""

from __future__ import annotations

import secrets
from typing import Any

from twilio.rest import Client
from twilio.twiml.voice_response import Dial, VoiceResponse

from telephony.twilio.twiml import xml_safe

CONFERENCE_EVENTS = "start end join leave"
"""``statusCallbackEvent`` values we subscribe to (space-separated, as ``<Conference>`` takes them)."""
PERSON_CALL_EVENTS = ("initiated", "ringing", "answered", "completed")
"""``StatusCallbackEvent`` values for the person's call (each sent as its own form field)."""
CALLER_LABEL = "caller"
PERSON_LABEL = "person"
SORRY_WORDS = (
    "Sorry, we could not connect you to a colleague, and we cannot take your call back right now. "
    "Please call again in a few minutes. Goodbye."
)


def conference_name() -> str:
    """A fresh, unguessable room name. Twilio asks for no personal data in names: no numbers, no SIDs."""
    return f"voicebot-transfer-{secrets.token_hex(8)}"


def _conference(
    name: str,
    *,
    label: str,
    starts: bool,
    status_callback: str | None,
    wait_url: str | None = None,
    time_limit_s: int | None = None,
) -> str:
    response = VoiceResponse()
    dial = Dial(time_limit=time_limit_s) if time_limit_s else Dial()
    options: dict[str, Any] = {
        "start_conference_on_enter": starts,
        "end_conference_on_exit": True,
        "beep": False,
        "participant_label": label,
    }
    if wait_url:
        options.update(wait_url=wait_url, wait_method="GET")  # GET lets Twilio cache a static file
    if status_callback:
        options.update(
            status_callback=status_callback, status_callback_event=CONFERENCE_EVENTS, status_callback_method="POST"
        )
    dial.conference(xml_safe(name), **options)
    response.append(dial)
    return str(response)


def hold_twiml(name: str, wait_url: str, status_callback: str | None, time_limit_s: int) -> str:
    """The caller waits in conference ``name``, hearing ``wait_url``, until the person joins and starts it."""
    return _conference(
        name,
        label=CALLER_LABEL,
        starts=False,
        status_callback=status_callback,
        wait_url=wait_url,
        time_limit_s=time_limit_s,
    )


def join_twiml(name: str, status_callback: str | None) -> str:
    """The person joins conference ``name`` and starts it: the caller's hold music stops, they talk."""
    return _conference(name, label=PERSON_LABEL, starts=True, status_callback=status_callback)


def sorry_twiml(words: str = SORRY_WORDS) -> str:
    """Tell the caller the transfer could not be finished and end the call (a server going away)."""
    response = VoiceResponse()
    response.say(words)
    response.hangup()
    return str(response)


async def dial_person(
    client: Client, *, to: str, from_: str, twiml: str, status_callback: str | None, ring_timeout_s: float
) -> str:
    """Ring the person; Twilio runs ``twiml`` (our briefing stream) when they answer. Returns the call SID.

    ``Timeout`` is how long it rings before Twilio gives up with ``no-answer`` (it may add ~5 s).
    """
    options: dict[str, Any] = {"timeout": round(ring_timeout_s)}
    if status_callback:
        options.update(
            status_callback=status_callback,
            status_callback_event=list(PERSON_CALL_EVENTS),
            status_callback_method="POST",
        )
    call = await client.calls.create_async(to=to, from_=from_, twiml=twiml, **options)
    if not call.sid:
        raise RuntimeError("Twilio created the call but returned no Call SID")
    return str(call.sid)

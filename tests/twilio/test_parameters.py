"""The ``<Parameter>`` vocabulary has one home, and internal parameters never leave the app."""

from __future__ import annotations

import re
from pathlib import Path

from telephony.bridge.prewarm import WARM_PARAMETER
from telephony.bridge.session import DIAL_PARAMETER
from telephony.bridge.transfer import BRIEFING_PARAMETER, RETURN_PARAMETER
from telephony.twilio import parameters
from telephony.twilio.media_streams import parse_message
from telephony.twilio.security import CONSOLE_PARAMETER, PARAMETER_NAME

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"""["']voicebot[A-Z]\w*["']""")


def test_every_internal_parameter_name_is_written_once() -> None:
    home = ROOT / "telephony" / "twilio" / "parameters.py"
    elsewhere = [
        f"{path.relative_to(ROOT)}: {match.group()}"
        for package in ("telephony", "agent")
        for path in (ROOT / package).rglob("*.py")
        if path != home
        for match in NAME.finditer(path.read_text(encoding="utf-8"))
    ]
    assert elsewhere == [], "name the parameter from telephony.twilio.parameters instead"


def test_the_old_names_are_the_vocabulary() -> None:
    assert (PARAMETER_NAME, CONSOLE_PARAMETER, WARM_PARAMETER, DIAL_PARAMETER) == (
        parameters.TOKEN,
        parameters.CONSOLE,
        parameters.WARM,
        parameters.DIAL,
    )
    assert (BRIEFING_PARAMETER, RETURN_PARAMETER) == (parameters.BRIEFING, parameters.RETURN)


def test_the_agent_sees_the_callers_parameters_but_none_of_ours() -> None:
    start = parse_message(
        '{"event":"start","sequenceNumber":"1","streamSid":"MZ1","start":{"streamSid":"MZ1","callSid":"CA1",'
        '"accountSid":"AC1","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,'
        '"channels":1},"customParameters":{"voicebotToken":"secret","voicebotWarm":"w0","customer":"42"}}}'
    )
    assert start.call_info().parameters == {"customer": "42"}
    assert parameters.public_only({"voicebotDial": "d", "From": "+15550100"}) == {"From": "+15550100"}

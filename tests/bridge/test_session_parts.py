"""The call session as the sum of its parts: the names it had keep working, and no part grows back into a hub."""

from __future__ import annotations

import pytest
from strands.bidi import BidiAgent

from telephony.bridge.services import CallServices
from telephony.bridge.session import CallSession
from telephony.call_info import CallInfo

from ..conftest import TEST_SETTINGS
from ..fakes.model import ScriptedModel


def agent(call: CallInfo) -> BidiAgent:
    return BidiAgent(model=ScriptedModel([]))


def test_the_session_module_keeps_its_names() -> None:
    from telephony.bridge import session

    for name in [*session.__all__, "DIAL_PARAMETER", "AGENT_STOP_TIMEOUT_S"]:
        assert hasattr(session, name), name
    assert session.FRAME_SECONDS == 0.02
    assert session.DIAL_PARAMETER == "voicebotDial"


def test_continuity_keeps_the_names_that_moved_out_of_it() -> None:
    from telephony.bridge import continuity

    for name in ["CutAnswer", "UtteranceKeeper", "decoded_length", "words_heard"]:
        assert hasattr(continuity, name), name


def test_a_session_is_built_from_keywords_or_from_services() -> None:
    by_keywords = CallSession(object(), TEST_SETTINGS, agent, tokens=None, observers=())  # type: ignore[arg-type]
    by_services = CallSession(object(), services=CallServices(TEST_SETTINGS, agent))  # type: ignore[arg-type]
    for session in (by_keywords, by_services):
        assert not session.responding and not session.ended and session.call is None and session.agent is None
    with pytest.raises(TypeError):
        CallSession(object())  # type: ignore[arg-type]

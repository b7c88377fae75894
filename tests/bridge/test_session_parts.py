"""The call session as the sum of its parts: the names it had keep working, and no part grows back into a hub."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from strands.bidi import BidiAgent

from telephony.bridge.services import CallServices
from telephony.bridge.session import CallSession
from telephony.call_info import CallInfo

from ..conftest import TEST_SETTINGS
from ..fakes.model import ScriptedModel

BRIDGE = Path(__file__).resolve().parents[2] / "telephony" / "bridge"
PARTS = [
    "agent_link.py",
    "answer.py",
    "continuity.py",
    "cut_answer.py",
    "ending.py",
    "hand_offs.py",
    "services.py",
    "session.py",
    "stats.py",
    "time_limits.py",
    "twilio_stream.py",
    "utterance_keeper.py",
]
MAX_LINES = 450
MAX_ATTRIBUTES = 20


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


@pytest.mark.parametrize("module", PARTS)
def test_no_part_of_the_call_grows_into_a_hub(module: str) -> None:
    source = (BRIDGE / module).read_text()
    assert source.count("\n") <= MAX_LINES
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            assert len(instance_attributes(node)) <= MAX_ATTRIBUTES, node.name


def instance_attributes(cls: ast.ClassDef) -> set[str]:
    names = {
        item.target.id for item in cls.body if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    }
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            for part in ast.walk(target) if target is not None else ():
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "self":
                    names.add(part.attr)
    return names

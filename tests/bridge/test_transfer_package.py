"""The warm-transfer package keeps the names ``telephony.bridge.transfer`` always offered, and its shape:
small modules, no class reading another's private members."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import telephony.bridge.transfer as transfer_package
from agent.briefing import BRIEFING_GREETING as AGENT_GREETING

PACKAGE = Path(transfer_package.__file__).parent


def test_the_old_module_path_still_offers_every_name() -> None:
    from telephony.bridge.transfer import (  # noqa: F401 - importing them is the test
        BRIEFING_GREETING,
        BRIEFING_PARAMETER,
        DIAL_PARAMETER,
        HISTORY_CHARS,
        HISTORY_MESSAGES,
        LINGER_S,
        LINKED_PARAMETER,
        MAX_DIAL_TIME_LIMIT_S,
        PERSON_OUTCOMES,
        RETURN_PARAMETER,
        RING_GRACE_S,
        SETTLED,
        TRANSCRIPT_LINES,
        WAITING,
        BriefingLegControl,
        BriefingRole,
        HandOff,
        HandOffAction,
        Leg,
        ReturningRole,
        State,
        StreamRole,
        WarmTransfer,
        WarmTransfers,
        resumable_history,
    )

    assert TRANSCRIPT_LINES == 200
    assert (BRIEFING_PARAMETER, RETURN_PARAMETER) == ("voicebotBriefing", "voicebotReturn")
    assert (DIAL_PARAMETER, LINKED_PARAMETER) == ("voicebotDial", "transferOf")
    assert State.CONNECTED in SETTLED and State.BRIEFING in WAITING
    assert HandOff("done").hang_up is False
    assert set(transfer_package.__all__) <= set(dir(transfer_package))


def test_the_briefing_greeting_has_one_owner() -> None:
    from telephony.bridge.transfer import BRIEFING_GREETING, BriefingRole

    assert BRIEFING_GREETING is AGENT_GREETING
    assert BriefingRole.greeting == AGENT_GREETING


def test_a_transfer_record_stays_narrow() -> None:
    from telephony.bridge.transfer import WarmTransfer

    assert len(dataclasses.fields(WarmTransfer)) <= 20


def test_every_module_is_small() -> None:
    for path in PACKAGE.glob("*.py"):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= 450, f"{path.name} has {lines} lines"


def test_no_class_reads_another_objects_private_members() -> None:
    """``self._x`` and ``cls._x`` only: the roles reach the desk through its public methods."""
    reaching = []
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            reaching.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    assert reaching == []

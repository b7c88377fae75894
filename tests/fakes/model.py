"""Moved to :mod:`telephony.simulation.fakes.scripted_model` (importable by benchmarks); re-exported for the tests."""

from telephony.simulation.fakes.scripted_model import (
    BargeIn,
    CallTool,
    CloseSilently,
    Fail,
    Hold,
    Say,
    SayMore,
    ScriptedModel,
    Sleep,
    Stall,
    Step,
    UserSaid,
    WaitForAudio,
    WaitForText,
    tone,
)

__all__ = [
    "BargeIn",
    "CallTool",
    "CloseSilently",
    "Fail",
    "Hold",
    "Say",
    "SayMore",
    "ScriptedModel",
    "Sleep",
    "Stall",
    "Step",
    "UserSaid",
    "WaitForAudio",
    "WaitForText",
    "tone",
]

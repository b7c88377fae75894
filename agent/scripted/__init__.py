"""A scripted brain: the model's part of a call, written down, for testing an agent like a phone call.

``voicebot test`` puts a :class:`ScriptedBrainModel` in place of the model an agent factory built when a
scenario has a ``brain:`` section, so the agent's own tools, prompt facts and hang-up run for real while
what the model decides is fixed. :func:`stand_ins_active` tells an agent factory that such a run is under
way, so it can give its other models (a sub-agent's text model) an offline stand-in such as
:class:`ExtractiveTextModel`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .brain import BrainScript, BrainTurn, ScriptedBrain, ToolStep, prompt_fields
from .model import MODEL_ID, ScriptedBrainModel
from .text_model import ExtractiveTextModel

__all__ = [
    "MODEL_ID",
    "BrainScript",
    "BrainTurn",
    "ExtractiveTextModel",
    "ScriptedBrain",
    "ScriptedBrainModel",
    "ToolStep",
    "prompt_fields",
    "stand_ins",
    "stand_ins_active",
]

_active = 0


def stand_ins_active() -> bool:
    """True while a scripted-brain run is under way in this process (sub-agents should not reach a cloud model)."""
    return _active > 0


@contextmanager
def stand_ins() -> Iterator[None]:
    """Mark a scripted-brain run for :func:`stand_ins_active` (nestable; the runner and the pytest fixture use it)."""
    global _active
    _active += 1
    try:
        yield
    finally:
        _active -= 1

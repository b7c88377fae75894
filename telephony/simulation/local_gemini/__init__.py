"""A local Gemini Live: strands' real ``GoogleGeminiLiveModel`` (google-genai) talks to it over WebSocket + TLS.

It checks every message the client sends (``protocol``), answers through local Nova's brains (``turns``:
caller speech by level, barge-in while the reply still plays at the caller), hands out resumption handles, and
reproduces Gemini's connection limit (``goAway``) and refusals on a compressed clock (``faults``).
"""

from telephony.simulation.local_nova.replies import (
    Brain,
    BrainsByPrompt,
    CallerTurn,
    Pcm,
    Reply,
    ScriptedBrain,
    Tone,
    ToolRequest,
)

from .faults import Fault, TimeLimits
from .server import LocalGemini
from .session import SessionRecord
from .turns import OUTPUT_RATE, Pacing

__all__ = [
    "OUTPUT_RATE",
    "Brain",
    "BrainsByPrompt",
    "CallerTurn",
    "Fault",
    "LocalGemini",
    "Pacing",
    "Pcm",
    "Reply",
    "ScriptedBrain",
    "SessionRecord",
    "TimeLimits",
    "Tone",
    "ToolRequest",
]

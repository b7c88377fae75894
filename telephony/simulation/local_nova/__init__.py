"""A local Nova Sonic: the real ``BedrockNovaSonicModel`` talks to it over HTTP/2 + TLS on 127.0.0.1.

It checks every event the client sends (``protocol``), answers through a pluggable ``Brain`` (``replies``,
``turns``; ``offline_replies`` really listens and speaks), and reproduces Nova's limits and failures on a
compressed clock (``faults``).
"""

from .faults import Fault, SetupDelay, TimeLimits
from .protocol import Limits
from .replies import Brain, BrainsByPrompt, CallerTurn, Pcm, Reply, ScriptedBrain, Tone, ToolRequest
from .server import LocalNova
from .session import SessionRecord
from .turns import INTERRUPTED_MARKER, Pacing

__all__ = [
    "INTERRUPTED_MARKER",
    "Brain",
    "BrainsByPrompt",
    "CallerTurn",
    "Fault",
    "Limits",
    "LocalNova",
    "Pacing",
    "Pcm",
    "Reply",
    "ScriptedBrain",
    "SessionRecord",
    "SetupDelay",
    "TimeLimits",
    "Tone",
    "ToolRequest",
]

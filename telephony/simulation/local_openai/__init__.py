"""A local OpenAI Realtime: strands' real ``OpenAIRealtimeModel`` talks to it over a WebSocket on 127.0.0.1.

It checks every event the client sends (``protocol``), answers through local Nova's brains (``responses``,
generating audio faster than real time as the service does), and reproduces the service's session limit and
``error`` events on a compressed clock (``faults``). Run it alone with ``python -m telephony.simulation.local_openai``.
"""

from .faults import Fault, SessionLimits
from .server import API_KEY, LocalOpenAI
from .session import SessionRecord

__all__ = ["API_KEY", "Fault", "LocalOpenAI", "SessionLimits", "SessionRecord"]

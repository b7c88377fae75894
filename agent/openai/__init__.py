"""The OpenAI Realtime adapter: strands' ``OpenAIRealtimeModel`` as this project runs it, one concern per module.

- :mod:`.model`: :class:`OpenAIRealtime`, the model the agents build (``VOICEBOT_MODEL=openai``);
- :mod:`.endpoint`: where the Realtime API is (``OPENAI_BASE_URL``) and which CAs are trusted (``SSL_CERT_FILE``);
- :mod:`.audio_items`: which assistant item each answer's audio is, for trimming it to what the caller heard;
- :mod:`.errors`: the service's ``error`` events that end a session, and the operator's next step.
"""

from __future__ import annotations

from .endpoint import DEFAULT_REALTIME_URL, RealtimeEndpoint
from .errors import OpenAIRealtimeError
from .model import OpenAIRealtime

__all__ = ["DEFAULT_REALTIME_URL", "OpenAIRealtime", "OpenAIRealtimeError", "RealtimeEndpoint"]

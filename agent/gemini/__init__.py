"""The Gemini Live adapter: strands' ``GoogleGeminiLiveModel`` as this project runs it, one concern per module.

- :mod:`.model`: :class:`GeminiLiveModel`, the model the agents build (``VOICEBOT_MODEL=gemini``);
- :mod:`.endpoint`: where the Live API is (``GOOGLE_GEMINI_BASE_URL``, ``SSL_CERT_FILE``, read by google-genai
  itself), as logged at each start;
- :mod:`.errors`: the operator's next step on a Live API failure.
"""

from __future__ import annotations

from .endpoint import GeminiEndpoint
from .errors import GeminiTarget, add_operator_hint, operator_hint
from .model import GeminiLiveModel

__all__ = ["GeminiEndpoint", "GeminiLiveModel", "GeminiTarget", "add_operator_hint", "operator_hint"]

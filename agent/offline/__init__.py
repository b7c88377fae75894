"""The offline voice model: pocketsphinx hears, a small script thinks, espeak-ng speaks. No account, no network.

``VOICEBOT_MODEL=local`` puts it behind the default agent; ``voicebot serve --agent
agent.offline:create_agent`` also gives it the ``current_time`` tool.
"""

from .clock import current_time, spoken_time
from .factory import create_agent, offline_model
from .matcher import Heard, Match, PhraseMatcher
from .model import OfflineModel
from .recognizer import PhraseRecognizer
from .script import FRONT_DESK, Intent, Script, ToolCall
from .synthesizer import BOT_VOICE, CALLER_VOICE, Synthesizer, Voice, VoiceError

__all__ = [
    "BOT_VOICE",
    "CALLER_VOICE",
    "FRONT_DESK",
    "Heard",
    "Intent",
    "Match",
    "OfflineModel",
    "PhraseMatcher",
    "PhraseRecognizer",
    "Script",
    "Synthesizer",
    "ToolCall",
    "Voice",
    "VoiceError",
    "create_agent",
    "current_time",
    "offline_model",
    "spoken_time",
]

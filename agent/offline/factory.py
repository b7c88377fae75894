"""The offline model and agent from settings: ``VOICEBOT_MODEL=local``, or ``--agent agent.offline:create_agent``."""

from __future__ import annotations

from strands.bidi import BidiAgent

from telephony.call_info import CallInfo
from telephony.config import AgentSettings, ConfigError, Settings, agent_settings

from ..tools import end_conversation
from .clock import current_time
from .model import OfflineModel
from .synthesizer import BOT_VOICE, Voice, VoiceError

__all__ = ["create_agent", "offline_model"]

OFFLINE_PROMPT = "Offline demo model: replies come from a fixed script, not from this prompt."


def offline_model(settings: AgentSettings | Settings) -> OfflineModel:
    """The offline model in the configured voice (VOICEBOT_VOICE, an espeak-ng voice name)."""
    voice = Voice(settings.voice, BOT_VOICE.words_per_minute, BOT_VOICE.pitch) if settings.voice else BOT_VOICE
    try:
        return OfflineModel(voice=voice)
    except VoiceError as error:
        raise ConfigError(
            f"VOICEBOT_VOICE={settings.voice!r} is not an espeak-ng voice: unset it for the offline model's "
            f"default or use one such as 'en-us', 'en-us+m3' or 'en-us+f3' ({error})"
        ) from error


def create_agent(call: CallInfo, settings: AgentSettings | Settings | None = None) -> BidiAgent:
    """A phone agent on the offline model, whatever VOICEBOT_MODEL says, with its two tools."""
    settings = agent_settings(settings)
    return BidiAgent(
        model=offline_model(settings),
        tools=[end_conversation, current_time],
        system_prompt=OFFLINE_PROMPT,
        name="voicebot-offline",
    )

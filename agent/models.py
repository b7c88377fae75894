"""Choosing the speech-to-speech model. Nova Sonic by default; others when their extras are installed.

The bridge transcodes to whatever rates a model declares (``get_audio_config()``), so switching
model is configuration only. Every model here replaces its connection at a quiet moment before the limit
it declares (``agent.quiet_switch``).
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Any

from strands.bidi.models import BidiModel

from telephony.config import AgentSettings, Settings, agent_settings

DEFAULT_MODEL_IDS = {
    "nova": "amazon.nova-2-5-sonic",
    "openai": "gpt-realtime",
    "gemini": "gemini-live-2.5-flash-preview",
}
NOVA_SAMPLE_RATE = 16000
"""Nova Sonic accepts 8, 16 or 24 kHz; 16 kHz in matches telephone bandwidth with headroom. Its output
rate is ``VOICEBOT_NOVA_OUTPUT_RATE`` (16 kHz by default; 24 kHz costs the bridge a 3:1 resampler instead
of 2:1 and carries nothing the 8 kHz phone line keeps)."""


CLIENT_MODULES = {"nova": "agent.nova", "openai": "agent.openai", "gemini": "agent.gemini", "local": "agent.offline"}
"""Where each provider's client code lives: imported lazily, so a model's extra is needed only when it is used."""


def load_model_code(settings: AgentSettings | Settings) -> None:
    """Import the configured model's client now, at start-up, rather than in the first call.

    Importing a client takes seconds (google-genai about 2.8 s here); on the first call it would run on the
    server's event loop and hold up every call on it. A missing extra is left for the first call to report."""
    module = CLIENT_MODULES.get(agent_settings(settings).model)
    if module is not None:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


def create_model(settings: AgentSettings | Settings) -> BidiModel:
    """Build the configured model; a missing extra gives an install hint, not a traceback.

    Reads only what ``AgentSettings`` holds (the server's ``Settings`` are cut down to that first).
    """
    settings = agent_settings(settings)
    if settings.model == "local":
        return local_model(settings)
    model_id = settings.model_id or DEFAULT_MODEL_IDS[settings.model]
    if settings.model == "nova":
        from .nova import NovaSonicModel as BedrockNovaSonicModel

        audio: Any = {"input": {"sample_rate": NOVA_SAMPLE_RATE}, "output": {"sample_rate": settings.nova_output_rate}}
        voice = settings.voice or "matthew"
        return BedrockNovaSonicModel(
            model_id=model_id, region=settings.aws_region, voice=voice, audio=audio, crt_threads=settings.crt_threads
        )
    try:
        if settings.model == "openai":
            from .openai import OpenAIRealtime

            return OpenAIRealtime(
                model_id=model_id, transcription_model_id="gpt-4o-transcribe", voice=settings.voice or "alloy"
            )
        from .gemini import GeminiLiveModel

        return GeminiLiveModel(model_id=model_id, voice=settings.voice)
    except ImportError as error:
        raise RuntimeError(
            f"VOICEBOT_MODEL={settings.model} needs its extra: install with `uv sync --extra {settings.model}`"
        ) from error


def local_model(settings: AgentSettings) -> BidiModel:
    """The offline model (pocketsphinx + espeak-ng, no account): for development and demos."""
    from .offline import offline_model

    return offline_model(settings)


def describe_model(settings: AgentSettings | Settings) -> str:
    """What calls will talk to, for the start-up log: model, model id, voice, and region (or "offline")."""
    settings = agent_settings(settings)
    if settings.model == "local":
        from .offline.synthesizer import BOT_VOICE

        voice = settings.voice or BOT_VOICE.name
        return f"model=local (offline: pocketsphinx + espeak-ng) voice={voice} region=offline"
    model_id = settings.model_id or DEFAULT_MODEL_IDS[settings.model]
    if settings.model == "nova":
        return f"model=nova model_id={model_id} voice={settings.voice or 'matthew'} region={settings.aws_region}"
    if settings.model == "openai":
        from .openai.endpoint import RealtimeEndpoint

        endpoint = RealtimeEndpoint.from_env().describe()
        return f"model=openai model_id={model_id} voice={settings.voice or 'alloy'} endpoint={endpoint}"
    voice = settings.voice or "(the model's default)"
    return f"model={settings.model} model_id={model_id} voice={voice} region=(chosen by {settings.model})"

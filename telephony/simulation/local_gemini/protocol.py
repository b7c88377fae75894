"""What the Live API accepts from a client, checked strictly: the ``setup`` and every message after it.

The service parses proto JSON, which takes a field by its lowerCamel name or its proto (snake_case) name, and
google-genai sends both (``realtime_input``, ``tool_response``, ``client_content`` at the top, lowerCamel inside):
keys are normalised to lowerCamel before checking, except inside user data (a function's ``args``/``response``,
a schema's ``properties``). Anything else unknown, misplaced or malformed is a violation: the test that sent it
fails, and the connection is closed with 1007 and a reason in the service's words.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AudioChunk", "ProtocolError", "SetupInfo", "check_message", "check_setup", "normalise", "to_camel"]

SETUP_FIELDS = {
    "model", "generationConfig", "systemInstruction", "tools", "realtimeInputConfig", "sessionResumption",
    "contextWindowCompression", "inputAudioTranscription", "outputAudioTranscription", "proactivity",
    "historyConfig", "explicitVadSignal",
}  # fmt: skip
GENERATION_FIELDS = {
    "responseModalities", "speechConfig", "temperature", "topP", "topK", "maxOutputTokens", "candidateCount",
    "presencePenalty", "frequencyPenalty", "mediaResolution", "seed", "thinkingConfig", "enableAffectiveDialog",
}  # fmt: skip
REALTIME_FIELDS = {"audio", "video", "text", "activityStart", "activityEnd", "audioStreamEnd", "mediaChunks"}
INPUT_RATE = re.compile(r"^audio/pcm(;rate=(\d+))?$")
_OPAQUE = {"args", "response", "properties", "parameters", "parametersJsonSchema", "responseJsonSchema"}


class ProtocolError(Exception):
    """A message the service would refuse; ``str`` is the close reason."""


@dataclass(frozen=True)
class AudioChunk:
    """Caller audio from one ``realtimeInput``: PCM16 at ``sample_rate``, and how its base64 was written."""

    pcm: bytes
    sample_rate: int
    urlsafe: bool


@dataclass
class SetupInfo:
    """What a ``setup`` asked for."""

    model: str
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    voice: str | None = None
    system_prompt: str = ""
    resume_handle: str | None = None
    resumption: bool = False
    history_in_client_content: bool = False
    input_transcription: bool = False
    output_transcription: bool = False


def to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def normalise(value: Any, snake_keys: set[str] | None = None) -> Any:
    """``value`` with every key in lowerCamel (user data left alone); snake_case keys seen go to ``snake_keys``."""
    if isinstance(value, list):
        return [normalise(item, snake_keys) for item in value]
    if not isinstance(value, dict):
        return value
    result: dict[str, Any] = {}
    for key, item in value.items():
        camel = to_camel(key) if isinstance(key, str) else key
        if camel != key and snake_keys is not None:
            snake_keys.add(key)
        result[camel] = item if camel in _OPAQUE else normalise(item, snake_keys)
    return result


def _unknown(found: dict[str, Any], allowed: set[str], where: str) -> None:
    for name in found:
        if name not in allowed:
            raise ProtocolError(
                f"Invalid JSON payload received. Unknown name \"{name}\" at '{where}': Cannot find field."
            )


def check_setup(message: Any) -> SetupInfo:
    """The first message: exactly ``{"setup": {...}}`` with an audio-only, well-formed configuration."""
    if not isinstance(message, dict) or list(message) != ["setup"] or not isinstance(message["setup"], dict):
        raise ProtocolError("the first message must be exactly one setup")
    setup = message["setup"]
    _unknown(setup, SETUP_FIELDS, "setup")
    model = setup.get("model")
    if not isinstance(model, str) or not model.startswith("models/") or len(model) <= len("models/"):
        raise ProtocolError(f"setup.model must be models/<id>, got {model!r}")
    info = SetupInfo(model=model.removeprefix("models/"))
    generation = setup.get("generationConfig", {})
    _unknown(generation, GENERATION_FIELDS, "setup.generation_config")
    if generation.get("responseModalities") != ["AUDIO"]:
        raise ProtocolError(f"responseModalities must be [AUDIO], got {generation.get('responseModalities')!r}")
    speech = generation.get("speechConfig")
    if speech is not None:
        voice = speech.get("voiceConfig", {}).get("prebuiltVoiceConfig", {}).get("voiceName")
        if not isinstance(voice, str) or not voice:
            raise ProtocolError(f"speechConfig needs voiceConfig.prebuiltVoiceConfig.voiceName, got {speech!r}")
        info.voice = voice
    info.system_prompt = _text_of(setup.get("systemInstruction"), "systemInstruction")
    info.tools = _tools(setup.get("tools", []))
    resumption = setup.get("sessionResumption")
    if resumption is not None:
        _unknown(resumption, {"handle", "transparent"}, "setup.session_resumption")
        info.resumption = True
        handle = resumption.get("handle")
        if handle is not None and (not isinstance(handle, str) or not handle):
            raise ProtocolError(f"sessionResumption.handle must be a non-empty string, got {handle!r}")
        info.resume_handle = handle
    for name in ("inputAudioTranscription", "outputAudioTranscription"):
        if name in setup and setup[name] != {}:
            raise ProtocolError(f"{name} takes no fields here, got {setup[name]!r}")
    info.input_transcription = "inputAudioTranscription" in setup
    info.output_transcription = "outputAudioTranscription" in setup
    history = setup.get("historyConfig", {})
    _unknown(history, {"initialHistoryInClientContent"}, "setup.history_config")
    info.history_in_client_content = history.get("initialHistoryInClientContent") is True
    return info


def _text_of(content: Any, where: str) -> str:
    if content is None:
        return ""
    if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
        raise ProtocolError(f"{where} must be a Content with parts, got {content!r}")
    texts = [part.get("text") for part in content["parts"] if isinstance(part, dict)]
    strings = [text for text in texts if isinstance(text, str)]
    if len(strings) != len(content["parts"]):
        raise ProtocolError(f"{where} parts must be text")
    return "".join(strings)


def _tools(tools: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(tools, list):
        raise ProtocolError("setup.tools must be a list")
    declared: dict[str, dict[str, Any]] = {}
    for tool in tools:
        _unknown(tool, {"functionDeclarations", "googleSearch", "codeExecution"}, "setup.tools[0]")
        for declaration in tool.get("functionDeclarations", []):
            name = declaration.get("name")
            if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}", name):
                raise ProtocolError(f"function declaration name {name!r} is not valid")
            if name in declared:
                raise ProtocolError(f"duplicate function declaration {name!r}")
            if not isinstance(declaration.get("description", ""), str):
                raise ProtocolError(f"function {name}: description must be a string")
            parameters = declaration.get("parameters")
            if parameters is not None and not isinstance(parameters, dict):
                raise ProtocolError(f"function {name}: parameters must be a schema object")
            declared[name] = declaration
    return declared


def check_message(message: Any) -> tuple[str, dict[str, Any]]:
    """One message after the setup: its kind (``realtimeInput``, ``clientContent``, ``toolResponse``) and body."""
    if not isinstance(message, dict) or len(message) != 1:
        raise ProtocolError(f"a client message must hold exactly one of its kinds, got {sorted(message or {})!r}")
    [(kind, body)] = message.items()
    if kind == "setup":
        raise ProtocolError("setup may only be sent once, first")
    if kind not in ("realtimeInput", "clientContent", "toolResponse") or not isinstance(body, dict):
        raise ProtocolError(f'Invalid JSON payload received. Unknown name "{kind}": Cannot find field.')
    if kind == "realtimeInput":
        _unknown(body, REALTIME_FIELDS, "realtime_input")
        if len(body) != 1:
            raise ProtocolError(f"realtimeInput must carry exactly one input, got {sorted(body)!r}")
    if kind == "clientContent":
        _unknown(body, {"turns", "turnComplete"}, "client_content")
        for turn in body.get("turns", []):
            if turn.get("role") not in ("user", "model") or not isinstance(turn.get("parts"), list):
                raise ProtocolError(f"clientContent turn needs a role (user/model) and parts, got {turn!r}")
    if kind == "toolResponse":
        _unknown(body, {"functionResponses"}, "tool_response")
        responses = body.get("functionResponses")
        if not isinstance(responses, list) or not responses:
            raise ProtocolError("toolResponse needs functionResponses")
        for response in responses:
            _unknown(response, {"id", "name", "response", "willContinue", "scheduling", "parts"}, "function_response")
            if not isinstance(response.get("id"), str) or not isinstance(response.get("name"), str):
                raise ProtocolError(f"a function response needs its call's id and name, got {response!r}")
            if not isinstance(response.get("response"), dict):
                raise ProtocolError("a function response's response must be an object")
    return kind, body


def audio_of(audio: Any) -> AudioChunk:
    """A ``realtimeInput.audio`` blob: PCM16 mono, its rate from the MIME type, base64 standard or URL-safe."""
    if not isinstance(audio, dict):
        raise ProtocolError("realtimeInput.audio must be a Blob")
    _unknown(audio, {"data", "mimeType"}, "realtime_input.audio")
    match = INPUT_RATE.match(str(audio.get("mimeType", "")))
    if match is None:
        raise ProtocolError(f"unsupported audio MIME type {audio.get('mimeType')!r} (audio/pcm;rate=N)")
    data = audio.get("data")
    if not isinstance(data, str) or not data:
        raise ProtocolError("realtimeInput.audio.data must be non-empty base64")
    urlsafe = "-" in data or "_" in data
    try:
        pcm = base64.b64decode(data, altchars=b"-_" if urlsafe else None, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ProtocolError(f"realtimeInput.audio.data is not base64: {error}") from error
    if len(pcm) % 2:
        raise ProtocolError("realtimeInput.audio holds an odd number of bytes (not PCM16)")
    return AudioChunk(pcm, int(match.group(2) or 16000), urlsafe)

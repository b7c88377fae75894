"""What a client may send the Realtime API, checked strictly: each breach is a violation the test fails on.

The checks follow OpenAI's GA Realtime protocol as a client must speak it to a telephone-grade session:
``session.update`` first, of ``type: realtime``, PCM16 at 24 kHz both ways, server-side VAD that creates and
interrupts responses, well-formed function tools; then audio appends, conversation items, response requests and
truncations that refer to what exists. A breach is answered with an ``error`` event (as the service does) and
recorded.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

__all__ = [
    "AUDIO_FORMAT",
    "ProtocolError",
    "check_item",
    "check_session",
    "decode_audio",
]

AUDIO_FORMAT = {"type": "audio/pcm", "rate": 24000}
MAX_APPEND_BYTES = 15 * 1024 * 1024
MAX_ID_CHARS = 32
SESSION_KEYS = {
    "type",
    "model",
    "instructions",
    "output_modalities",
    "audio",
    "tools",
    "tool_choice",
    "max_output_tokens",
    "tracing",
    "truncation",
    "prompt",
    "include",
}
INPUT_KEYS = {"format", "turn_detection", "transcription", "noise_reduction"}
OUTPUT_KEYS = {"format", "voice", "speed"}
VAD_KEYS = {
    "type",
    "threshold",
    "prefix_padding_ms",
    "silence_duration_ms",
    "create_response",
    "interrupt_response",
    "idle_timeout_ms",
}
CONTENT_TYPES = {
    "user": {"input_text", "input_audio", "input_image"},
    "system": {"input_text"},
    "assistant": {"output_text", "output_audio"},
}


class ProtocolError(ValueError):
    """A client event the service would refuse; ``param`` names the offending field, as OpenAI's errors do."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def _require(condition: bool, message: str, param: str | None = None) -> None:
    if not condition:
        raise ProtocolError(message, param)


def check_session(session: Any) -> None:
    """A ``session.update``'s session: a realtime voice session this bridge can carry."""
    _require(isinstance(session, dict), "session must be an object", "session")
    unknown = set(session) - SESSION_KEYS
    _require(not unknown, f"unknown session fields: {sorted(unknown)}", "session")
    _require(session.get("type") == "realtime", "session.type must be 'realtime'", "session.type")
    modalities = session.get("output_modalities", ["audio"])
    _require(modalities in (["audio"], ["text"]), "output_modalities must be ['audio'] or ['text']")
    audio = session.get("audio")
    _require(isinstance(audio, dict), "session.audio is required", "session.audio")
    audio_in, audio_out = audio.get("input") or {}, audio.get("output") or {}
    _require(not set(audio_in) - INPUT_KEYS, f"unknown audio.input fields: {sorted(set(audio_in) - INPUT_KEYS)}")
    _require(not set(audio_out) - OUTPUT_KEYS, f"unknown audio.output fields: {sorted(set(audio_out) - OUTPUT_KEYS)}")
    _require(audio_in.get("format") == AUDIO_FORMAT, "audio.input.format must be PCM16 at 24 kHz")
    _require(audio_out.get("format") == AUDIO_FORMAT, "audio.output.format must be PCM16 at 24 kHz")
    _require(isinstance(audio_out.get("voice", "alloy"), str), "audio.output.voice must be a string")
    _check_vad(audio_in.get("turn_detection"))
    transcription = audio_in.get("transcription")
    if transcription is not None:
        _require(
            isinstance(transcription, dict) and isinstance(transcription.get("model"), str),
            "audio.input.transcription needs a model",
        )
    instructions = session.get("instructions", "")
    _require(isinstance(instructions, str), "instructions must be a string", "session.instructions")
    tools = session.get("tools", [])
    _require(isinstance(tools, list), "tools must be a list", "session.tools")
    names = [_check_tool(tool) for tool in tools]
    _require(len(names) == len(set(names)), "tool names must be unique", "session.tools")


def _check_vad(vad: Any) -> None:
    _require(isinstance(vad, dict), "audio.input.turn_detection must be set (a telephone call needs VAD)")
    _require(vad.get("type") == "server_vad", "turn_detection.type must be 'server_vad'")
    _require(not set(vad) - VAD_KEYS, f"unknown turn_detection fields: {sorted(set(vad) - VAD_KEYS)}")
    _require(
        vad.get("create_response", True) and vad.get("interrupt_response", True),
        "turn_detection must create and interrupt responses",
    )
    threshold = vad.get("threshold", 0.5)
    _require(isinstance(threshold, int | float) and 0.0 <= threshold <= 1.0, "turn_detection.threshold in [0, 1]")


def _check_tool(tool: Any) -> str:
    _require(isinstance(tool, dict) and tool.get("type") == "function", "each tool must be a function")
    name = tool.get("name")
    _require(isinstance(name, str) and 0 < len(name) <= 64, "a tool needs a name of 1-64 characters")
    _require(set(tool) <= {"type", "name", "description", "parameters"}, f"unknown fields in tool {name}")
    parameters = tool.get("parameters", {"type": "object"})
    _require(
        isinstance(parameters, dict) and parameters.get("type") == "object",
        f"tool {name}: parameters must be a JSON schema object",
    )
    return str(name)


def decode_audio(audio: Any) -> bytes:
    """An ``input_audio_buffer.append``'s audio: base64 PCM16, whole samples."""
    _require(isinstance(audio, str) and audio != "", "audio must be a non-empty base64 string", "audio")
    try:
        pcm = base64.b64decode(audio, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ProtocolError(f"audio is not valid base64: {error}", "audio") from error
    _require(len(pcm) % 2 == 0, "audio must be whole 16-bit samples", "audio")
    _require(len(pcm) <= MAX_APPEND_BYTES, "audio append over 15 MiB", "audio")
    return pcm


def check_item(item: Any, known_ids: set[str], known_calls: set[str]) -> None:
    """A ``conversation.item.create``'s item: a message, a function call or a function call's output."""
    _require(isinstance(item, dict), "item must be an object", "item")
    item_id = item.get("id")
    if item_id is not None:
        _require(isinstance(item_id, str) and 0 < len(item_id) <= MAX_ID_CHARS, "item.id: 1-32 characters", "item.id")
        _require(item_id not in known_ids, f"item {item_id} already exists", "item.id")
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        _require(role in CONTENT_TYPES, f"message role {role!r} is not user, assistant or system", "item.role")
        content = item.get("content")
        _require(isinstance(content, list) and content != [], "a message needs content", "item.content")
        for part in content:
            _require(
                isinstance(part, dict) and part.get("type") in CONTENT_TYPES[role],
                f"{role} content cannot be {part.get('type') if isinstance(part, dict) else part!r}",
            )
            if part["type"] in ("input_text", "output_text"):
                _require(isinstance(part.get("text"), str), "text content needs text", "item.content")
    elif kind == "function_call":
        _require(isinstance(item.get("name"), str), "a function_call needs a name", "item.name")
        _check_call_id(item.get("call_id"))
        _require(isinstance(item.get("arguments"), str), "function_call arguments must be a JSON string")
    elif kind == "function_call_output":
        call_id = item.get("call_id")
        _check_call_id(call_id)
        _require(call_id in known_calls, f"no function_call with call_id {call_id}", "item.call_id")
        _require(isinstance(item.get("output"), str), "function_call_output.output must be a string", "item.output")
    else:
        raise ProtocolError(f"unknown item type {kind!r}", "item.type")


def _check_call_id(call_id: Any) -> None:
    _require(isinstance(call_id, str) and 0 < len(call_id) <= MAX_ID_CHARS, "call_id: 1-32 characters", "call_id")

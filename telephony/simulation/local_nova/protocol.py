"""Strict checks on the event sequence a client sends to Nova Sonic.

Real Nova answers many mistakes with a terse ``validationException`` (or silence); the local Nova
records each one with the index and name of the event that broke the rule, so a test fails on the
exact event that caused it. Nothing is accepted silently: an unknown event, a field of the wrong
type, audio outside an open AUDIO content, a tool result for a tool use never issued.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from .framing import NovaEvent

__all__ = ["SAMPLE_RATES", "ContentInfo", "Limits", "ProtocolChecker"]

SAMPLE_RATES = (8000, 16000, 24000)
CLIENT_EVENTS = frozenset(
    {
        "sessionStart",
        "promptStart",
        "contentStart",
        "textInput",
        "audioInput",
        "toolResult",
        "contentEnd",
        "promptEnd",
        "sessionEnd",
        "connectionEnd",  # what strands sends to close; AWS's docs name sessionEnd
    }
)
CONTENT_TYPES = {"TEXT", "AUDIO", "TOOL"}
ROLES = {"SYSTEM", "USER", "ASSISTANT", "TOOL"}


@dataclass(frozen=True)
class Limits:
    """Size limits on single inputs. Chosen here to catch runaway inputs; AWS does not publish all of them."""

    max_audio_chunk_s: float = 1.0
    max_text_bytes: int = 64 * 1024
    max_tool_result_bytes: int = 64 * 1024


@dataclass
class ContentInfo:
    """An open content block as the client declared it."""

    name: str
    type: str
    role: str
    interactive: bool
    sample_rate: int | None = None
    tool_use_id: str | None = None
    events: int = 0


@dataclass
class ProtocolChecker:
    """Feed every client event to ``check``; read ``violations``. Tell it which tool uses the server issued."""

    limits: Limits = field(default_factory=Limits)
    violations: list[str] = field(default_factory=list)
    prompt_name: str | None = None
    output_sample_rate: int | None = None
    open_contents: dict[str, ContentInfo] = field(default_factory=dict)
    _index: int = -1
    _event: str = ""
    _session_started: bool = False
    _prompt_ended: bool = False
    _session_ended: bool = False
    _interactive_seen: bool = False
    _closed_names: set[str] = field(default_factory=set)
    _issued_tool_uses: set[str] = field(default_factory=set)
    _answered_tool_uses: set[str] = field(default_factory=set)

    def tool_use_issued(self, tool_use_id: str) -> None:
        """The server sent a ``toolUse`` with this id: a ``toolResult`` for it is now allowed."""
        self._issued_tool_uses.add(tool_use_id)

    def end_of_input(self) -> None:
        """The client ended its input stream: nothing may be left half-open."""
        self._index += 1
        self._event = "<end of input>"
        if self.open_contents:
            self._violate(f"input ended with contents still open: {sorted(self.open_contents)}")

    def check(self, event: NovaEvent) -> ContentInfo | None:
        """Check one event in order; returns the content it belongs to, if any."""
        self._index += 1
        self._event = event.name
        if event.name not in CLIENT_EVENTS:
            self._violate(f"unknown event {event.name!r}")
            return None
        if self._session_ended:
            self._violate("event after the session ended")
            return None
        if event.name != "sessionStart" and not self._session_started:
            self._violate("sessionStart must come first")
        handler = getattr(self, f"_on_{event.name}")
        return handler(event.body)

    # -- per event -------------------------------------------------------------------------------

    def _on_sessionStart(self, body: dict[str, Any]) -> None:
        if self._session_started:
            self._violate("second sessionStart")
        self._session_started = True
        inference = body.get("inferenceConfiguration")
        if inference is not None and not isinstance(inference, dict):
            self._violate("inferenceConfiguration must be an object")

    def _on_promptStart(self, body: dict[str, Any]) -> None:
        if self.prompt_name is not None:
            self._violate("second promptStart on one stream")
        name = self._string(body, "promptName")
        self.prompt_name = name
        self._media(body.get("textOutputConfiguration"), "textOutputConfiguration", "text/plain")
        audio = body.get("audioOutputConfiguration")
        if not isinstance(audio, dict):
            self._violate("promptStart needs audioOutputConfiguration")
        else:
            self.output_sample_rate = self._audio_format(audio, "audioOutputConfiguration")
            self._string(audio, "voiceId", where="audioOutputConfiguration")
        if "toolConfiguration" in body:
            self._tools(body["toolConfiguration"])
            self._media(body.get("toolUseOutputConfiguration"), "toolUseOutputConfiguration", "application/json")

    def _on_contentStart(self, body: dict[str, Any]) -> ContentInfo | None:
        if not self._in_prompt(body):
            return None
        name = self._string(body, "contentName")
        kind = body.get("type")
        role = body.get("role")
        if kind not in CONTENT_TYPES:
            self._violate(f"content type {kind!r} is not one of {sorted(CONTENT_TYPES)}")
        if role not in ROLES:
            self._violate(f"role {role!r} is not one of {sorted(ROLES)}")
        if name in self.open_contents or name in self._closed_names:
            self._violate(f"contentName {name!r} reused")
        interactive = body.get("interactive", True)
        if not isinstance(interactive, bool):
            self._violate("interactive must be a boolean")
            interactive = True
        content = ContentInfo(name=name, type=str(kind), role=str(role), interactive=interactive)
        if role == "SYSTEM":
            if kind != "TEXT":
                self._violate("SYSTEM content must be TEXT")
            if self._interactive_seen:
                self._violate("SYSTEM content after interactive content")
        if kind == "TEXT":
            self._media(body.get("textInputConfiguration"), "textInputConfiguration", "text/plain")
        elif kind == "AUDIO":
            if role != "USER":
                self._violate(f"AUDIO input must have role USER, not {role!r}")
            if any(open_.type == "AUDIO" for open_ in self.open_contents.values()):
                self._violate("a second AUDIO content opened while one is open")
            config = body.get("audioInputConfiguration")
            if not isinstance(config, dict):
                self._violate("AUDIO contentStart needs audioInputConfiguration")
            else:
                content.sample_rate = self._audio_format(config, "audioInputConfiguration")
        elif kind == "TOOL":
            if role != "TOOL":
                self._violate(f"TOOL content must have role TOOL, not {role!r}")
            config = body.get("toolResultInputConfiguration")
            if not isinstance(config, dict):
                self._violate("TOOL contentStart needs toolResultInputConfiguration")
            else:
                tool_use_id = self._string(config, "toolUseId", where="toolResultInputConfiguration")
                content.tool_use_id = tool_use_id
                if tool_use_id not in self._issued_tool_uses:
                    self._violate(f"toolUseId {tool_use_id!r} matches no toolUse this stream sent")
                elif tool_use_id in self._answered_tool_uses:
                    self._violate(f"toolUseId {tool_use_id!r} answered twice")
                self._answered_tool_uses.add(tool_use_id)
                if config.get("type", "TEXT") != "TEXT":
                    self._violate("toolResultInputConfiguration.type must be TEXT")
        if interactive and role != "SYSTEM":
            self._interactive_seen = True
        self.open_contents[name] = content
        return content

    def _on_textInput(self, body: dict[str, Any]) -> ContentInfo | None:
        content = self._content_for(body, "TEXT")
        text = body.get("content")
        if not isinstance(text, str):
            self._violate("textInput content must be a string")
        elif len(text.encode()) > self.limits.max_text_bytes:
            self._violate(f"textInput of {len(text.encode())} bytes exceeds {self.limits.max_text_bytes}")
        return content

    def _on_audioInput(self, body: dict[str, Any]) -> ContentInfo | None:
        content = self._content_for(body, "AUDIO")
        data = body.get("content")
        if not isinstance(data, str):
            self._violate("audioInput content must be a base64 string")
            return content
        try:
            pcm = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            self._violate("audioInput content is not valid base64")
            return content
        if not pcm or len(pcm) % 2:
            self._violate(f"audioInput of {len(pcm)} bytes is not whole 16-bit samples")
        if content is not None and content.sample_rate:
            limit = int(self.limits.max_audio_chunk_s * content.sample_rate) * 2
            if len(pcm) > limit:
                self._violate(f"audioInput of {len(pcm)} bytes exceeds {limit} ({self.limits.max_audio_chunk_s} s)")
        return content

    def _on_toolResult(self, body: dict[str, Any]) -> ContentInfo | None:
        content = self._content_for(body, "TOOL")
        text = body.get("content")
        if not isinstance(text, str):
            self._violate("toolResult content must be a JSON string")
        else:
            if len(text.encode()) > self.limits.max_tool_result_bytes:
                self._violate(f"toolResult of {len(text.encode())} bytes exceeds {self.limits.max_tool_result_bytes}")
            try:
                json.loads(text)
            except ValueError:
                self._violate("toolResult content is not JSON")
        return content

    def _on_contentEnd(self, body: dict[str, Any]) -> ContentInfo | None:
        if not self._in_prompt(body):
            return None
        name = body.get("contentName")
        content = self.open_contents.pop(name, None) if isinstance(name, str) else None
        if content is None:
            self._violate(f"contentEnd for {name!r}, which is not open")
            return None
        self._closed_names.add(content.name)
        if content.type in ("TEXT", "TOOL") and content.events == 0:
            self._violate(f"{content.type} content {content.name!r} closed with no input in it")
        return content

    def _on_promptEnd(self, body: dict[str, Any]) -> None:
        if self._in_prompt(body):
            if self.open_contents:
                self._violate(f"promptEnd with contents still open: {sorted(self.open_contents)}")
            self._prompt_ended = True

    def _on_sessionEnd(self, body: dict[str, Any]) -> None:
        self._session_ended = True

    _on_connectionEnd = _on_sessionEnd

    # -- helpers ---------------------------------------------------------------------------------

    def _violate(self, message: str) -> None:
        self.violations.append(f"event #{self._index} ({self._event}): {message}")

    def _string(self, body: dict[str, Any], key: str, where: str = "") -> str:
        value = body.get(key)
        if not isinstance(value, str) or not value:
            self._violate(f"{where + '.' if where else ''}{key} must be a non-empty string, got {value!r}")
            return ""
        return value

    def _in_prompt(self, body: dict[str, Any]) -> bool:
        if self.prompt_name is None:
            self._violate("no promptStart yet")
            return False
        if self._prompt_ended:
            self._violate("prompt already ended")
            return False
        if body.get("promptName") != self.prompt_name:
            self._violate(f"promptName {body.get('promptName')!r} is not this prompt's {self.prompt_name!r}")
        return True

    def _content_for(self, body: dict[str, Any], kind: str) -> ContentInfo | None:
        if not self._in_prompt(body):
            return None
        name = body.get("contentName")
        content = self.open_contents.get(name) if isinstance(name, str) else None
        if content is None:
            self._violate(f"contentName {name!r} is not an open content")
            return None
        if content.type != kind:
            self._violate(f"{self._event} inside {content.type} content {name!r} (needs {kind})")
        content.events += 1
        return content

    def _media(self, config: Any, where: str, media_type: str) -> None:
        if not isinstance(config, dict) or config.get("mediaType") != media_type:
            self._violate(f"{where} must be {{'mediaType': {media_type!r}}}, got {config!r}")

    def _audio_format(self, config: dict[str, Any], where: str) -> int | None:
        expected = {"mediaType": "audio/lpcm", "sampleSizeBits": 16, "channelCount": 1, "encoding": "base64"}
        for key, value in expected.items():
            if config.get(key) != value:
                self._violate(f"{where}.{key} must be {value!r}, got {config.get(key)!r}")
        if config.get("audioType", "SPEECH") != "SPEECH":
            self._violate(f"{where}.audioType must be 'SPEECH'")
        rate = config.get("sampleRateHertz")
        if rate not in SAMPLE_RATES:
            self._violate(f"{where}.sampleRateHertz {rate!r} is not one of {SAMPLE_RATES}")
            return None
        return int(rate)

    def _tools(self, config: Any) -> None:
        tools = config.get("tools") if isinstance(config, dict) else None
        if not isinstance(tools, list):
            self._violate("toolConfiguration.tools must be a list")
            return
        names: set[str] = set()
        for position, tool in enumerate(tools):
            spec = tool.get("toolSpec") if isinstance(tool, dict) else None
            if not isinstance(spec, dict):
                self._violate(f"tools[{position}] has no toolSpec")
                continue
            name = self._string(spec, "name", where=f"tools[{position}].toolSpec")
            if name in names:
                self._violate(f"tool {name!r} declared twice")
            names.add(name)
            self._string(spec, "description", where=f"tools[{position}].toolSpec")
            schema = spec.get("inputSchema")
            raw = schema.get("json") if isinstance(schema, dict) else None
            if not isinstance(raw, str):
                self._violate(f"tool {name!r}: inputSchema.json must be a JSON string, got {type(raw).__name__}")
                continue
            try:
                parsed = json.loads(raw)
            except ValueError:
                self._violate(f"tool {name!r}: inputSchema.json is not JSON")
                continue
            if not isinstance(parsed, dict):
                self._violate(f"tool {name!r}: inputSchema.json is not a JSON object")

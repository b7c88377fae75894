"""The ``line:`` field of a scenario (and ``voicebot test --line``): how bad the phone line is.

::

    line:
      noise: {kind: babble, level_dbfs: -35}   # white | babble | hum, RMS level in dBFS
      packet_loss: 0.03                         # the share of caller packets lost
      jitter_ms: 60                             # each packet up to this late, in order
      loudness: quiet                           # quiet | clipping | normal, or a gain in dB
      voice: en-gb+m3                           # the caller's espeak-ng voice
      seed: 7                                   # another seed, another (reproducible) line
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from agent.offline.synthesizer import VoiceError
from telephony.simulation.caller.line_conditions import LOUDNESS_DB, NOISE_KINDS, LineConditions, Noise
from telephony.simulation.caller.voice import Voice
from telephony.simulation.scenarios.call_fields import LINE, LINE_NOISE
from telephony.simulation.scenarios.field_reader import FieldReader, kind_of
from telephony.simulation.scenarios.scenario import ScenarioError

__all__ = ["line_from_option", "read_line"]


def read_line(reader: FieldReader, container: Any, key: str) -> LineConditions:
    """``container[key]`` read as line conditions. Every mistake is noted on ``reader`` (file, line, field), and
    a field with one is left as if not given, so the whole file's mistakes are found at once."""
    entry = reader.mapping(container[key], container, key, key, LINE.names)

    def read(field: str, get: Callable[[FieldReader, dict[str, Any], str], Any]) -> Any:
        return reader.attempt(functools.partial(get, reader, entry, key)) if field in entry else None

    seed = read("seed", lambda r, e, n: int(r.number(e, "seed", n, 0, integer=True)))
    return LineConditions(
        noise=read("noise", _noise),
        packet_loss=read("packet_loss", _share),
        jitter_ms=read("jitter_ms", lambda r, e, n: r.number(e, "jitter_ms", n, 0.0)),
        loudness_db=read("loudness", _loudness),
        voice=read("voice", _voice),
        seed=seed,
    )


def _noise(reader: FieldReader, entry: dict[str, Any], name: str) -> Noise:
    noise = reader.mapping(entry["noise"], entry, "noise", f"{name}.noise", LINE_NOISE.names)
    kind = reader.text(noise, "kind", f"{name}.noise")
    if kind not in NOISE_KINDS:
        raise reader.fail(
            noise, "kind", f"{name}.noise.kind", f"expected one of {', '.join(NOISE_KINDS)}, got {kind!r}"
        )
    if "level_dbfs" not in noise:
        raise reader.fail(noise, None, f"{name}.noise.level_dbfs", "is required: the noise's level, e.g. -40 (dBFS)")
    level = reader.number(noise, "level_dbfs", f"{name}.noise", 0.0, low=-100.0)
    if level > 0:
        raise reader.fail(noise, "level_dbfs", f"{name}.noise.level_dbfs", f"is at most 0 (full scale), got {level:g}")
    return Noise(kind, level)


def _share(reader: FieldReader, entry: dict[str, Any], name: str) -> float:
    share = reader.number(entry, "packet_loss", name, 0.0)
    if share >= 1:
        raise reader.fail(entry, "packet_loss", f"{name}.packet_loss", f"is a share below 1 (0.05: 5%), got {share:g}")
    return share


def _loudness(reader: FieldReader, entry: dict[str, Any], name: str) -> float:
    value = entry["loudness"]
    if isinstance(value, str) and value in LOUDNESS_DB:
        return LOUDNESS_DB[value]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and -60 <= value <= 40:
        return float(value)
    raise reader.fail(
        entry,
        "loudness",
        f"{name}.loudness",
        f"expected {', '.join(LOUDNESS_DB)} or a gain in dB from -60 to 40, got {kind_of(value)}",
    )


def _voice(reader: FieldReader, entry: dict[str, Any], name: str) -> str:
    voice = reader.text(entry, "voice", name)
    if (problem := _voice_problem(voice)) is not None:
        raise reader.fail(entry, "voice", f"{name}.voice", problem)
    return voice


@functools.cache
def _voice_problem(name: str) -> str | None:
    """Why the caller cannot speak in voice ``name`` (None: it can); found before any call, not when it starts."""
    try:
        Voice(name)
    except VoiceError as error:
        return str(error)
    return None


def line_from_option(text: str) -> LineConditions:
    """``voicebot test --line``: a YAML file of line conditions, or the same written inline
    (``--line "{noise: {kind: white, level_dbfs: -40}, packet_loss: 0.02}"``); raises ``ScenarioError`` naming
    every mistake."""
    path = Path(text)
    in_file = path.suffix in (".yaml", ".yml") and path.is_file()
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8") if in_file else text)
    except (OSError, yaml.YAMLError) as error:
        raise ScenarioError(f"--line: cannot read {text!r}: {error}") from None
    reader = FieldReader(path if in_file else Path("--line"))
    conditions = reader.attempt(lambda: read_line(reader, {"line": document}, "line"))
    if reader.problems or conditions is None:
        # No line numbers outside a located file.
        unlocated = [
            ScenarioError(str(problem).replace(f"{reader.file}:0:", f"{reader.file}:", 1))
            for problem in reader.problems
        ]
        raise ScenarioError.of(unlocated)
    return conditions

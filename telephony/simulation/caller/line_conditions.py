"""A bad phone line between the simulated caller and the bridge: noise, lost packets, jitter, a quiet or clipping
caller.

Real calls are not clean: a caller on a train, a speakerphone across a room, a cheap headset driven into
clipping, a mobile network dropping and bunching packets. :class:`LineConditions` says how bad the line is;
:class:`ImpairedLine` does it to the μ-law frames the simulated caller sends, so the bridge (and the model
behind it) receive exactly what such a line would hand Twilio. Everything random comes from one seed, so a
line is the same on every run with that seed, and each effect has its own random stream: adding jitter does
not change which packets are lost.

The caller's own record of what it said (``SimulatedCaller.said``) stays clean: it is the truth about when
the caller spoke, which is what tells a false barge-in (the model heard the noise) from a real one.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from telephony.codec import pcm16_to_ulaw, ulaw_to_pcm16
from telephony.simulation.caller.line_noise import NOISE_KINDS, NoiseLoop

__all__ = ["LOUDNESS_DB", "NOISE_KINDS", "ImpairedLine", "LineConditions", "Noise"]

LOUDNESS_DB = {"normal": 0.0, "quiet": -20.0, "clipping": 20.0}
"""The caller's loudness by name, as a gain on their voice: ``quiet`` is a phone held away from the mouth
(-20 dB puts espeak's voice near -45 dBFS, the edge of what the bridge calls speech); ``clipping`` drives it
20 dB past full scale, so peaks are cut flat as an overloaded microphone does."""


@dataclass(frozen=True)
class Noise:
    kind: str
    """One of ``NOISE_KINDS``: ``white``, ``babble`` or ``hum``."""
    level_dbfs: float


@dataclass(frozen=True)
class LineConditions:
    """How bad the line is. Every field None means "as the line above says" (see :meth:`over`), else clean."""

    noise: Noise | None = None
    packet_loss: float | None = None
    """The share of the caller's 20 ms packets that never arrive (0.05: one in twenty)."""
    jitter_ms: float | None = None
    """Each packet arrives up to this much late (uniformly), never before the one sent ahead of it."""
    loudness_db: float | None = None
    """Gain on the caller's voice (``LOUDNESS_DB`` names the usual ones); past full scale it clips."""
    voice: str | None = None
    """The caller's espeak-ng voice (e.g. ``en-gb+m3``) in place of the usual one."""
    seed: int | None = None

    def over(self, base: LineConditions) -> LineConditions:
        """These conditions over ``base``, field by field (a run's ``--line`` over a scenario's ``line:``)."""
        chosen = {item.name: getattr(self, item.name) for item in fields(self)}
        return LineConditions(
            **{name: value if value is not None else getattr(base, name) for name, value in chosen.items()}
        )

    @property
    def impairs(self) -> bool:
        """True when anything happens to the audio on its way (the voice alone changes nothing on the line)."""
        return bool(self.noise or self.packet_loss or self.jitter_ms or self.loudness_db)

    def describe(self) -> str:
        parts = []
        if self.noise is not None:
            parts.append(f"{self.noise.kind} noise at {self.noise.level_dbfs:g} dBFS")
        if self.packet_loss:
            parts.append(f"{self.packet_loss:.0%} packet loss")
        if self.jitter_ms:
            parts.append(f"{self.jitter_ms:g} ms jitter")
        if self.loudness_db:
            named = {value: name for name, value in LOUDNESS_DB.items()}.get(self.loudness_db)
            parts.append(f"{named} caller" if named else f"caller at {self.loudness_db:+g} dB")
        if self.voice:
            parts.append(f"voice {self.voice}")
        return ", ".join(parts) if parts else "a clean line"

    def line(self, run: int = 1) -> ImpairedLine | None:
        """The impairment for one call (None when the line is clean). Run ``n`` of a scenario gets its own noise
        and losses from the same seed, so five runs are five different bad lines, the same five every time."""
        return ImpairedLine(self, run) if self.impairs else None


class ImpairedLine:
    """One call's bad line, frame by frame: what arrives, and how late."""

    def __init__(self, conditions: LineConditions, run: int = 1) -> None:
        seed = conditions.seed or 0
        self.conditions = conditions
        self.noise = (
            NoiseLoop(conditions.noise.kind, conditions.noise.level_dbfs, seed * 1000 + run)
            if conditions.noise is not None
            else None
        )
        self._loss = np.random.default_rng([seed, run, 1])
        self._jitter = np.random.default_rng([seed, run, 2])
        self._gain = 10 ** ((conditions.loudness_db or 0.0) / 20)
        self._released = 0.0
        self._origin: float | None = None
        self.sent = 0
        self.lost = 0

    def frame(self, payload: bytes) -> bytes | None:
        """What the bridge receives for one caller frame; None when the packet is lost."""
        self.sent += 1
        if self.conditions.packet_loss and self._loss.random() < self.conditions.packet_loss:
            self.lost += 1
            return None
        if self._gain == 1.0 and self.noise is None:
            return payload
        samples = np.frombuffer(ulaw_to_pcm16(payload), dtype="<i2").astype(np.float64) * self._gain
        if self.noise is not None:
            samples += self.noise.next(len(samples))
        clipped = np.clip(np.round(samples), -32768, 32767).astype("<i2")
        return pcm16_to_ulaw(clipped.tobytes())

    def release_at(self, stream_s: float, now: float) -> float:
        """When (on ``now``'s clock) the frame at ``stream_s`` seconds of stream time arrives: up to ``jitter_ms``
        after it was due, never before the frame ahead of it. The first frame sets when stream time began."""
        if self._origin is None:
            self._origin = now - stream_s
        late = self._jitter.uniform(0.0, self.conditions.jitter_ms / 1000) if self.conditions.jitter_ms else 0.0
        self._released = max(self._released, self._origin + stream_s + late)
        return self._released

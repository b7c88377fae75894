"""What a simulated caller does, and when: from a recording's caller side or from a WAV of someone talking.

A script is the caller's media frames, keypresses and hang-up, each at a time in *stream time* (seconds
from the first caller frame). :func:`play` performs it with a :class:`~telephony.simulation.caller.SimulatedCaller`
paced at real time (or ``speed`` times faster), then, if the script does not hang up, stays on the line
in silence as :class:`Linger` says.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import secrets
import time
import wave
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import websockets

from telephony.codec import FRAME_BYTES, TWILIO_RATE, Resampler, pcm16_to_ulaw
from telephony.recording.format import Recording, RecordingError
from telephony.simulation.caller.simulated_caller import FRAME_SECONDS, ULAW_SILENCE, SimulatedCaller


@dataclass(frozen=True, slots=True)
class CallerStep:
    at: float
    """Stream time, seconds from the first caller frame."""
    kind: str
    """``media``, ``dtmf`` or ``stop``."""
    payload: bytes = b""
    digit: str = ""
    timestamp: int | None = None
    """Twilio's media ``timestamp`` as recorded (ms), so gaps replay as gaps."""


@dataclass
class CallerScript:
    """One caller's side of a call."""

    call: dict[str, Any]
    """``call_sid``, ``stream_sid``, ``account_sid``, ``from``, ``to``, ``parameters`` (as in a recording)."""
    steps: list[CallerStep] = field(default_factory=list)

    @property
    def hangs_up(self) -> bool:
        return any(step.kind == "stop" for step in self.steps)

    @property
    def duration(self) -> float:
        return self.steps[-1].at + FRAME_SECONDS if self.steps else 0.0

    @classmethod
    def from_recording(cls, recording: Recording) -> CallerScript:
        """The caller's messages as recorded (media, keypresses, hang-up); mark echoes are the player's job."""
        steps: list[CallerStep] = []
        first_stamp: int | None = None
        last_media: tuple[float, float] | None = None  # (stream time, arrival time) of the latest frame
        for record in recording.of_kind("twilio_in"):
            message = record.get("message")
            if not isinstance(message, dict):
                continue
            arrived = float(record.get("t", 0.0))
            event = message.get("event")
            if event == "media":
                payload, stamp = _media(message)
                if payload is None:
                    continue
                if stamp is not None and first_stamp is None:
                    first_stamp = stamp
                if stamp is not None and first_stamp is not None:
                    at = (stamp - first_stamp) / 1000
                else:
                    at = last_media[0] + FRAME_SECONDS if last_media else 0.0
                steps.append(CallerStep(at, "media", payload=payload, timestamp=stamp))
                last_media = (at, arrived)
            elif event in ("dtmf", "stop"):
                # Keep its offset from the frame before it, so "20 ms after the last word" stays that.
                at = last_media[0] + max(0.0, arrived - last_media[1]) if last_media else 0.0
                digit = str((message.get("dtmf") or {}).get("digit", "")) if event == "dtmf" else ""
                steps.append(CallerStep(at, str(event), digit=digit))
        return cls(call=recording.call, steps=steps)

    @classmethod
    def from_wav(cls, path: Path | str, call: dict[str, Any] | None = None) -> CallerScript:
        """A WAV file (PCM, any rate, mono or stereo) as the caller's voice; the caller does not hang up."""
        ulaw = read_wav_as_ulaw(Path(path))
        steps = [
            CallerStep(index * FRAME_SECONDS, "media", payload=ulaw[offset : offset + FRAME_BYTES])
            for index, offset in enumerate(range(0, len(ulaw) - FRAME_BYTES + 1, FRAME_BYTES))
        ]
        return cls(call=call or new_call(), steps=steps)

    def without_first_frames(self, frames: int) -> CallerScript:
        """The script from its ``frames``-th media frame on, re-timed to start at 0.

        A recording's first frames may have arrived before the bridge had an agent (it drops those);
        skipping them lines a replay up with what the recorded model actually heard.
        """
        media = [index for index, step in enumerate(self.steps) if step.kind == "media"]
        if frames <= 0:
            return self
        first = media[frames] if frames < len(media) else len(self.steps)
        kept = self.steps[first:]
        origin = kept[0].at if kept else 0.0
        return CallerScript(self.call, [replace(step, at=max(0.0, step.at - origin)) for step in kept])


def new_call() -> dict[str, Any]:
    """Fresh SIDs for a call made up by the simulator (Twilio's test numbers)."""
    return {
        "call_sid": "CA" + secrets.token_hex(16),
        "stream_sid": "MZ" + secrets.token_hex(16),
        "account_sid": "AC" + "0" * 32,
        "from": "+15005550006",
        "to": "+15005550001",
        "parameters": {},
    }


def _media(message: dict[str, Any]) -> tuple[bytes | None, int | None]:
    media = message.get("media")
    if not isinstance(media, dict) or media.get("track", "inbound") not in ("inbound", "inbound_track"):
        return None, None
    try:
        payload = base64.b64decode(str(media.get("payload", "")), validate=True)
    except (binascii.Error, ValueError):
        return None, None
    try:
        stamp: int | None = int(media.get("timestamp"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        stamp = None
    return payload, stamp


def read_wav_as_ulaw(path: Path) -> bytes:
    """A PCM WAV file as 8 kHz μ-law (downmixed, resampled with the bridge's own filter)."""
    try:
        with wave.open(str(path), "rb") as source:
            channels, width, rate = source.getnchannels(), source.getsampwidth(), source.getframerate()
            raw = source.readframes(source.getnframes())
    except (wave.Error, EOFError) as error:
        raise RecordingError(
            f"{path} is not a PCM WAV file ({error}): convert it, e.g. `sox {path.name} -b 16 caller.wav`"
        ) from None
    except OSError as error:
        raise RecordingError(f"cannot read {path}: {error.strerror or error}") from None
    if width not in (1, 2):
        raise RecordingError(f"{path} has {8 * width}-bit samples: convert it to 16-bit PCM first")
    samples = (
        (np.frombuffer(raw, dtype=np.uint8).astype(np.int16) - 128) * 256 if width == 1 else np.frombuffer(raw, "<i2")
    )
    if channels > 1:
        samples = samples[: len(samples) - len(samples) % channels].reshape(-1, channels).mean(axis=1)
    pcm = samples.astype("<i2").tobytes()
    if rate != TWILIO_RATE:
        resampler = Resampler(rate, TWILIO_RATE)
        pcm = resampler.process(pcm) + resampler.flush()
    return pcm16_to_ulaw(pcm)


# --- performing a script -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Linger:
    """What the caller does once its script is over and it has not hung up."""

    quiet_s: float | None = 3.0
    """Hang up once the bot has been quiet this long (None: wait for the bot to hang up)."""
    max_s: float = 60.0
    """Hang up after this long regardless."""


async def play(
    caller: SimulatedCaller,
    script: CallerScript,
    linger: Linger = Linger(),
    before_hang_up: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Perform ``script`` on ``caller`` at real time × ``caller.speed``; stops early if the bot hangs up.

    ``before_hang_up`` is awaited before a scripted ``stop`` (a replay lines itself up with the bot there).
    """
    try:
        await _perform(caller, script, linger, before_hang_up)
    except websockets.ConnectionClosed:
        pass  # the bot hung up while we were talking: that is how calls end


async def _perform(
    caller: SimulatedCaller,
    script: CallerScript,
    linger: Linger,
    before_hang_up: Callable[[], Awaitable[None]] | None,
) -> None:
    started = time.monotonic()
    for step in script.steps:
        due = started + step.at / caller.speed
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        if caller.closed.is_set():
            return
        if step.kind == "media":
            await caller.media(step.payload, step.timestamp)
        elif step.kind == "dtmf":
            await caller.dtmf(step.digit)
        elif step.kind == "stop":
            if before_hang_up is not None:
                await before_hang_up()
            await caller.stop()
            return
    await _linger(caller, started + script.duration / caller.speed, linger)


async def _linger(caller: SimulatedCaller, due: float, linger: Linger) -> None:
    """Silence on the line until the bot hangs up, has been quiet long enough, or ``max_s`` is up."""
    began = due
    stamp = caller.last_timestamp
    while not caller.closed.is_set():
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        if caller.closed.is_set():
            return
        now = time.monotonic()
        quiet_since = max(began, caller.started + (caller.heard[-1].at if caller.heard else 0.0))
        quiet = (
            linger.quiet_s is not None and not caller.playing and (now - quiet_since) * caller.speed >= linger.quiet_s
        )
        if quiet or (now - began) * caller.speed >= linger.max_s:
            await caller.stop()
            return
        stamp += 20
        await caller.media(ULAW_SILENCE, stamp)
        due += FRAME_SECONDS / caller.speed

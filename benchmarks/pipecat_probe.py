"""Runs inside the throwaway pipecat environment that benchmarks/codec.py creates; never imported by the project.

It drives pipecat's Twilio serializer the way a pipecat call does and hands the raw results back; every
measurement is computed by benchmarks/codec.py, so the math exists once. Requests and answers are JSON,
one per line, on stdin/stdout (binary as base64). Operations:

* ``hello``: versions and what the serializer resamples with.
* ``resample``: sessions of calls through pipecat's stream resampler (the factory the serializer uses);
  each call is base64 PCM16 (``resample``) or null (``flush``); answers one output per call.
* ``outbound``: PCM16 chunks at ``rate`` -> ``serialize(OutputAudioRawFrame)``; answers each text (or null).
* ``inbound``: Twilio message texts -> ``deserialize``; answers each frame's audio (or null).
* ``load_call`` then ``time_call``: CPU seconds for one call (all inbound messages, then all outbound
  chunks) on a fresh serializer, timed here so the parent's own work is not counted.
"""

from __future__ import annotations

import asyncio
import base64
import json
import platform
import sys
import time
import warnings
from importlib import metadata
from typing import Any

warnings.simplefilter("ignore")  # audioop's DeprecationWarning on 3.12, pydantic notices

from loguru import logger  # noqa: E402

logger.remove()  # pipecat logs through loguru; stdout carries the answers

from pipecat.audio.utils import create_stream_resampler  # noqa: E402
from pipecat.frames.frames import OutputAudioRawFrame  # noqa: E402
from pipecat.serializers.twilio import TwilioFrameSerializer  # noqa: E402

STREAM_SID = "MZ00000000000000000000000000000000"


async def _serializer(rate: int) -> TwilioFrameSerializer:
    """A serializer as a pipecat transport sets it up: pipeline input rate `rate`, no hang-up REST call."""
    serializer = TwilioFrameSerializer(STREAM_SID, params=TwilioFrameSerializer.InputParams(auto_hang_up=False))
    try:
        from pipecat.processors.frame_processor import FrameProcessorSetup
    except ImportError:  # releases before FrameProcessorSetup passed the StartFrame instead
        from pipecat.frames.frames import StartFrame

        await serializer.setup(StartFrame(audio_in_sample_rate=rate))
    else:
        # The serializer reads only the input rate; the clock, task manager and worker go unused.
        await serializer.setup(
            FrameProcessorSetup(clock=None, task_manager=None, pipeline_worker=None, audio_in_sample_rate=rate)
        )
    return serializer


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _bytes(text: str) -> bytes:
    return base64.b64decode(text)


async def _hello(_: dict[str, Any]) -> dict[str, Any]:
    resampler = create_stream_resampler()
    described = type(resampler).__name__
    for attribute in ("_quality", "_clear_after_secs"):
        if hasattr(resampler, attribute):
            described += f" {attribute.strip('_')}={getattr(resampler, attribute)}"
    versions = {name: metadata.version(name) for name in ("pipecat-ai", "soxr", "numpy")}
    return {"versions": versions, "python": platform.python_version(), "resampler": described}


async def _resample(request: dict[str, Any]) -> dict[str, Any]:
    outputs = []
    for session in request["sessions"]:
        resampler = create_stream_resampler()
        answers = []
        for call in session["calls"]:
            if call is None:
                answers.append(_b64(await resampler.flush()))
            else:
                answers.append(_b64(await resampler.resample(_bytes(call), session["src"], session["dst"])))
        outputs.append(answers)
    return {"outputs": outputs}


async def _outbound(request: dict[str, Any]) -> dict[str, Any]:
    serializer = await _serializer(request["rate"])
    texts = []
    for chunk in request["chunks"]:
        frame = OutputAudioRawFrame(audio=_bytes(chunk), sample_rate=request["rate"], num_channels=1)
        text = await serializer.serialize(frame)
        texts.append(text.decode() if isinstance(text, bytes) else text)
    return {"messages": texts}


async def _inbound(request: dict[str, Any]) -> dict[str, Any]:
    serializer = await _serializer(request["rate"])
    audio = []
    for text in request["messages"]:
        frame = await serializer.deserialize(text)
        audio.append(_b64(frame.audio) if frame is not None and hasattr(frame, "audio") else None)
    return {"audio": audio}


_CALLS: dict[int, tuple[list[str], list[bytes]]] = {}


async def _load_call(request: dict[str, Any]) -> dict[str, Any]:
    _CALLS[request["rate"]] = (request["messages"], [_bytes(chunk) for chunk in request["chunks"]])
    return {}


async def _time_call(request: dict[str, Any]) -> dict[str, Any]:
    rate = request["rate"]
    messages, chunks = _CALLS[rate]
    serializer = await _serializer(rate)
    start = time.process_time()
    for text in messages:
        await serializer.deserialize(text)
    for chunk in chunks:  # the output transport wraps each chunk in a frame before serializing it
        await serializer.serialize(OutputAudioRawFrame(audio=chunk, sample_rate=rate, num_channels=1))
    return {"seconds": time.process_time() - start}


_OPERATIONS = {
    "hello": _hello,
    "resample": _resample,
    "outbound": _outbound,
    "inbound": _inbound,
    "load_call": _load_call,
    "time_call": _time_call,
}


async def _serve() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = await _OPERATIONS[request["op"]](request)
        except Exception as error:  # noqa: BLE001 - reported to the parent rather than dying mid-protocol
            answer = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(_serve())

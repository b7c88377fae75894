"""What each Nova client lever saves, per event or per connection, measured in isolation (process CPU time).

- signing and framing one ``audioInput`` event: the SDK's ``AsyncEventSigner`` + the publisher's ``encode()``
  against ``agent.nova.event_signer.CachingEventSigner`` (same bytes; the tests check that);
- reading one ``audioOutput`` event from the response body: the SDK's ``AWSEventReceiver`` over its
  ``AsyncBytesReader`` against ``agent.nova.event_stream.ChunkReceiver`` over ``ChunkReader`` (same objects;
  the tests check that);
- taking one response body chunk from awscrt's stream while the reader waits for it: strands' read (a task and
  an ``asyncio.wait`` per chunk over awscrt's ``get_next_response_chunk``) against ``agent.nova.crt_body``'s
  sink, each chunk handed over by a second thread running awscrt's own ``_on_body``;
- strands' ``_log_event_type`` on one ``audioOutput`` event with DEBUG off: strands' own against ours;
- building the CRT client of one connection: strands' ``_BedrockAWSCRTHTTPClient()`` (a new TLS context) against
  ``agent.nova.sdk_seam.StartClient`` inside a start (the shared loop and TLS context).

Process CPU time over many repetitions, so a machine shared with other work changes the figures little.

    uv run python benchmarks/nova_levers.py [--events 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import strands.bidi.models.bedrock as strands_bedrock
from aws_sdk_bedrock_runtime.models import (
    BidirectionalInputPayloadPart,
    InvokeModelWithBidirectionalStreamInputChunk,
    _InvokeModelWithBidirectionalStreamOutputDeserializer,
)
from aws_sdk_signers import AsyncEventSigner
from smithy_aws_core.identity import AWSCredentialsIdentity
from smithy_aws_event_stream.aio import AWSEventReceiver
from smithy_aws_event_stream.events import EventHeaderEncoder, EventMessage
from smithy_core.aio.types import AsyncBytesReader

from agent.nova.crt_body import BodyResponse
from agent.nova.endpoint import BedrockEndpoint
from agent.nova.event_signer import CachingEventSigner
from agent.nova.event_stream import ChunkReader, ChunkReceiver, bedrock_protocol, chunk_message
from agent.nova.model import NovaSonicModel
from agent.nova.sdk_seam import ModelStart, StartClient, install, starting
from tests.fakes.crt_stream import CrtBodyStream

IDENTITY = AWSCredentialsIdentity(access_key_id="AKIDEXAMPLE", secret_access_key="secret/key+example")
PROPERTIES: Any = {"region": "us-east-1", "service": "bedrock"}
INITIAL = b"0" * 64


def cpu_us(work: Callable[[], None], repeat: int) -> float:
    """Process CPU microseconds per call of ``work``."""
    work()  # warm-up
    started = time.process_time()
    for _ in range(repeat):
        work()
    return (time.process_time() - started) / repeat * 1e6


def audio_chunk(kind: str, ms: int, **fields: str) -> EventMessage:
    """A Nova ``kind`` audio chunk as it travels: ``ms`` of 16 kHz PCM16, base64 in JSON, base64 again."""
    pcm = base64.b64encode(b"\x01\x02" * (16 * ms)).decode()
    body = json.dumps({"event": {kind: {**fields, "content": pcm}}}).encode()
    # the SDK's message for a chunk (compact {"bytes":"..."}, as Bedrock writes its own chunks too)
    message = chunk_message(
        InvokeModelWithBidirectionalStreamInputChunk(value=BidirectionalInputPayloadPart(bytes_=body))
    )
    assert message is not None
    return message


def audio_event(ms: int) -> EventMessage:
    """An ``audioInput`` chunk as the SDK serializes it."""
    return audio_chunk("audioInput", ms, promptName="p" * 36, contentName="c" * 36)


def signing(ms: int, repeat: int) -> tuple[float, float]:
    loop = asyncio.new_event_loop()
    sdk = AsyncEventSigner(initial_signature=INITIAL, event_encoder_cls=EventHeaderEncoder)
    ours = CachingEventSigner(initial_signature=INITIAL)

    def with_signer(signer: Any) -> Callable[[], None]:
        def work() -> None:
            signed = loop.run_until_complete(
                signer.sign(event=audio_event(ms), identity=IDENTITY, properties=PROPERTIES)
            )
            signed.encode()

        return work

    base = cpu_us(lambda: audio_event(ms), repeat)  # building the event: the same for both, taken off
    figures = cpu_us(with_signer(sdk), repeat) - base, cpu_us(with_signer(ours), repeat) - base
    loop.close()
    return figures


def output_event(ms: int) -> bytes:
    """An ``audioOutput`` event as Nova sends it, framed."""
    return audio_chunk("audioOutput", ms, contentId="c" * 36).encode()


def receiving(ms: int, repeat: int) -> tuple[float, float]:
    """CPU per event reading ``repeat`` events from a body delivered in 16 KiB pieces (HTTP/2 DATA frames)."""
    body = output_event(ms) * repeat
    pieces = [body[at : at + 16384] for at in range(0, len(body), 16384)]
    codec = bedrock_protocol().payload_codec
    deserializer = _InvokeModelWithBidirectionalStreamOutputDeserializer().deserialize

    async def chunks() -> Any:
        for piece in pieces:
            yield piece

    def read_all(receiver_class: type, reader_class: type) -> float:
        async def read() -> None:
            receiver = receiver_class(payload_codec=codec, source=reader_class(chunks()), deserializer=deserializer)
            while await receiver.receive() is not None:
                pass

        started = time.process_time()
        asyncio.run(read())
        return (time.process_time() - started) / repeat * 1e6

    return read_all(AWSEventReceiver, AsyncBytesReader), read_all(ChunkReceiver, ChunkReader)


def body_reads(repeat: int) -> tuple[float, float]:
    """CPU per chunk reading ``repeat`` chunks handed over one at a time (the reader waiting for each)."""

    def read_all(response_class: type) -> float:
        async def read() -> None:
            stream = CrtBodyStream(asyncio.get_running_loop())
            response = response_class(status=200, fields=None, stream=stream)

            def io_thread() -> None:
                for _ in range(repeat):
                    time.sleep(0.0001)
                    stream._on_body(b"x" * 1400)
                stream._on_complete(0)

            thread = threading.Thread(target=io_thread)
            thread.start()
            async for _ in response.chunks():
                pass
            thread.join()

        started = time.process_time()
        asyncio.run(read())
        return (time.process_time() - started) / repeat * 1e6

    return read_all(strands_bedrock._BedrockAWSCRTHTTPResponse), read_all(BodyResponse)


def logging_cost(repeat: int) -> tuple[float, float]:
    event = {"audioOutput": {"content": base64.b64encode(b"\x00" * 4800).decode(), "contentId": "x"}}
    strands_model = strands_bedrock.BedrockNovaSonicModel.__new__(strands_bedrock.BedrockNovaSonicModel)
    ours = NovaSonicModel.__new__(NovaSonicModel)
    return cpu_us(lambda: strands_model._log_event_type(event), repeat), cpu_us(
        lambda: ours._log_event_type(event), repeat
    )


def client_cost(repeat: int) -> tuple[float, float]:
    install()
    strands_own = cpu_us(lambda: strands_bedrock._BedrockAWSCRTHTTPClient.__mro__[1](), repeat)  # type: ignore[misc]
    start = ModelStart(BedrockEndpoint(), 1, set())

    def shared() -> None:
        with starting(start):
            StartClient()

    return strands_own, cpu_us(shared, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    args = parser.parse_args()
    print(f"process CPU per event or connection, {args.events} events per figure\n")
    print("| what | SDK / strands | ours | saved |\n|---|---|---|---|")
    for ms in (20, 60, 200):
        sdk, ours = signing(ms, args.events)
        print(f"| sign + frame one {ms} ms audioInput | {sdk:.1f} µs | {ours:.1f} µs | {sdk - ours:.1f} µs |")
    for ms in (40, 100):
        sdk, ours = receiving(ms, args.events)
        print(f"| read one {ms} ms audioOutput | {sdk:.1f} µs | {ours:.1f} µs | {sdk - ours:.1f} µs |")
    strands_read, our_read = body_reads(args.events)
    print(f"| take one response body chunk | {strands_read:.1f} µs | {our_read:.1f} µs | "
          f"{strands_read - our_read:.1f} µs |")  # fmt: skip
    strands_log, our_log = logging_cost(args.events)
    print(f"| strands' event log, one 100 ms audioOutput, DEBUG off | {strands_log:.1f} µs | {our_log:.2f} µs | "
          f"{strands_log - our_log:.1f} µs |")  # fmt: skip
    own, shared = client_cost(50)
    saved = (own - shared) / 1000
    print(f"| CRT client of one connection | {own / 1000:.2f} ms | {shared / 1000:.3f} ms | {saved:.2f} ms |")


if __name__ == "__main__":
    main()

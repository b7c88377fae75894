"""Runs inside the throwaway pipecat environment that benchmarks/vs_pipecat.py creates; never imported by the project.

A Twilio voice server built the way pipecat's own examples build one: FastAPI, pipecat's
``FastAPIWebsocketTransport`` with its ``TwilioFrameSerializer``, and its ``AWSNovaSonicLLMService`` between
the context aggregators, one pipeline per call. The only change to pipecat is where its Nova client connects:
``create_client`` is overridden to add the endpoint of the local Nova (pipecat always uses the public Bedrock
endpoint), with the same config otherwise. Its CA is trusted through ``SSL_CERT_FILE``, which the CRT's TLS
reads: pipecat's pinned SDK (0.9) deep-copies the config per call, and with it rebuilds the transport with a
default TLS context, so a transport of our own would be dropped. Logging is at WARNING, as the
voicebot server under comparison runs; uvicorn runs with its defaults, as pipecat's own runner starts it
(``PIPECAT_UVICORN_WS`` picks another of its WebSocket implementations, for comparison).

    python pipecat_nova_server.py PORT   (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, SSL_CERT_FILE, AWS_* keys from the env)
"""

from __future__ import annotations

import os
import sys
import warnings

warnings.simplefilter("ignore")

from loguru import logger  # noqa: E402

logger.remove()
logger.add(sys.stderr, level=os.environ.get("PIPECAT_LOG_LEVEL", "WARNING"))

import uvicorn  # noqa: E402
from aws_sdk_bedrock_runtime.client import BedrockRuntimeClient  # noqa: E402
from aws_sdk_bedrock_runtime.config import Config  # noqa: E402
from fastapi import FastAPI, Request, WebSocket  # noqa: E402
from fastapi.responses import Response  # noqa: E402
from pipecat.frames.frames import LLMRunFrame  # noqa: E402
from pipecat.pipeline.pipeline import Pipeline  # noqa: E402
from pipecat.pipeline.runner import PipelineRunner  # noqa: E402
from pipecat.pipeline.worker import PipelineParams, PipelineWorker  # noqa: E402
from pipecat.processors.aggregators.llm_context import LLMContext  # noqa: E402
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair  # noqa: E402
from pipecat.runner.utils import parse_telephony_websocket  # noqa: E402
from pipecat.serializers.twilio import TwilioFrameSerializer  # noqa: E402
from pipecat.services.aws.nova_sonic.llm import AWSNovaSonicLLMService  # noqa: E402
from pipecat.transports.websocket.fastapi import FastAPIWebsocketParams, FastAPIWebsocketTransport  # noqa: E402
from smithy_aws_core.auth.sigv4 import SigV4AuthScheme  # noqa: E402
from smithy_aws_core.identity.static import StaticCredentialsResolver  # noqa: E402
from smithy_core.shapes import ShapeID  # noqa: E402

PORT = int(sys.argv[1])
ENDPOINT = os.environ["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"]
app = FastAPI()


class LocalNovaSonic(AWSNovaSonicLLMService):
    """pipecat's Nova Sonic service, connecting to the local Nova (its client config otherwise unchanged)."""

    def create_client(self) -> BedrockRuntimeClient:
        config = Config(
            endpoint_uri=ENDPOINT,
            region=self._region,
            aws_access_key_id=self._access_key_id,
            aws_secret_access_key=self._secret_access_key,
            aws_session_token=self._session_token,
            aws_credentials_identity_resolver=StaticCredentialsResolver(),
            auth_schemes={ShapeID("aws.auth#sigv4"): SigV4AuthScheme(service="bedrock")},
        )
        return BedrockRuntimeClient(config=config)


@app.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


@app.post("/twiml")
async def twiml(_: Request) -> Response:
    body = f'<Response><Connect><Stream url="ws://127.0.0.1:{PORT}/ws"></Stream></Connect></Response>'
    return Response(content=body, media_type="application/xml")


@app.websocket("/ws")
async def media_stream(websocket: WebSocket) -> None:
    await websocket.accept()
    _, call_data = await parse_telephony_websocket(websocket)
    serializer = TwilioFrameSerializer(
        stream_sid=call_data["stream_id"],
        call_sid=call_data["call_id"],
        params=TwilioFrameSerializer.InputParams(auto_hang_up=False),
    )
    transport = FastAPIWebsocketTransport(
        websocket=websocket,
        params=FastAPIWebsocketParams(
            audio_in_enabled=True, audio_out_enabled=True, add_wav_header=False, serializer=serializer
        ),
    )
    llm = LocalNovaSonic(
        secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        region=os.environ.get("AWS_REGION", "us-east-1"),
        settings=AWSNovaSonicLLMService.Settings(voice="tiffany", system_instruction="You answer the phone."),
    )
    context = LLMContext()
    user_aggregator, assistant_aggregator = LLMContextAggregatorPair(context)
    pipeline = Pipeline([transport.input(), user_aggregator, llm, transport.output(), assistant_aggregator])
    # pipecat's default rates (16 kHz in, 24 kHz out): the serializer resamples Twilio's 8 kHz to what Nova takes.
    worker = PipelineWorker(pipeline, params=PipelineParams())

    @transport.event_handler("on_client_connected")
    async def on_client_connected(_transport: object, _client: object) -> None:
        context.add_message({"role": "developer", "content": "Greet the caller."})
        await worker.queue_frames([LLMRunFrame()])

    @transport.event_handler("on_client_disconnected")
    async def on_client_disconnected(_transport: object, _client: object) -> None:
        await worker.cancel()

    await PipelineRunner(handle_sigint=False).run(worker)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", ws=os.environ.get("PIPECAT_UVICORN_WS", "auto"))

"""The Nova adapter's SDK seam and stream repairs, without a server (the local Nova tests run them for real)."""

from __future__ import annotations

import asyncio
import logging

import pytest
import strands.bidi.models.bedrock as strands_bedrock
from smithy_aws_core.aio.protocols import RestJsonClientProtocol

from agent.nova.crt_loop import shared_event_loop
from agent.nova.endpoint import BedrockEndpoint, default_url
from agent.nova.event_stream import AudioEventProtocol
from agent.nova.sdk_seam import ModelStart, StartConfig, install, starting
from agent.nova.stream_repair import SendsInFlight, end_orphan_writers


async def resolve(transport: object) -> object:
    """The SDK config as strands' start resolves it: through the name in strands' module."""
    return await strands_bedrock.AsyncBedrockRuntimeConfig.resolve(
        endpoint_uri=default_url("eu-north-1"), region="eu-north-1", transport=transport
    )


async def test_a_start_inside_the_seam_gets_its_endpoint_the_shared_loop_and_a_writer_watch() -> None:
    writers: set[asyncio.Task[object]] = set()
    strands_transport = strands_bedrock._BedrockAWSCRTHTTPClient()
    with starting(ModelStart(BedrockEndpoint(url="https://nova.test"), 1, writers)):
        config = await resolve(strands_transport)
    assert strands_bedrock.AsyncBedrockRuntimeConfig is StartConfig
    assert config.endpoint_uri == "https://nova.test"
    assert type(config.transport) is type(strands_transport) and config.transport is not strands_transport
    assert config.transport._eventloop is shared_event_loop(1)
    assert "_await_response" in vars(config.transport)  # wrapped, so stop() can end a writer left behind
    assert type(config.protocol) is AudioEventProtocol  # audio events take the direct path


async def test_a_start_outside_the_seam_is_strands_own() -> None:
    install()
    strands_transport = strands_bedrock._BedrockAWSCRTHTTPClient()
    config = await resolve(strands_transport)
    assert config.endpoint_uri == default_url("eu-north-1")
    assert config.transport is strands_transport and "_await_response" not in vars(strands_transport)
    assert type(config.protocol) is RestJsonClientProtocol


async def test_stop_waits_for_a_send_under_way_but_not_for_ever() -> None:
    sends = SendsInFlight()
    await asyncio.wait_for(sends.drain(10.0), 0.1)  # nothing under way: at once
    release = asyncio.Event()

    async def send() -> None:
        with sends.counting():
            await release.wait()

    sending = asyncio.create_task(send())
    await asyncio.sleep(0)
    draining = asyncio.create_task(sends.drain(10.0))
    await asyncio.sleep(0.01)
    assert not draining.done()
    release.set()
    await asyncio.wait_for(draining, 1.0)
    await sending
    with sends.counting():
        await asyncio.wait_for(sends.drain(0.05), 1.0)  # a send that never ends: it gives up after its timeout


async def test_a_request_writer_left_waiting_is_cancelled_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="agent.bedrock_endpoint")
    writer = asyncio.create_task(asyncio.Event().wait())
    await end_orphan_writers({writer})
    assert writer.cancelled()
    assert "nova sonic: ended 1 request writer(s) a closed stream left waiting" in caplog.messages

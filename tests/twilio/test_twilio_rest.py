"""The asynchronous Twilio REST client and its timeout."""

from __future__ import annotations

import asyncio

import pytest

from telephony.twilio.rest import TimedAsyncHttpClient, rest_client

ACCOUNT = "AC" + "1" * 32


def test_rest_client_needs_a_running_loop() -> None:
    with pytest.raises(RuntimeError, match="running event loop"):
        rest_client(ACCOUNT, "t")


async def test_rest_client_defaults_to_an_async_transport_with_a_timeout() -> None:
    client = rest_client(ACCOUNT, "t")
    try:
        assert isinstance(client.http_client, TimedAsyncHttpClient)
        assert client.http_client.timeout and client.http_client.timeout > 0
        assert client.account_sid == ACCOUNT
    finally:
        await client.http_client.close()


async def test_the_timeout_applies_to_a_stalled_server() -> None:
    """The SDK's own client would wait forever here; ours gives up after its timeout (loopback only)."""
    connections: list[asyncio.StreamWriter] = []

    async def never_answer(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    http = TimedAsyncHttpClient(timeout=0.2)
    try:
        request = asyncio.create_task(http.request("GET", f"http://127.0.0.1:{port}/"))
        done, _ = await asyncio.wait([request], timeout=5)
        assert done, "the request ignored its timeout"
        with pytest.raises(asyncio.TimeoutError):
            request.result()
    finally:
        await http.close()
        for writer in connections:
            writer.close()
        server.close()
        await server.wait_closed()

"""A bare HTTP/2 client for the local Nova: sends exactly the events it is given, for protocol tests.

The real client (strands + the AWS SDK) only sends well-formed sequences; this one can send anything,
so tests can show that the emulator catches a mistake, and observe resets and exceptions directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote, urlsplit

import h2.config
import h2.connection
import h2.events

from .framing import NovaEvent, ServerMessageReader, encode_client_envelope, encode_end_of_input

__all__ = ["RawNovaClient"]


class RawNovaClient:
    """``async with RawNovaClient(endpoint, ca_file) as client:`` then ``send``, ``end``, ``receive``."""

    def __init__(self, endpoint: str, ca_file: Path, model_id: str = "amazon.nova-2-sonic-v1:0") -> None:
        self._url = urlsplit(endpoint)
        self._ca_file = ca_file
        self._model_id = model_id
        self._h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._stream_id = 0
        self._messages = ServerMessageReader()
        self._inbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.body = b""

    async def __aenter__(self) -> Self:
        context = ssl.create_default_context(cafile=str(self._ca_file))
        context.set_alpn_protocols(["h2"])
        self._reader, self._writer = await asyncio.open_connection(
            self._url.hostname, self._url.port, ssl=context, server_hostname=self._url.hostname
        )
        self._h2.initiate_connection()
        self._stream_id = self._h2.get_next_available_stream_id()
        self._h2.send_headers(
            self._stream_id,
            [
                (":method", "POST"),
                (":scheme", "https"),
                (":authority", self._url.netloc),
                (":path", f"/model/{quote(self._model_id, safe='')}/invoke-with-bidirectional-stream"),
                ("content-type", "application/vnd.amazon.eventstream"),
            ],
        )
        await self._flush()
        self._pump = asyncio.create_task(self._read())
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._pump is not None:
            self._pump.cancel()
            await asyncio.gather(self._pump, return_exceptions=True)
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()

    async def send(self, name: str, body: dict[str, Any]) -> None:
        """One event, wrapped as the SDK wraps it (unsigned)."""
        self._h2.send_data(self._stream_id, encode_client_envelope(name, body))
        await self._flush()

    async def send_bytes(self, data: bytes) -> None:
        """Raw bytes on the request body: for framing errors."""
        self._h2.send_data(self._stream_id, data)
        await self._flush()

    async def end(self) -> None:
        """The empty envelope, then END_STREAM: how the SDK closes its input."""
        self._h2.send_data(self._stream_id, encode_end_of_input(), end_stream=True)
        await self._flush()

    async def receive(self, timeout: float = 2.0) -> tuple[str, Any]:
        """Next ``("event", NovaEvent)``, ``("exception", (type, body))``, ``("end", None)`` or ``("reset", code)``."""
        async with asyncio.timeout(timeout):
            return await self._inbox.get()

    async def receive_until_end(self, timeout: float = 2.0) -> list[tuple[str, Any]]:
        items: list[tuple[str, Any]] = []
        while not items or items[-1][0] not in ("end", "reset"):
            items.append(await self.receive(timeout))
        return items

    async def events(self, timeout: float = 2.0) -> list[NovaEvent]:
        return [item for kind, item in await self.receive_until_end(timeout) if kind == "event"]

    async def _read(self) -> None:
        assert self._reader is not None
        while data := await self._reader.read(65536):
            for event in self._h2.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    self.headers = {
                        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
                        for k, v in event.headers or []
                    }
                    self.status = int(self.headers[":status"])
                elif isinstance(event, h2.events.DataReceived):
                    self._h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    if self.status == 200:
                        for item in self._messages.feed(event.data):
                            self._inbox.put_nowait(item)
                    else:
                        self.body += event.data
                elif isinstance(event, h2.events.StreamEnded):
                    self._inbox.put_nowait(("end", None))
                elif isinstance(event, h2.events.StreamReset):
                    self._inbox.put_nowait(("reset", event.error_code))
            await self._flush()
        self._inbox.put_nowait(("end", None))

    async def _flush(self) -> None:
        assert self._writer is not None
        self._writer.write(self._h2.data_to_send())
        await self._writer.drain()

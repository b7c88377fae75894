"""Word between the workers of one server: small JSON datagrams over Unix sockets in the run folder.

A webhook, a status callback and a media stream of one call may reach different workers. Most of a
call's state needs no sharing (its stream and agent live where the stream is), but a few things must
reach the worker that holds them: "your pre-warmed agent's stream started elsewhere: stop it now",
"Twilio says this call is over" (a pre-warm, a caller on hold), "answering-machine detection says …".
Each worker binds ``worker-<n>.sock`` in the run folder (a private ``mkdtemp`` folder: only this
server's processes can write there) and hands what it receives to the handler for its ``kind``.
A message that cannot be delivered (the worker is restarting) is logged and dropped: every such
state also has a timer of its own (a pre-warm's TTL), so nothing waits forever on a lost word.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 4096
Handler = Callable[[dict[str, Any]], None]


def socket_path(run_dir: Path, worker: int) -> Path:
    return run_dir / f"worker-{worker}.sock"


class Peers:
    """This worker's end: :meth:`tell` or :meth:`broadcast` to the others, handlers for what arrives."""

    def __init__(self, run_dir: Path, worker: int, workers: int, handlers: Mapping[str, Handler]) -> None:
        self.worker = worker
        self._run_dir = run_dir
        self._others = [index for index in range(workers) if index != worker]
        self._handlers = dict(handlers)
        self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sender.setblocking(False)
        self._transport: asyncio.DatagramTransport | None = None

    async def start(self) -> None:
        path = socket_path(self._run_dir, self.worker)
        path.unlink(missing_ok=True)  # left by this worker's previous process
        receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        receiver.bind(str(path))
        receiver.setblocking(False)
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.create_datagram_endpoint(lambda: _Receiver(self._dispatch), sock=receiver)

    def tell(self, worker: int, kind: str, **fields: str) -> None:
        """Send ``kind`` to one worker; never blocks (a full or missing socket drops it, logged)."""
        data = json.dumps({"kind": kind, "from": self.worker, **fields}).encode()
        try:
            self._sender.sendto(data, str(socket_path(self._run_dir, worker)))
        except OSError as error:
            log.warning("could not tell worker %d %s (%s): %s", worker, kind, fields.get("call_sid", ""), error)

    def broadcast(self, kind: str, **fields: str) -> None:
        for worker in self._others:
            self.tell(worker, kind, **fields)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            socket_path(self._run_dir, self.worker).unlink(missing_ok=True)
        self._sender.close()

    def _dispatch(self, data: bytes) -> None:
        try:
            message = json.loads(data)
            handler = self._handlers[message["kind"]] if isinstance(message, dict) else None
        except (ValueError, KeyError, TypeError):
            handler = None
        if handler is None:
            log.warning("ignored a malformed message from another worker: %r", data[:200])
            return
        try:
            handler(message)
        except Exception:  # one bad message must not stop the others
            log.exception("handling %s from worker %s failed", message.get("kind"), message.get("from"))


class _Receiver(asyncio.DatagramProtocol):
    def __init__(self, dispatch: Callable[[bytes], None]) -> None:
        self._dispatch = dispatch

    def datagram_received(self, data: bytes, addr: Any) -> None:
        if len(data) <= MAX_MESSAGE_BYTES:
            self._dispatch(data)

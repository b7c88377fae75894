"""Process mode shared by the local model servers (local Nova, OpenAI Realtime, Gemini Live).

A benchmark or a user starts one with ``python -m telephony.simulation.local_<model>``: it copies its throwaway CA
where it was asked (the client must trust it), prints ``NAME=value`` lines saying where it listens, serves until
SIGINT or SIGTERM, then logs what it saw (benchmarks parse that line) and every protocol violation.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import signal
from collections.abc import Callable, Mapping, Sized
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol


class LocalServer(AbstractAsyncContextManager[Any], Protocol):
    @property
    def ca_file(self) -> Path | None: ...

    @property
    def sessions(self) -> Sized: ...

    @property
    def violations(self) -> list[str]: ...


async def serve_until_signalled(
    server: LocalServer,
    ca_out: Path,
    announce: Callable[[], Mapping[str, str]],
    stopping: str,
    log: logging.Logger,
) -> None:
    """Serve until a signal; ``announce`` is read once the server listens; ``stopping`` takes the count of
    connections and of violations (e.g. ``"local nova stopping: %d streams, %d violations"``)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with server:
        if server.ca_file is not None:
            ca_out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(server.ca_file, ca_out)
        for name, value in announce().items():
            print(f"{name}={value}", flush=True)
        await stop.wait()
        log.info(stopping, len(server.sessions), len(server.violations))
        for violation in server.violations:
            log.warning("%s", violation)

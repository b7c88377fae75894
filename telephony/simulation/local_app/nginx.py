"""Debian's nginx with the shipped config's routing, on loopback ports: for tests and benchmarks.

The config is :func:`telephony.operations.nginx.site_config`'s, as in ``deploy/nginx/voicebot.conf``,
with its addresses moved: it listens on the given port on 127.0.0.1 and sends to ``VOICEBOT_PORT`` (the
port the workers share, with ``VOICEBOT_PROXY=external``) and the ports above it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from telephony.operations.nginx import command, nginx_binary, site_config, write_config

__all__ = ["local_nginx", "nginx_binary", "shipped_site"]


def shipped_site(listen_port: int, base_port: int) -> str:
    """The shipped routing for a server on ``base_port`` (shared) with eight worker ports above it."""
    workers = [f"127.0.0.1:{base_port + 1 + index}" for index in range(8)]
    return site_config(f"127.0.0.1:{listen_port}", workers, [f"127.0.0.1:{base_port}"])


@asynccontextmanager
async def local_nginx(folder: Path, listen_port: int, base_port: int) -> AsyncIterator[asyncio.subprocess.Process]:
    """Run nginx in the foreground with the shipped routing until the block ends."""
    binary = nginx_binary()
    if binary is None:
        raise FileNotFoundError("nginx is not installed (Debian: apt-get install nginx-light)")
    main = write_config(folder, shipped_site(listen_port, base_port))
    check = await asyncio.create_subprocess_exec(*command(binary, main, "-t", "-q"), stderr=asyncio.subprocess.PIPE)
    _, errors = await check.communicate()
    if check.returncode != 0:
        raise RuntimeError(f"nginx rejected the config: {errors.decode(errors='replace')}")
    process = await asyncio.create_subprocess_exec(*command(binary, main))
    try:
        for _ in range(100):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", listen_port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        yield process
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()

"""Debian's nginx with the shipped ``deploy/nginx/voicebot.conf``, on loopback ports: for tests and benchmarks.

The config is used as shipped except for its addresses: ``listen 80`` becomes the given port on
127.0.0.1, and the workers' ports 8080-8088 move to the given ``VOICEBOT_PORT`` and the ports above it.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "voicebot.conf"
SHIPPED_BASE_PORT = 8080


def nginx_binary() -> str | None:
    """nginx on PATH or where Debian puts it (None: not installed; ``apt-get install nginx-light``)."""
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


def site_config(listen_port: int, base_port: int, text: str | None = None) -> str:
    """The shipped config with its addresses moved to ``listen_port`` and ``base_port`` (+ 1 + n for worker n)."""
    text = CONFIG.read_text() if text is None else text
    text = re.sub(r"listen 80;", f"listen 127.0.0.1:{listen_port};", text)

    def move(match: re.Match[str]) -> str:
        return f"127.0.0.1:{base_port + int(match.group(1)) - SHIPPED_BASE_PORT}"

    return re.sub(r"127\.0\.0\.1:(80[0-9]{2})\b", move, text)


def main_config(folder: Path, site: Path) -> str:
    user = "user root;\n" if os.geteuid() == 0 else ""
    temp = "\n".join(
        f"    {kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}daemon off;\nworker_processes 1;\npid {folder / 'nginx.pid'};\nerror_log {folder / 'error.log'} warn;\n"
        "events { worker_connections 4096; }\n"
        f"http {{\n    access_log {folder / 'access.log'};\n{temp}\n    include {site};\n}}\n"
    )


@asynccontextmanager
async def local_nginx(folder: Path, listen_port: int, base_port: int) -> AsyncIterator[asyncio.subprocess.Process]:
    """Run nginx in the foreground with the shipped config until the block ends."""
    binary = nginx_binary()
    if binary is None:
        raise FileNotFoundError("nginx is not installed (Debian: apt-get install nginx-light)")
    folder.mkdir(parents=True, exist_ok=True)
    site = folder / "voicebot.conf"
    site.write_text(site_config(listen_port, base_port))
    main = folder / "nginx.conf"
    main.write_text(main_config(folder, site))
    check = await asyncio.create_subprocess_exec(
        binary, "-t", "-q", "-c", str(main), "-p", str(folder), stderr=asyncio.subprocess.PIPE
    )
    _, errors = await check.communicate()
    if check.returncode != 0:
        raise RuntimeError(f"nginx rejected the config: {errors.decode(errors='replace')}")
    process = await asyncio.create_subprocess_exec(binary, "-c", str(main), "-p", str(folder))
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

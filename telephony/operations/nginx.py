"""The nginx config that routes each call's requests to its worker, and nginx run by ``serve --workers N``.

A call reaches the server several times: the webhook (any worker answers it and pre-warms the call's
agent), then its media stream, and with a warm transfer the briefing call's stream and status
callbacks. Everything a worker hands out names it in the path (``/w/<n>/...``, see
``telephony.twilio.stream_route``), and this config sends ``/w/<n>/`` to worker n's own port, the
console to worker 0 (its pages and its calls live there), everything else to any worker. If worker n is
gone (restarting), any worker takes its requests (a stream then starts cold).

One renderer makes both the shipped ``deploy/nginx/voicebot.conf`` (for a proxy you run yourself, in
front of ``VOICEBOT_PROXY=external``; a test keeps the file equal to :func:`site_config`'s output) and
the config ``serve --workers N`` runs Debian's nginx with (``VOICEBOT_PROXY=nginx``, the default).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

SHIPPED = Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "voicebot.conf"
SHIPPED_PORT = 8080
"""The ``VOICEBOT_PORT`` the shipped file is written for (workers on 8081-8088, the shared port 8080)."""
INSTALL_HINT = "Debian/Ubuntu: apt-get install nginx-light; Fedora: dnf install nginx; macOS: brew install nginx"

_HEADER = """\
# voicebot behind nginx: each call's requests to the worker that holds the call.
#
# Written for `voicebot serve --workers N` (N <= 8) with VOICEBOT_PROXY=external and VOICEBOT_PORT=8080: the
# workers share 127.0.0.1:8080 and worker n also listens on 127.0.0.1:808(1+n). (With the default
# VOICEBOT_PROXY=nginx, `voicebot serve` renders this same config for its ports and runs nginx itself.)
# Whatever worker n hands Twilio names it in the path: the media stream wss://PUBLIC/w/<n>/media-stream,
# a warm transfer's status callbacks https://PUBLIC/w/<n>/status/...; the location below sends /w/<n>/ to
# worker n's own port, path unchanged (the worker checks Twilio's signature over it). /console goes to
# worker 0, which runs the console. If a worker is gone (restarting), any worker takes its requests.
#
# Install: copy into nginx's http {} context (Debian: /etc/nginx/conf.d/voicebot.conf), set `listen`
# (TLS: `listen 443 ssl;` plus your certificate, or terminate TLS in front of nginx), and set
# PUBLIC_URL to this server's public https:// address. Regenerate: telephony.operations.nginx.site_config.
"""

_PROXY = """\
        proxy_http_version 1.1;
        proxy_set_header Upgrade $http_upgrade;
        proxy_set_header Connection $voicebot_connection;
        proxy_set_header Host $http_host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_buffering off;
        proxy_read_timeout 2h;
        proxy_send_timeout 2h;
"""


def site_config(listen: str, workers: Sequence[str], any_worker: Sequence[str]) -> str:
    """The ``server`` block and its maps: ``workers[n]`` is worker n's own address, ``any_worker`` the webhooks'."""
    addresses = "".join(f"    {index} {address};\n" for index, address in enumerate(workers))
    upstream = "".join(f"    server {address};\n" for address in any_worker)
    return f"""{_HEADER}
map $http_upgrade $voicebot_connection {{
    default upgrade;
    ''      close;
}}

# Worker n's own address (VOICEBOT_PORT + 1 + n).
map $voicebot_worker $voicebot_worker_address {{
{addresses}    default "";
}}

# Webhooks, /health, /metrics (summed over the workers): any worker.
upstream voicebot_any_worker {{
{upstream}}}

server {{
    listen {listen};
    server_name _;
    client_max_body_size 64k;

    # What worker n handed out (media streams, status callbacks): to worker n.
    location ~ ^/w/(?<voicebot_worker>[0-9]+)/ {{
        if ($voicebot_worker_address = "") {{
            return 404;
        }}
        proxy_pass http://$voicebot_worker_address;
{_PROXY}        error_page 502 504 = @voicebot_any_worker;
    }}

    # The call console runs in worker 0.
    location /console {{
        proxy_pass http://{workers[0]};
{_PROXY}        error_page 502 504 = @voicebot_any_worker;
    }}

    location / {{
        proxy_pass http://voicebot_any_worker;
{_PROXY}    }}

    location @voicebot_any_worker {{
        proxy_pass http://voicebot_any_worker;
{_PROXY}    }}
}}
"""


def shipped_config() -> str:
    """What ``deploy/nginx/voicebot.conf`` holds: eight workers' ports above 8080, the shared port 8080."""
    return site_config(
        "80",
        [f"127.0.0.1:{SHIPPED_PORT + 1 + index}" for index in range(8)],
        [f"127.0.0.1:{SHIPPED_PORT}"],
    )


def main_config(folder: Path, site: Path) -> str:
    """A whole nginx.conf around ``site`` that keeps every file in ``folder`` (runs unprivileged, or as root)."""
    user = "user root;\n" if os.geteuid() == 0 else ""
    temp = "\n".join(
        f"    {kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}daemon off;\nworker_processes 1;\npid {folder / 'nginx.pid'};\nerror_log {folder / 'error.log'} warn;\n"
        "events { worker_connections 4096; }\n"
        f"http {{\n    access_log off;\n{temp}\n    include {site};\n}}\n"
    )


def nginx_binary() -> str | None:
    """nginx on PATH or where Debian puts it (None: not installed)."""
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


def write_config(folder: Path, site: str) -> Path:
    """Write ``site`` and a main config for it into ``folder``; returns the main config's path."""
    folder.mkdir(parents=True, exist_ok=True)
    site_path = folder / "voicebot.conf"
    site_path.write_text(site)
    main = folder / "nginx.conf"
    main.write_text(main_config(folder, site_path))
    return main


def command(binary: str, main: Path, *extra: str) -> list[str]:
    return [binary, "-c", str(main), "-p", str(main.parent), *extra]

"""Loopback ports for servers that tests start as child processes (``voicebot serve``, nginx).

A child process cannot be handed a socket bound here (``voicebot serve`` takes ``--port``), so its port is
chosen, released, then bound again by the child. Probing with ``bind(("127.0.0.1", 0))`` makes that a race
under pytest-xdist: the kernel hands the same ephemeral range to every other test's servers and client
connections, and one of them may take the port in between. These ports come from below the kernel's ephemeral
range (which neither ``bind(0)`` nor ``connect()`` ever uses), from a band of its own for each xdist worker, and
are never handed out twice in one process: only a process that asks for that very number can take one.
"""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

LOWEST = 10_000
"""Below this sit well-known services' ports; above it, up to the ephemeral range, ours."""

_handed_out: set[int] = set()


def ephemeral_low() -> int:
    """Where the kernel's ephemeral range starts (Linux's default 32768 where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def worker_band() -> range:
    """This xdist worker's share of the ports between ``LOWEST`` and the ephemeral range (all of it without xdist)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0
    count = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    width = (ephemeral_low() - LOWEST) // count
    return range(LOWEST + index * width, LOWEST + (index + 1) * width)


def free_ports(count: int = 1) -> int:
    """The first of ``count`` consecutive free loopback ports (``serve --workers``'s own ports sit above it)."""
    band = worker_band()
    for _ in range(200):
        base = random.randrange(band.start, band.stop - count)
        run = range(base, base + count)
        if _handed_out.intersection(run) or not all(_bindable(port) for port in run):
            continue
        _handed_out.update(run)
        return base
    raise RuntimeError(f"no run of {count} free ports in {band}")


def free_port() -> int:
    """One free loopback port (see ``free_ports``)."""
    return free_ports(1)


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True

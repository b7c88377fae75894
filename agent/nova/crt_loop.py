"""One CRT event-loop group for every Nova Sonic connection in the process, instead of one per call.

The AWS SDK's CRT HTTP client (``smithy_http.aio.crt.AWSCRTHTTPClient``) builds its own
``EventLoopGroup(1)`` when it is given none, and strands builds a new client for every connection, so
each call runs its own I/O thread: 40 calls, 40 threads, each waking for every event of its stream
and waiting on the GIL to hand it to asyncio (about 3,000 context switches a second at 20 calls).
The client takes an ``eventloop`` argument, so a connection can share one group instead; its threads
multiplex every socket with epoll. The clients stay one per call (strands closes its client, and with
it the transport, when a call's model stops), so a failing connection still takes one call down only.

A shared group's threads live as long as the process, so each keeps a Python thread state
(:func:`keep_thread_state`). awscrt enters Python from its I/O thread with ``PyGILState_Ensure`` and leaves
with ``PyGILState_Release`` for every body chunk, body read and write completion; on a thread with no
thread state of its own, each entry builds one (and its 16 KB frame stack, mapped and unmapped with two
system calls) and each exit destroys it: about 60 times a second per call. With one kept, an entry only takes
the GIL. Each also asks the kernel not to let it preempt the serving thread (:func:`wait_for_gil_holder`).

Upstream: the SDK should share a default event-loop group across clients, as the CRT itself offers
(``EventLoopGroup.get_or_create_static_default()``), rather than build one per client; awscrt could keep a
thread state on its event-loop threads.
"""

from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass
from typing import Any

from awscrt import io as crt_io

from .log import log

__all__ = [
    "SharedEventLoop",
    "keep_thread_state",
    "on_shared_loop",
    "settle_io_thread",
    "shared_event_loop",
    "wait_for_gil_holder",
]


@dataclass(frozen=True)
class SharedEventLoop:
    """What ``AWSCRTHTTPClient(eventloop=...)`` reads: a client bootstrap over a shared event-loop group."""

    threads: int
    group: crt_io.EventLoopGroup
    bootstrap: crt_io.ClientBootstrap


_lock = threading.Lock()
_loops: dict[int, SharedEventLoop] = {}
_thread = threading.local()


def keep_thread_state() -> None:
    """Called from Python code that a shared group's I/O thread runs: keep that thread's Python thread state.

    One ``PyGILState_Ensure`` never released holds the state awscrt's own entries would otherwise build and
    destroy each time. Only for a shared group's threads, which never end: a thread that ends with a kept state
    leaks it (a few KB), so per-connection threads (``VOICEBOT_CRT_THREADS=0``) must not call this.
    """
    if getattr(_thread, "kept", False):
        return
    ctypes.pythonapi.PyGILState_Ensure()
    _thread.kept = True


def wait_for_gil_holder() -> None:
    """Make the calling thread (a shared group's I/O thread) one whose wakeups never preempt (Linux SCHED_BATCH).

    Everything the I/O thread hands to Python needs the GIL, which the serving thread holds while it runs. Woken
    on the serving thread's CPU (a response chunk, a write done), the I/O thread used to preempt it at once, only
    to block on the GIL and switch back: two context switches per wakeup. As a batch thread it runs when the
    serving thread next waits (in its event loop, usually within a millisecond) or its time slice ends, and on an
    idle CPU at once, as before. Elsewhere (no ``sched_setscheduler``) nothing changes.
    """
    if not hasattr(os, "sched_setscheduler") or not hasattr(os, "SCHED_BATCH"):
        return
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except OSError as error:  # a sandbox that forbids it: the thread keeps the default policy
        log.debug("CRT I/O thread keeps its scheduling policy: %r", error)


def settle_io_thread() -> None:
    """Run on a shared group's I/O thread by the first of our callbacks it runs (then again at no cost)."""
    if getattr(_thread, "kept", False):
        return
    wait_for_gil_holder()
    keep_thread_state()


def shared_event_loop(threads: int) -> SharedEventLoop:
    """The process's shared group of ``threads`` I/O threads (made on first use, then reused)."""
    if threads < 1:
        raise ValueError("a shared CRT event loop needs at least one thread")
    with _lock:
        loop = _loops.get(threads)
        if loop is None:
            group = crt_io.EventLoopGroup(threads)
            resolver = crt_io.DefaultHostResolver(group)
            loop = SharedEventLoop(threads, group, crt_io.ClientBootstrap(group, resolver))
            _loops[threads] = loop
        return loop


def on_shared_loop(transport: Any, threads: int) -> Any:
    """The same kind of CRT client as ``transport`` (strands' subclass), on the process's shared event loop."""
    try:
        return type(transport)(eventloop=shared_event_loop(threads))
    except TypeError:  # a transport that takes no event loop: leave it as strands made it
        log.warning("VOICEBOT_CRT_THREADS: %s takes no shared event loop; keeping its own", type(transport).__name__)
        return transport

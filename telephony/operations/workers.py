"""``voicebot serve --workers N``: N worker processes, one port they share and one port each.

One Python process runs on one core (the GIL), so a server uses every core by running several. The
supervisor (this module) binds the public port once and starts N workers of ``voicebot serve`` that
all accept on it (the kernel hands each new connection to one of them), and each worker also listens
on a port of its own, ``VOICEBOT_PORT + 1 + i``. A webhook may reach any worker; that worker pre-warms
the call's agent and names itself in the TwiML's stream URL (``/w/<i>/media-stream``), so a proxy that
routes ``/w/<i>/`` to worker *i*'s own port (``deploy/nginx/voicebot.conf``) brings the stream to the
agent that waits for it. Without such a proxy every call still works; its stream just lands on any
worker and, one time in N, finds its agent there (the others start cold: ``voicebot_prewarm_total``).

The supervisor forwards SIGTERM/SIGINT to every worker, so they drain together (each one's
``DrainingServer``), and waits for all of them; a second signal is forwarded too and stops them at
once. A worker that dies on its own is started again. Metrics: each worker writes its figures under
``PROMETHEUS_MULTIPROC_DIR`` and ``/metrics`` on any of them shows the sum (``telephony.operations.metrics``).
"""

from __future__ import annotations

import ctypes
import logging
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from telephony.config import Settings
from telephony.operations.metrics import MULTIPROCESS_DIR_ENV

log = logging.getLogger(__name__)

RESTART_DELAYS_S = (1.0, 2.0, 5.0, 10.0, 30.0)
"""Back-off before starting a crashed worker again (the last one repeats)."""
HEALTHY_AFTER_S = 60.0
"""A worker that ran this long before dying starts again after the first delay, not a longer one."""
_POLL_S = 0.2
_PR_SET_PDEATHSIG = 1


def worker_port(settings: Settings, index: int) -> int:
    """Worker ``index``'s own port, where a proxy sends the streams it pre-warmed (``/w/<index>/``)."""
    return settings.port + 1 + index


def calls_per_worker(settings: Settings, workers: int) -> int:
    """Each worker's share of ``VOICEBOT_MAX_CALLS`` (the limit is the server's, not each worker's)."""
    return max(1, math.ceil(settings.max_calls / workers))


@dataclass
class Worker:
    index: int
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    failures: int = 0
    restart_at: float | None = None


@dataclass
class Supervisor:
    """Starts, watches and stops the workers; see the module docstring."""

    settings: Settings
    argv: Sequence[str]
    """The ``voicebot`` arguments (``serve`` ...) each worker runs with, plus its own slot."""
    count: int
    workers: list[Worker] = field(default_factory=list)
    _signals: int = 0
    _metrics_dir: Path | None = None
    _own_metrics_dir: bool = False

    def run(self) -> int:
        """Serve until signalled and every worker has drained; returns the worst worker exit status."""
        listener = socket.create_server((self.settings.host, self.settings.port), backlog=2048)
        listener.set_inheritable(True)
        self._prepare_metrics_dir()
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            self.workers = [Worker(index) for index in range(self.count)]
            for worker in self.workers:
                self._start(worker, listener.fileno())
            self._describe()
            return self._watch(listener.fileno())
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            listener.close()
            if self._own_metrics_dir and self._metrics_dir is not None:
                shutil.rmtree(self._metrics_dir, ignore_errors=True)

    def _prepare_metrics_dir(self) -> None:
        given = os.environ.get(MULTIPROCESS_DIR_ENV)
        if given:
            self._metrics_dir = Path(given)
            self._metrics_dir.mkdir(parents=True, exist_ok=True)
            stale = list(self._metrics_dir.glob("*.db"))
            for path in stale:
                path.unlink()
            if stale:
                log.info("cleared %d metric files left in %s by an earlier run", len(stale), given)
        else:
            self._metrics_dir = Path(tempfile.mkdtemp(prefix="voicebot-metrics-"))
            self._own_metrics_dir = True

    def _describe(self) -> None:
        own = ", ".join(f"w{w.index}={self.settings.host}:{worker_port(self.settings, w.index)}" for w in self.workers)
        log.info(
            "%d workers share http://%s:%d (webhooks, metrics) and each has its own port (%s): route "
            "/w/<n>/media-stream to worker n's own port (deploy/nginx/voicebot.conf) so every stream reaches "
            "the worker that pre-warmed its agent; each worker takes up to %d calls",
            self.count,
            self.settings.host,
            self.settings.port,
            own,
            calls_per_worker(self.settings, self.count),
        )

    def _start(self, worker: Worker, listen_fd: int) -> None:
        assert self._metrics_dir is not None
        env = {
            **os.environ,
            "VOICEBOT_WORKERS": str(self.count),
            "VOICEBOT_WORKER_INDEX": str(worker.index),
            "VOICEBOT_MAX_CALLS": str(calls_per_worker(self.settings, self.count)),
            MULTIPROCESS_DIR_ENV: str(self._metrics_dir),
        }
        command = [sys.executable, "-m", "telephony.cli", *self.argv, "--listen-fd", str(listen_fd)]
        worker.process = subprocess.Popen(
            command,
            env=env,
            pass_fds=(listen_fd,),
            start_new_session=True,  # a terminal's Ctrl-C reaches the supervisor only, which forwards it once
            preexec_fn=_die_with_parent,
        )
        worker.started_at = time.monotonic()
        worker.restart_at = None

    def _on_signal(self, sig: int, _: FrameType | None) -> None:
        self._signals += 1
        what = "draining every worker" if self._signals == 1 else "stopping every worker now"
        log.warning("%s: %s", signal.Signals(sig).name, what)
        for worker in self.workers:
            if worker.process is not None and worker.process.poll() is None:
                worker.process.send_signal(sig)

    def _watch(self, listen_fd: int) -> int:
        worst = 0
        while True:
            running = 0
            now = time.monotonic()
            for worker in self.workers:
                process = worker.process
                if process is not None and process.poll() is None:
                    running += 1
                    continue
                if process is not None:
                    worst = max(worst, self._reap(worker, now))
                if self._signals:
                    continue
                if worker.restart_at is not None and now >= worker.restart_at:
                    log.warning("starting worker %d again", worker.index)
                    self._start(worker, listen_fd)
                    running += 1
                elif worker.restart_at is not None:
                    running += 1  # waiting to start again
            if self._signals and running == 0:
                log.info("all %d workers stopped", self.count)
                return worst
            time.sleep(_POLL_S)

    def _reap(self, worker: Worker, now: float) -> int:
        """A worker exited: forget its live metrics; plan its restart unless the server is stopping."""
        assert worker.process is not None
        code = worker.process.returncode
        _mark_dead(worker.process.pid, self._metrics_dir)
        worker.process = None
        if self._signals:
            log.info("worker %d stopped (exit status %d)", worker.index, code)
            return 0 if code in (0, -signal.SIGTERM, -signal.SIGINT) else abs(code)
        if now - worker.started_at >= HEALTHY_AFTER_S:
            worker.failures = 0
        delay = RESTART_DELAYS_S[min(worker.failures, len(RESTART_DELAYS_S) - 1)]
        worker.failures += 1
        worker.restart_at = now + delay
        log.error(
            "worker %d exited unexpectedly (exit status %s); its calls ended; starting it again in %.0fs",
            worker.index,
            code,
            delay,
        )
        return 0


def _mark_dead(pid: int, folder: Path | None) -> None:
    if folder is None:
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid, str(folder))


def _die_with_parent() -> None:
    """In the worker, before exec: get SIGTERM (and so drain) if the supervisor is killed outright."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the worker outlives a killed supervisor
        pass


def run_workers(settings: Settings, argv: Sequence[str], count: int) -> int:
    return Supervisor(settings, argv, count).run()


def listening_sockets(settings: Settings, listen_fd: int) -> list[socket.socket]:
    """In a worker: the shared socket handed down by the supervisor, and this worker's own port."""
    shared = socket.socket(fileno=listen_fd)
    own = socket.create_server((settings.host, worker_port(settings, settings.worker_index)), backlog=2048)
    return [shared, own]

"""``voicebot serve --workers N``: N worker processes behind one public port, each call kept on one worker.

One Python process runs on one core (the GIL), so a server uses every core by running several. A
call reaches the server more than once (the webhook pre-warms its agent, the stream arrives a second
later on its own connection, a warm transfer adds callbacks), and each worker names itself in what it
hands out (``/w/<n>/...``), so a proxy must route those paths to worker n. Who runs it
(``VOICEBOT_PROXY``):

- ``nginx`` (the default): this supervisor renders ``telephony.operations.nginx``'s config for the chosen
  ports, checks it with ``nginx -t``, and runs nginx on ``VOICEBOT_HOST:VOICEBOT_PORT`` in front of the
  workers (worker n on ``127.0.0.1:VOICEBOT_PORT+1+n``), started and stopped with the server;
- ``external``: you run the proxy (``deploy/nginx/voicebot.conf``); the workers share
  ``VOICEBOT_PORT`` (the kernel hands each connection to one of them) and worker n also listens on
  ``VOICEBOT_PORT+1+n``.

Whatever the routing, the workers share one call table (``telephony.operations.lines``: one
``VOICEBOT_MAX_CALLS`` for the server) and a message channel (``telephony.operations.peers``) in a
private run folder. SIGTERM/SIGINT are forwarded to every worker, so they drain together (nginx keeps
carrying their calls until the last one has stopped); a second signal stops them at once. A worker (or
nginx) that dies on its own is started again, and the lines its calls held are freed. Metrics: each
worker writes its figures under ``PROMETHEUS_MULTIPROC_DIR``; ``/metrics`` on any shows the sum.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from telephony.config import Settings
from telephony.operations import nginx
from telephony.operations.lines import Lines, lines_path
from telephony.operations.metrics import MULTIPROCESS_DIR_ENV

log = logging.getLogger(__name__)

RESTART_DELAYS_S = (1.0, 2.0, 5.0, 10.0, 30.0)
"""Back-off before starting a crashed worker (or nginx) again (the last one repeats)."""
HEALTHY_AFTER_S = 60.0
"""A child that ran this long before dying starts again after the first delay, not a longer one."""
NGINX_STOP_S = 10.0
_POLL_S = 0.2
_PR_SET_PDEATHSIG = 1


class ProxyMissing(RuntimeError):
    """``--workers N`` with ``VOICEBOT_PROXY=nginx`` on a machine without nginx; the message says what to do."""


def worker_port(settings: Settings, index: int) -> int:
    """Worker ``index``'s own port, where the proxy sends what it handed out (``/w/<index>/``)."""
    return settings.port + 1 + index


def worker_host(settings: Settings) -> str:
    """Where a worker's own port listens: loopback behind the nginx this server runs, else VOICEBOT_HOST."""
    return "127.0.0.1" if settings.proxy == "nginx" else settings.host


def proxy_problem(settings: Settings, count: int) -> str | None:
    """Why ``count`` workers cannot be served as configured (None: they can)."""
    if count > 1 and settings.proxy == "nginx" and nginx.nginx_binary() is None:
        return (
            f"--workers {count} needs a proxy that routes each call's stream to the worker that answered its "
            f"webhook, and nginx is not installed ({nginx.INSTALL_HINT}). Install it, or run your own proxy "
            "with deploy/nginx/voicebot.conf and VOICEBOT_PROXY=external, or serve with one process (--workers 1)."
        )
    return None


@dataclass
class Child:
    """A process the supervisor keeps running: a worker, or nginx."""

    name: str
    start: Callable[[], subprocess.Popen[bytes]]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    failures: int = 0
    restart_at: float | None = None

    def launch(self) -> None:
        self.process = self.start()
        self.started_at = time.monotonic()
        self.restart_at = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class Supervisor:
    """Starts, watches and stops the workers (and nginx); see the module docstring."""

    settings: Settings
    argv: Sequence[str]
    """The ``voicebot`` arguments (``serve`` ...) each worker runs with."""
    count: int
    workers: list[Child] = field(default_factory=list)
    proxy: Child | None = None
    _signals: int = 0
    _run_dir: Path | None = None
    _metrics_dir: Path | None = None
    _listener: socket.socket | None = None

    def run(self) -> int:
        """Serve until signalled and every worker has drained; returns the worst worker exit status."""
        self._run_dir = Path(tempfile.mkdtemp(prefix="voicebot-run-"))  # private (0700): the workers' shared state
        lines = Lines(lines_path(str(self._run_dir)))
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            self._prepare_metrics_dir()
            if self.settings.proxy == "external":
                self._listener = socket.create_server((self.settings.host, self.settings.port), backlog=2048)
                self._listener.set_inheritable(True)
            else:
                self.proxy = self._nginx()
                self.proxy.launch()
            self.workers = [Child(f"worker {index}", self._worker_starter(index)) for index in range(self.count)]
            for worker in self.workers:
                worker.launch()
            self._describe()
            return self._watch(lines)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._stop_proxy()
            lines.close()
            if self._listener is not None:
                self._listener.close()
            shutil.rmtree(self._run_dir, ignore_errors=True)

    def _prepare_metrics_dir(self) -> None:
        assert self._run_dir is not None
        given = os.environ.get(MULTIPROCESS_DIR_ENV)
        if not given:
            self._metrics_dir = self._run_dir / "metrics"
            self._metrics_dir.mkdir()
            return
        self._metrics_dir = Path(given)
        self._metrics_dir.mkdir(parents=True, exist_ok=True)
        stale = list(self._metrics_dir.glob("*.db"))
        for path in stale:
            path.unlink()
        if stale:
            log.info("cleared %d metric files left in %s by an earlier run", len(stale), given)

    def _nginx(self) -> Child:
        """nginx on the public port, its config rendered for these workers and checked before it starts."""
        binary = nginx.nginx_binary()
        if binary is None:
            raise ProxyMissing(proxy_problem(self.settings, self.count))
        assert self._run_dir is not None
        site = nginx.site_config(
            f"{self.settings.host}:{self.settings.port}",
            [f"127.0.0.1:{worker_port(self.settings, index)}" for index in range(self.count)],
            [f"127.0.0.1:{worker_port(self.settings, index)}" for index in range(self.count)],
        )
        main = nginx.write_config(self._run_dir / "nginx", site)
        check = subprocess.run(nginx.command(binary, main, "-t", "-q"), capture_output=True, text=True, check=False)
        if check.returncode != 0:
            raise RuntimeError(f"nginx rejected the config it was given ({main}): {check.stderr.strip()}")
        return Child("nginx", lambda: subprocess.Popen(nginx.command(binary, main), preexec_fn=_die_with_parent))

    def _describe(self) -> None:
        own = ", ".join(
            f"w{index}={worker_host(self.settings)}:{worker_port(self.settings, index)}" for index in range(self.count)
        )
        if self.proxy is not None:
            front = f"nginx on http://{self.settings.host}:{self.settings.port} routes each call to its worker"
        else:
            front = (
                f"the workers share http://{self.settings.host}:{self.settings.port}; your proxy must route "
                "/w/<n>/ to worker n's own port (deploy/nginx/voicebot.conf)"
            )
        log.info(
            "%d workers (%s): %s; up to %d calls on the whole server",
            self.count,
            own,
            front,
            self.settings.max_calls,
        )

    def _worker_starter(self, index: int) -> Callable[[], subprocess.Popen[bytes]]:
        assert self._metrics_dir is not None and self._run_dir is not None
        env = {
            **os.environ,
            "VOICEBOT_WORKERS": str(self.count),
            "VOICEBOT_WORKER_INDEX": str(index),
            "VOICEBOT_RUN_DIR": str(self._run_dir),
            MULTIPROCESS_DIR_ENV: str(self._metrics_dir),
        }
        command = [sys.executable, "-m", "telephony.cli", *self.argv, "--worker"]
        fds: tuple[int, ...] = ()
        if self._listener is not None:
            fds = (self._listener.fileno(),)
            command += ["--listen-fd", str(self._listener.fileno())]

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                command,
                env=env,
                pass_fds=fds,
                start_new_session=True,  # a terminal's Ctrl-C reaches the supervisor only, which forwards it once
                preexec_fn=_die_with_parent,
            )

        return start

    def _on_signal(self, sig: int, _: FrameType | None) -> None:
        self._signals += 1
        what = "draining every worker" if self._signals == 1 else "stopping every worker now"
        log.warning("%s: %s", signal.Signals(sig).name, what)
        for worker in self.workers:
            if worker.running:
                assert worker.process is not None
                worker.process.send_signal(sig)

    def _watch(self, lines: Lines) -> int:
        worst = 0
        while True:
            now = time.monotonic()
            running = 0
            for worker in self.workers:
                if worker.running:
                    running += 1
                    continue
                if worker.process is not None:
                    worst = max(worst, self._reap(worker, now, lines))
                if not self._signals and self._restart_due(worker, now):
                    running += 1
            if self.proxy is not None and not self.proxy.running and not self._signals:
                if self.proxy.process is not None:
                    self._reap(self.proxy, now, lines)
                self._restart_due(self.proxy, now)
            if self._signals and running == 0:
                log.info("all %d workers stopped", self.count)
                return worst
            time.sleep(_POLL_S)

    def _restart_due(self, child: Child, now: float) -> bool:
        """Start ``child`` again once its back-off has passed; True while it is (about to be) running."""
        if child.restart_at is None:
            return False
        if now >= child.restart_at:
            log.warning("starting %s again", child.name)
            child.launch()
        return True

    def _reap(self, child: Child, now: float, lines: Lines) -> int:
        """A child exited: free what it held; plan its restart unless the server is stopping."""
        assert child.process is not None
        code = child.process.returncode
        if child is not self.proxy:
            _mark_dead(child.process.pid, self._metrics_dir)
            if freed := lines.forget_process(child.process.pid):
                log.info("%s held %d line(s): free again", child.name, freed)
        child.process = None
        if self._signals:
            log.info("%s stopped (exit status %d)", child.name, code)
            return 0 if code in (0, -signal.SIGTERM, -signal.SIGINT) else abs(code)
        if now - child.started_at >= HEALTHY_AFTER_S:
            child.failures = 0
        delay = RESTART_DELAYS_S[min(child.failures, len(RESTART_DELAYS_S) - 1)]
        child.failures += 1
        child.restart_at = now + delay
        log.error(
            "%s exited unexpectedly (exit status %s)%s; starting it again in %.0fs",
            child.name,
            code,
            "" if child is self.proxy else "; its calls ended",
            delay,
        )
        return 0

    def _stop_proxy(self) -> None:
        """After the workers: nginx carried their calls while they drained."""
        if self.proxy is None or not self.proxy.running:
            return
        assert self.proxy.process is not None
        self.proxy.process.send_signal(signal.SIGQUIT)  # nginx's graceful stop
        try:
            self.proxy.process.wait(NGINX_STOP_S)
        except subprocess.TimeoutExpired:
            self.proxy.process.kill()
            self.proxy.process.wait()


def _mark_dead(pid: int, folder: Path | None) -> None:
    if folder is None:
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid, str(folder))


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM (and so drain) if the supervisor is killed outright."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the child outlives a killed supervisor
        pass


def run_workers(settings: Settings, argv: Sequence[str], count: int) -> int:
    return Supervisor(settings, argv, count).run()


def listening_sockets(settings: Settings, listen_fd: int | None) -> list[socket.socket]:
    """In a worker: its own port, and the port the workers share (handed down by the supervisor) if any."""
    own = socket.create_server((worker_host(settings), worker_port(settings, settings.worker_index)), backlog=2048)
    return [own] if listen_fd is None else [socket.socket(fileno=listen_fd), own]

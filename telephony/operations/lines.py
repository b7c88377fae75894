"""The server's phone lines: which calls hold one, counted once for the whole server.

A call holds a line from its webhook (a *reservation*, so a burst of calls cannot overshoot the limit
while their streams are still connecting) until its media stream ends (an *active* line). The stream
may reach any worker of ``voicebot serve --workers N``, so the table lives in one SQLite file in the
server's run folder that every worker opens (one process keeps it in memory): whichever worker takes
the webhook and whichever takes the stream, the call holds one line, and ``VOICEBOT_MAX_CALLS`` is the
whole server's limit. Every change is one ``BEGIN IMMEDIATE`` transaction, so two workers can never
both take the last line.

Each row names the worker (and process) that wrote it: when a stream starts elsewhere, the worker that
reserved the call learns it must give up its pre-warmed agent (``telephony.operations.peers``), and a
worker that dies has its rows removed by the supervisor.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

LINES_FILE = "lines.sqlite3"
"""The shared table's name in the run folder (``VOICEBOT_RUN_DIR``)."""
BUSY_TIMEOUT_MS = 2000
"""How long one worker waits for another's transaction (each takes microseconds)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS lines (
    key      TEXT PRIMARY KEY,  -- 'reserved:<CallSid>' or 'stream:<worker>:<pid>:<n>'
    call_sid TEXT,
    worker   INTEGER NOT NULL,
    pid      INTEGER NOT NULL,
    expires  REAL               -- reservations only (wall clock: the same in every process)
)
"""
_LIVE = "expires IS NULL OR expires > ?"


class Lines:
    """One server's line table; see the module docstring."""

    def __init__(self, path: Path | None = None, worker: int = 0, clock: Callable[[], float] = time.time) -> None:
        self.worker = worker
        self._pid = os.getpid()
        self._clock = clock
        self._streams = 0
        self._db = sqlite3.connect(":memory:" if path is None else str(path), timeout=BUSY_TIMEOUT_MS / 1000)
        self._db.isolation_level = None  # transactions are explicit (BEGIN IMMEDIATE)
        if path is not None:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=OFF")  # the table is rebuilt with the server: nothing to keep
        self._db.execute(_SCHEMA)

    def reserve(self, call_sid: str, max_calls: int, ttl_s: float) -> bool:
        """Hold a line for ``call_sid`` for up to ``ttl_s``; False when every line is taken."""
        now = self._clock()
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM lines WHERE key = ?", (f"reserved:{call_sid}",)).fetchone():
                return True
            db.execute(f"DELETE FROM lines WHERE NOT ({_LIVE})", (now,))
            if _in_use(db) >= max_calls:
                return False
            db.execute(
                "INSERT INTO lines VALUES (?, ?, ?, ?, ?)",
                (f"reserved:{call_sid}", call_sid, self.worker, self._pid, now + ttl_s),
            )
        return True

    def open_stream(self, max_calls: int) -> str | None:
        """A media stream connected: take a line for it, or None when ``max_calls`` streams are open."""
        with self._transaction() as db:
            if db.execute("SELECT count(*) FROM lines WHERE expires IS NULL").fetchone()[0] >= max_calls:
                return None
            self._streams += 1
            key = f"stream:{self.worker}:{self._pid}:{self._streams}"
            db.execute("INSERT INTO lines VALUES (?, NULL, ?, ?, NULL)", (key, self.worker, self._pid))
        return key

    def start(self, key: str, call_sid: str) -> int | None:
        """The stream ``key`` belongs to ``call_sid``: its reservation ends (the stream's line counts instead).

        Returns the worker that reserved the call when that is another one (it holds a pre-warmed agent
        the call will not use), else None."""
        with self._transaction() as db:
            row = db.execute("SELECT worker FROM lines WHERE key = ?", (f"reserved:{call_sid}",)).fetchone()
            db.execute("DELETE FROM lines WHERE key = ?", (f"reserved:{call_sid}",))
            db.execute("UPDATE lines SET call_sid = ? WHERE key = ?", (call_sid, key))
        return row[0] if row is not None and row[0] != self.worker else None

    def close_stream(self, key: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM lines WHERE key = ?", (key,))

    def release(self, call_sid: str) -> int | None:
        """The call is over before its stream started (Twilio said so): free its reservation.

        Returns the worker that held it, so that worker can stop the agent it pre-warmed."""
        with self._transaction() as db:
            row = db.execute("SELECT worker FROM lines WHERE key = ?", (f"reserved:{call_sid}",)).fetchone()
            db.execute("DELETE FROM lines WHERE key = ?", (f"reserved:{call_sid}",))
        return row[0] if row is not None else None

    def forget_process(self, pid: int) -> int:
        """A worker process died: its lines are free again. Returns how many it held."""
        with self._transaction() as db:
            return db.execute("DELETE FROM lines WHERE pid = ?", (pid,)).rowcount

    @property
    def streams(self) -> int:
        """Media streams open on the whole server."""
        return self._db.execute("SELECT count(*) FROM lines WHERE expires IS NULL").fetchone()[0]

    @property
    def reserved(self) -> int:
        """Calls whose webhook was answered and whose stream has not started yet (on the whole server)."""
        return self._db.execute("SELECT count(*) FROM lines WHERE expires > ?", (self._clock(),)).fetchone()[0]

    def close(self) -> None:
        self._db.close()

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


def _in_use(db: sqlite3.Connection) -> int:
    """Lines taken: started streams, plus the calls between webhook and ``start``, each counted once.

    A call whose stream has connected but not yet said ``start`` has both a reservation and an unstarted
    stream row (which reservation is its own is known only at ``start``), so the two are not added: the
    larger counts. :meth:`Lines.open_stream` caps the streams themselves, whatever this leaves out."""
    started, unstarted = db.execute(
        "SELECT count(call_sid), count(*) - count(call_sid) FROM lines WHERE expires IS NULL"
    ).fetchone()
    reserved = db.execute("SELECT count(*) FROM lines WHERE expires IS NOT NULL").fetchone()[0]
    return int(started) + max(int(unstarted), int(reserved))


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on error): the write lock for the whole check-and-change."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        self._db.execute("BEGIN IMMEDIATE")
        return self._db

    def __exit__(self, kind: object, *_: object) -> None:
        self._db.execute("ROLLBACK" if kind is not None else "COMMIT")


def lines_path(run_dir: str | None) -> Path | None:
    """The shared table of a server with a run folder (several workers), else None (in memory)."""
    return Path(run_dir) / LINES_FILE if run_dir else None

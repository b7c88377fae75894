"""The server's line table (one limit for every worker) and the word workers send each other."""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import stat
from pathlib import Path

import pytest

from telephony.operations.admission import Admission
from telephony.operations.lines import Lines, lines_path
from telephony.operations.peers import Peers, socket_path


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def two_workers(tmp_path: Path, clock: Clock | None = None) -> tuple[Lines, Lines]:
    path = lines_path(str(tmp_path))
    assert path is not None
    clock = clock or Clock()
    return Lines(path, worker=0, clock=clock), Lines(path, worker=1, clock=clock)


def test_a_call_whose_webhook_and_stream_reach_different_workers_holds_one_line(tmp_path: Path) -> None:
    first, second = two_workers(tmp_path)
    assert first.reserve("CA1", max_calls=2, ttl_s=30)
    assert second.reserve("CA2", max_calls=2, ttl_s=30)
    assert not first.reserve("CA3", max_calls=2, ttl_s=30)  # the limit is the server's, not each worker's
    assert first.reserve("CA1", max_calls=2, ttl_s=30)  # Twilio retried the webhook: still one line

    key = second.open_stream(max_calls=2)  # CA1's stream reached the other worker
    assert key is not None
    assert second.start(key, "CA1") == 0  # worker 0 reserved it (and holds its pre-warmed agent)
    assert (first.streams, first.reserved) == (1, 1)  # CA1 counts once, as a stream now
    assert not first.reserve("CA3", max_calls=2, ttl_s=30)

    own = second.open_stream(max_calls=2)
    assert own is not None
    assert second.start(own, "CA2") is None  # reserved by this same worker: nobody to tell
    second.close_stream(key)
    assert first.reserve("CA3", max_calls=2, ttl_s=30)


def test_reservations_expire_and_end_when_twilio_says_the_call_is_over(tmp_path: Path) -> None:
    clock = Clock()
    first, second = two_workers(tmp_path, clock)
    assert first.reserve("CA1", max_calls=1, ttl_s=30)
    assert not second.reserve("CA2", max_calls=1, ttl_s=30)
    assert second.release("CA1") == 0  # the caller hung up while it rang: worker 0 held it
    assert second.release("CA1") is None
    assert second.reserve("CA2", max_calls=1, ttl_s=30)
    clock.now += 31
    assert first.reserved == 0
    assert first.reserve("CA3", max_calls=1, ttl_s=30)


def test_streams_are_capped_atomically_across_workers(tmp_path: Path) -> None:
    first, second = two_workers(tmp_path)
    keys = [lines.open_stream(max_calls=3) for lines in (first, second, first, second)]
    assert [key is not None for key in keys] == [True, True, True, False]
    assert len(set(keys[:3])) == 3


def test_a_dead_workers_lines_are_freed(tmp_path: Path) -> None:
    path = lines_path(str(tmp_path))
    assert path is not None
    survivor = Lines(path, worker=0)
    with sqlite3.connect(path) as db:  # rows a worker process that has since died wrote
        db.execute("INSERT INTO lines VALUES ('reserved:CA9', 'CA9', 1, 999999, 9e12)")
        db.execute("INSERT INTO lines VALUES ('stream:999999:1', 'CA8', 1, 999999, NULL)")
    assert survivor.streams == 1 and survivor.reserved == 1
    assert survivor.forget_process(999999) == 2
    assert survivor.streams == 0 and survivor.reserved == 0


def test_one_process_keeps_the_table_in_memory() -> None:
    admission = Admission(max_calls=1)
    assert admission.reserve("CA1") is None
    assert admission.reserve("CA2") == "busy"
    line, refusal = admission.open_stream()
    assert line is not None and refusal is None
    assert admission.started(line, "CA1") is None
    assert admission.open_stream() == (None, "at the call limit")
    admission.stream_ended(line)
    admission.draining = True
    assert admission.reserve("CA3") == "draining"
    assert admission.open_stream() == (None, "draining")


async def test_workers_tell_each_other_and_ignore_malformed_words(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[dict[str, object]] = []
    arrived = asyncio.Event()

    def on_moved(message: dict[str, object]) -> None:
        heard.append(message)
        arrived.set()

    first = Peers(tmp_path, worker=0, workers=2, handlers={"prewarm-moved": on_moved})
    second = Peers(tmp_path, worker=1, workers=2, handlers={})
    await first.start()
    await second.start()
    assert stat.S_ISSOCK(os.stat(socket_path(tmp_path, 0)).st_mode)
    try:
        sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        for junk in (b"not json", b'["a list"]', b'{"kind": "unknown"}'):
            sender.sendto(junk, str(socket_path(tmp_path, 0)))
        sender.close()
        second.tell(0, "prewarm-moved", call_sid="CA1", to="1")
        await asyncio.wait_for(arrived.wait(), 5)
        assert heard == [{"kind": "prewarm-moved", "from": 1, "call_sid": "CA1", "to": "1"}]
        assert caplog.text.count("ignored a malformed message from another worker") == 3
        second.tell(5, "prewarm-moved", call_sid="CA2")  # no such worker (restarting): logged, not raised
        assert "could not tell worker 5 prewarm-moved (CA2)" in caplog.text
    finally:
        first.close()
        second.close()
    assert not socket_path(tmp_path, 0).exists()


def test_a_stream_between_its_upgrade_and_its_start_does_not_count_twice(tmp_path: Path) -> None:
    """The benchmark's finding: 49 calls, one of them upgraded but not yet started, read as 50 lines."""
    first, second = two_workers(tmp_path)
    assert first.reserve("CA1", max_calls=3, ttl_s=30)
    assert second.reserve("CA2", max_calls=3, ttl_s=30)
    key = second.open_stream(max_calls=3)  # CA1's or CA2's stream: which is known at its start
    assert key is not None
    assert first.reserve("CA3", max_calls=3, ttl_s=30)  # 3 calls, 3 lines: before the fix, 4 in use
    assert not first.reserve("CA4", max_calls=3, ttl_s=30)
    second.start(key, "CA1")
    assert not first.reserve("CA4", max_calls=3, ttl_s=30)  # still 3: CA1 streaming, CA2 and CA3 reserved

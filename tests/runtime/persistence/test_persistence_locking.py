"""One writer per thread: in this process, in other processes, and after a writer dies."""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio
from livecontext.runtime.persistence import (
    LeaseLostError,
    NewRecord,
    ThreadLockedError,
    open_store,
)
from livecontext.runtime.persistence.base._lease import (
    Holder,
    current_holder,
    holder_alive,
    process_alive,
)

MakeRecords = Callable[..., list[NewRecord]]

CHILD = r"""
import sys, trio
from livecontext.runtime.persistence import ThreadLockedError, open_store

async def main(url, mode):
    async with await open_store(url) as store:
        try:
            log = await store.open_thread("t", owner="child")
        except ThreadLockedError as exc:
            print("LOCKED", exc, flush=True)
            return
        async with log:
            print("HELD", flush=True)
            if mode == "hold":
                await trio.sleep_forever()

trio.run(main, sys.argv[1], sys.argv[2])
"""


async def _try_in_child(url: str) -> str:
    result = await trio.run_process(
        [sys.executable, "-c", CHILD, url, "try"], capture_stdout=True, capture_stderr=True
    )
    return result.stdout.decode()


async def _hold_in_child(url: str) -> trio.Process:
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", CHILD, url, "hold"], stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    seen = b""
    with trio.fail_after(20):
        while not seen.endswith(b"\n"):
            chunk = await proc.stdout.receive_some()
            assert chunk, "the child exited before taking the thread"
            seen += chunk
    assert seen == b"HELD\n"
    return proc


async def test_a_second_writer_in_the_same_store_is_refused(store_url: str) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history:a"):
            with pytest.raises(
                ThreadLockedError,
                match=rf"thread 't' is locked by another writer: 'history:a' "
                rf"\(pid {os.getpid()} on .+\); wait",
            ) as info:
                await store.open_thread("t", owner="history:b")
            assert info.value.thread_id == "t"
            async with await store.open_reader("t"):
                pass  # readers take no lock
        async with await store.open_thread("t", owner="history:b"):
            pass


async def test_a_second_store_on_the_same_path_is_refused_too(durable_url: str) -> None:
    async with await open_store(durable_url) as first, await open_store(durable_url) as second:
        async with await first.open_thread("t", owner="history:a"):
            with pytest.raises(ThreadLockedError, match="'history:a'"):
                await second.open_thread("t", owner="history:b")
            async with await second.open_thread("other", owner="history:b"):
                pass
        async with await second.open_thread("t", owner="history:b"):
            pass


async def test_another_process_is_refused_while_we_hold_the_thread(durable_url: str) -> None:
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", owner="history:parent"):
            out = await _try_in_child(durable_url)
            assert out.startswith("LOCKED thread 't' is locked by another writer: 'history:parent'")
            assert f"pid {os.getpid()} on {socket.gethostname()}" in out
    assert await _try_in_child(durable_url) == "HELD\n"


async def test_the_thread_is_recovered_when_its_holder_process_is_killed(durable_url: str) -> None:
    proc = await _hold_in_child(durable_url)
    try:
        async with await open_store(durable_url) as store:
            with pytest.raises(ThreadLockedError, match=rf"'child' \(pid {proc.pid} on"):
                await store.open_thread("t", owner="history:parent")
            proc.kill()
            await proc.wait()
            async with await store.open_thread("t", owner="history:parent") as log:
                assert await log.last_seq() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_an_sqlite_writer_whose_lease_was_taken_cannot_append(
    tmp_path: Path, make_records: MakeRecords
) -> None:
    path = tmp_path / "s.db"
    async with await open_store(f"sqlite:{path}") as store:
        async with await store.open_thread("t", owner="history") as log:
            await log.append(make_records(1))
            with sqlite3.connect(path) as conn:  # what another host does once the lease expired
                conn.execute("UPDATE leases SET token = 'someone-else' WHERE thread_id = 't'")
            with pytest.raises(
                LeaseLostError, match=r"no longer holds thread 't'.*nothing was written"
            ):
                await log.append(make_records(1, 1))
        async with await store.open_reader("t") as reader:
            assert await reader.last_seq() == 1


def test_a_recycled_pid_does_not_count_as_the_holder() -> None:
    me = current_holder("x")
    assert process_alive(me.pid, me.start)
    assert not process_alive(me.pid, "1")  # same pid, another start time: not the holder
    assert not process_alive(2**22 + 12345, "")


def test_a_lease_from_another_host_expires_without_renewal() -> None:
    holder = Holder("x", "elsewhere.invalid", 1, "")
    now = time.time()
    assert holder_alive(holder, now - 10, now)
    assert not holder_alive(holder, now - 10_000, now)


@contextlib.contextmanager
def _another_process_writing(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection holding ``path``'s write lock (``BEGIN IMMEDIATE``), as another process
    writing would; committed (if the block did not) and closed at the end."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield other
    finally:
        if other.in_transaction:
            other.execute("COMMIT")
        other.close()


async def test_sqlite_reads_go_on_while_an_append_waits_for_another_process(
    tmp_path: Path, make_records: MakeRecords
) -> None:
    # two batch workers on one file: one's append waits for the other's write; its reads must
    # not wait behind that append (they did when one connection served both)
    path = tmp_path / "s.db"
    async with await open_store(f"sqlite:{path}") as store:
        async with await store.open_thread("t", owner="history") as log:
            await log.append(make_records(2))
            with _another_process_writing(path) as other:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(log.append, make_records(1, 2))
                    write_lock = store._backend._lock  # held while the append waits for `other`
                    with trio.fail_after(10):
                        while not write_lock.locked():
                            await trio.sleep(0.01)
                    async with await store.open_reader("t") as reader:
                        with trio.fail_after(10):  # (30 s, SQLite's busy timeout, if it waited)
                            assert await reader.last_seq() == 2
                            assert len(await reader.read(1, 2)) == 2
                    assert write_lock.locked()  # the append is still waiting
                    other.execute("COMMIT")
            assert await log.last_seq() == 3
        async with await store.open_reader("t") as reader:
            assert [r.seq for r in await reader.read(1, 3)] == [1, 2, 3]


async def test_an_sqlite_append_that_waits_too_long_for_another_process_fails_and_writes_nothing(
    tmp_path: Path, make_records: MakeRecords, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livecontext.runtime.persistence import LogWriteError
    from livecontext.runtime.persistence.sqlite import _sqlite

    monkeypatch.setattr(_sqlite, "_WRITE_WAIT_S", 0.3)  # (30 s otherwise)
    path = tmp_path / "s.db"
    async with await open_store(f"sqlite:{path}") as store:
        async with await store.open_thread("t", owner="history") as log:
            await log.append(make_records(1))
            with _another_process_writing(path), \
                    pytest.raises(LogWriteError, match=r"thread 't'.*sqlite: database is locked"):
                await log.append(make_records(1, 1))
            assert await log.last_seq() == 1
            await log.append(make_records(1, 1))  # the lock free again: the next append goes in
        async with await store.open_reader("t") as reader:
            assert [r.seq for r in await reader.read(1, 2)] == [1, 2]
            assert [r.payload for r in await reader.read(2, 2)] == [make_records(1, 1)[0].payload]
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == 2

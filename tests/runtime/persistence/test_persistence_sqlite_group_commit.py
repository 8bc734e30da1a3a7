"""SQLite appends waiting for the writing connection share one transaction (group commit),
each in a savepoint: one that fails writes nothing and leaves the others' records."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
from livecontext.runtime.persistence import LeaseLostError, NewRecord, open_store

MakeRecords = Callable[..., list[NewRecord]]
THREADS = ["a", "b", "c", "d", "e"]


async def _until(predicate: Callable[[], bool]) -> None:
    with trio.fail_after(10):
        while not predicate():
            await trio.sleep(0.005)


def _seqs(path: Path, thread_id: str) -> list[int]:
    with contextlib.closing(sqlite3.connect(path)) as conn:  # (sqlite3's own `with` never closes)
        return [seq for (seq,) in conn.execute(
            "SELECT seq FROM records WHERE thread_id = ? ORDER BY seq", (thread_id,))]


async def test_appends_that_wait_together_commit_together(tmp_path: Path, make_records: MakeRecords) -> None:
    path = tmp_path / "s.db"
    async with await open_store(f"sqlite:{path}") as store:
        backend = store._backend
        logs = [await store.open_thread(t, owner=f"history:{t}") for t in THREADS]
        commits: list[str] = []
        backend._conn.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
        other = sqlite3.connect(path, isolation_level=None)  # another process, writing
        other.execute("BEGIN IMMEDIATE")
        try:
            async with trio.open_nursery() as nursery:
                for i, log in enumerate(logs):
                    nursery.start_soon(log.append, make_records(2, 10 * i))
                # the first waits for `other` holding the connection; the others queue behind it
                await _until(lambda: backend._lock.locked() and len(backend._queued) == len(THREADS) - 1)
                other.execute("COMMIT")
        finally:
            other.close()
        assert len(commits) == 2  # the first append's transaction, then the four queued in one
        for log in logs:
            assert await log.last_seq() == 2
            await log.aclose()
    for t in THREADS:
        assert _seqs(path, t) == [1, 2]
    async with await open_store(f"sqlite:{path}") as store:
        for i, t in enumerate(THREADS):
            async with await store.open_reader(t) as reader:
                assert [r.payload for r in await reader.read(1, 2)] == [
                    r.payload for r in make_records(2, 10 * i)]


async def test_an_append_that_fails_in_a_group_writes_nothing_and_the_others_commit(
    tmp_path: Path, make_records: MakeRecords
) -> None:
    path = tmp_path / "s.db"
    async with await open_store(f"sqlite:{path}") as store:
        backend = store._backend
        logs = {t: await store.open_thread(t, owner=f"history:{t}") for t in THREADS}
        for log in logs.values():
            await log.append(make_records(1))
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        failed: list[BaseException] = []

        async def append(t: str) -> None:
            try:
                await logs[t].append(make_records(2, 1))  # seqs 2 and 3
            except LeaseLostError as exc:
                failed.append(exc)

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(append, "a")
                await _until(backend._lock.locked)  # "a" waits for `other` alone
                for t in THREADS[1:]:
                    nursery.start_soon(append, t)
                await _until(lambda: len(backend._queued) == len(THREADS) - 1)
                # a row at seq 3 of "c", written by someone else: "c"'s second record collides
                # after its first went in
                other.execute(
                    "INSERT INTO records SELECT thread_id, 3, sender, sent_at, sent_mono_ns, kind, payload,"
                    " schema_version, checksum, system_seq FROM records WHERE thread_id = 'c' AND seq = 1")
                other.execute("COMMIT")
        finally:
            other.close()
        assert [exc.thread_id for exc in failed] == ["c"]
        assert "nothing was written" in str(failed[0])
        for t, log in logs.items():
            if t != "c":
                assert await log.last_seq() == 3
            await log.aclose()
    assert _seqs(path, "c") == [1, 3]  # its seq 2 rolled back with its savepoint; only the foreign row
    for t in ["a", "b", "d", "e"]:
        assert _seqs(path, t) == [1, 2, 3]


@pytest.mark.parametrize("lost", ["b", "e"])
async def test_a_writer_that_lost_its_lease_in_a_group_cannot_append(
    tmp_path: Path, make_records: MakeRecords, lost: str
) -> None:
    path = tmp_path / "s.db"
    async with await open_store(f"sqlite:{path}") as store:
        backend = store._backend
        logs = {t: await store.open_thread(t, owner=f"history:{t}") for t in THREADS}
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        results: dict[str, str] = {}

        async def append(t: str) -> None:
            try:
                await logs[t].append(make_records(1))
                results[t] = "ok"
            except LeaseLostError:
                results[t] = "lost"

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(append, "a")
                await _until(backend._lock.locked)
                for t in THREADS[1:]:
                    nursery.start_soon(append, t)
                await _until(lambda: len(backend._queued) == len(THREADS) - 1)
                other.execute("UPDATE leases SET token = 'someone-else' WHERE thread_id = ?", (lost,))
                other.execute("COMMIT")
        finally:
            other.close()
        assert results == {t: "lost" if t == lost else "ok" for t in THREADS}
        for log in logs.values():
            await log.aclose()
    for t in THREADS:
        assert _seqs(path, t) == ([] if t == lost else [1])

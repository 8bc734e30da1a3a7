"""The SQL stores' appends that wait to be written share one transaction (group commit); one
that fails writes nothing and leaves the others' records (SQLite and PostgreSQL)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio
from livecontext.runtime.persistence import LeaseLostError, NewRecord, open_store

MakeRecords = Callable[..., list[NewRecord]]
THREADS = ["a", "b", "c", "d", "e"]


class Outsider:
    """Another process's connection to the store: it makes the first append wait (SQLite:
    its write lock; PostgreSQL: a lock on thread "a"'s lease row), changes rows meanwhile,
    then lets the appends go."""

    def __init__(self, kind: str, url: str) -> None:
        self.kind = kind
        if kind == "sqlite":
            self._conn: Any = sqlite3.connect(url.removeprefix("sqlite:"), isolation_level=None)
            self._conn.execute("BEGIN IMMEDIATE")
        else:
            self._conn = psycopg.connect(url)
            self._conn.execute("SELECT 1 FROM leases WHERE thread_id = 'a' FOR UPDATE")

    def execute(self, sql: str, params: tuple[object, ...] = ()) -> None:
        self._conn.execute(sql if self.kind == "sqlite" else sql.replace("?", "%s"), params)

    def commit(self) -> None:
        self._conn.execute("COMMIT") if self.kind == "sqlite" else self._conn.commit()

    def close(self) -> None:
        self._conn.close()


def _seqs(kind: str, url: str, thread_id: str) -> list[int]:
    query = "SELECT seq FROM records WHERE thread_id = ? ORDER BY seq"
    if kind == "sqlite":
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:"))) as conn:  # (its own `with` never closes)
            return [seq for (seq,) in conn.execute(query, (thread_id,))]
    with psycopg.connect(url) as conn:
        return [seq for (seq,) in conn.execute(query.replace("?", "%s"), (thread_id,))]


@pytest.fixture(params=["sqlite", "postgresql"])
def kind_url(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    if request.param == "postgresql":
        return "postgresql", str(request.getfixturevalue("postgres_url"))
    return "sqlite", f"sqlite:{tmp_path / 's.db'}"


def _committing(backend: Any) -> bool:
    """Whether a thread is committing a group (and so the next appends queue)."""
    return (backend._lock if hasattr(backend, "_lock") else backend._committing).locked()


async def _until(predicate: Callable[[], bool]) -> None:
    with trio.fail_after(10):
        while not predicate():
            await trio.sleep(0.005)


@contextlib.contextmanager
def _groups_seen(backend: Any) -> Iterator[list[list[str]]]:
    """The threads of each group committed meanwhile."""
    seen: list[list[str]] = []
    commit = backend.appends._commit

    def counted(group: list[Any]) -> None:
        seen.append([queued.writer.thread_id for queued in group])
        commit(group)

    backend.appends._commit = counted
    try:
        yield seen
    finally:
        backend.appends._commit = commit


@contextlib.asynccontextmanager
async def _first_waits_then_others_queue(
    store: Any, kind: str, url: str, first: Callable[[], Any], others: list[Callable[[], Any]]
) -> AsyncIterator[Outsider]:
    """Start ``first``, wait until it is committing (held up by an :class:`Outsider`), start
    ``others`` and wait until they are all queued; the block then runs with the outsider's
    transaction open, and the appends go when it commits (at the block's end)."""
    backend = store._backend
    outsider = Outsider(kind, url)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(first)
            await _until(lambda: _committing(backend))
            for other in others:
                nursery.start_soon(other)
            await _until(lambda: backend.appends.waiting() == len(others))
            yield outsider
            outsider.commit()
    finally:
        outsider.close()


async def test_appends_that_wait_together_commit_together(
    kind_url: tuple[str, str], make_records: MakeRecords
) -> None:
    kind, url = kind_url
    async with await open_store(url) as store:
        logs = [await store.open_thread(t, owner=f"history:{t}") for t in THREADS]
        with _groups_seen(store._backend) as groups:
            async with _first_waits_then_others_queue(
                    store, kind, url, lambda: logs[0].append(make_records(2)),
                    [lambda i=i: logs[i].append(make_records(2, 10 * i)) for i in range(1, len(logs))]):
                pass
        # the one that waited, then all those queued behind it
        assert [sorted(group) for group in groups] == [["a"], ["b", "c", "d", "e"]]
        for log in logs:
            assert await log.last_seq() == 2
            await log.aclose()
    async with await open_store(url) as store:
        for i, t in enumerate(THREADS):
            async with await store.open_reader(t) as reader:
                assert [r.payload for r in await reader.read(1, 2)] == [r.payload for r in make_records(2, 10 * i)]


async def test_an_append_that_collides_in_a_group_writes_nothing_and_the_others_commit(
    kind_url: tuple[str, str], make_records: MakeRecords
) -> None:
    kind, url = kind_url
    async with await open_store(url) as store:
        logs = {t: await store.open_thread(t, owner=f"history:{t}") for t in THREADS}
        for log in logs.values():
            await log.append(make_records(1))
        failed: list[LeaseLostError] = []

        async def append(t: str) -> None:
            try:
                await logs[t].append(make_records(2, 1))  # seqs 2 and 3
            except LeaseLostError as exc:
                failed.append(exc)

        async with _first_waits_then_others_queue(
                store, kind, url, lambda: append("a"), [lambda t=t: append(t) for t in THREADS[1:]]) as outsider:
            # a row at seq 3 of "c", written by another: "c"'s second record collides after its
            # first went in
            outsider.execute(
                "INSERT INTO records (seq, thread_id, sender, sent_at, sent_mono_ns, kind, payload, schema_version,"
                " checksum, system_seq) SELECT 3, thread_id, sender, sent_at, sent_mono_ns, kind, payload,"
                " schema_version, checksum, system_seq FROM records WHERE thread_id = 'c' AND seq = 1")
        assert [exc.thread_id for exc in failed] == ["c"]
        assert "nothing was written" in str(failed[0])
        for t, log in logs.items():
            assert await log.last_seq() == (1 if t == "c" else 3)
            await log.aclose()
    assert _seqs(kind, url, "c") == [1, 3]  # its seq 2 rolled back too; only the other's row
    for t in ["a", "b", "d", "e"]:
        assert _seqs(kind, url, t) == [1, 2, 3]


@pytest.mark.parametrize("lost", ["b", "e"])
async def test_a_writer_that_lost_its_lease_in_a_group_cannot_append(
    kind_url: tuple[str, str], make_records: MakeRecords, lost: str
) -> None:
    kind, url = kind_url
    async with await open_store(url) as store:
        logs = {t: await store.open_thread(t, owner=f"history:{t}") for t in THREADS}
        results: dict[str, str] = {}

        async def append(t: str) -> None:
            try:
                await logs[t].append(make_records(1))
                results[t] = "ok"
            except LeaseLostError:
                results[t] = "lost"

        async with _first_waits_then_others_queue(
                store, kind, url, lambda: append("a"), [lambda t=t: append(t) for t in THREADS[1:]]) as outsider:
            outsider.execute("UPDATE leases SET token = 'someone-else' WHERE thread_id = ?", (lost,))
        assert results == {t: "lost" if t == lost else "ok" for t in THREADS}
        for log in logs.values():
            await log.aclose()
    for t in THREADS:
        assert _seqs(kind, url, t) == ([] if t == lost else [1])

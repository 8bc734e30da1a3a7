"""System seqs: the threads of a system share one clock, and every record appended to any of
them carries its next number, kept by every backend, hashed with the record, kept by a fork."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import trio

from livecontext.runtime.persistence import (
    CorruptRecordError,
    EventStore,
    NewRecord,
    SystemClock,
    open_store,
    record_checksum,
)

if TYPE_CHECKING:
    from conftest import MakeRecords, Tamper

T0 = dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


async def stamps(store: EventStore, thread: str) -> list[tuple[int, int | None]]:
    async with await store.open_reader(thread) as reader:
        found = await reader.read()
    for record in found:
        record.verify()
    return [(r.seq, r.system_seq) for r in found]


async def append_interleaved(store: EventStore, clock: SystemClock, make_records: MakeRecords) -> None:
    async with await store.open_thread("a", owner="t", clock=clock) as a, \
            await store.open_thread("b", owner="t", clock=clock) as b:
        await a.append(make_records(2))
        await b.append(make_records(1))
        await a.append(make_records(1))
        await b.append(make_records(3))


async def test_two_threads_sharing_a_clock_number_their_records_in_one_sequence_in_append_order(
        store_url: str, make_records: MakeRecords) -> None:
    clock = SystemClock()
    async with await open_store(store_url) as store:
        await append_interleaved(store, clock, make_records)
        assert clock.last == 7
        assert await stamps(store, "a") == [(1, 1), (2, 2), (3, 4)]
        assert await stamps(store, "b") == [(1, 3), (2, 5), (3, 6), (4, 7)]


async def test_system_seqs_are_kept_across_opening_the_store_again_and_by_a_fork(
        durable_url: str, make_records: MakeRecords) -> None:
    async with await open_store(durable_url) as store:
        await append_interleaved(store, SystemClock(), make_records)
    async with await open_store(durable_url) as store:
        assert await stamps(store, "b") == [(1, 3), (2, 5), (3, 6), (4, 7)]
        await store.fork("b", 3, "b2")
        assert await stamps(store, "b2") == [(1, 3), (2, 5), (3, 6)]


async def test_a_log_without_a_clock_stamps_nothing_and_a_clock_continues_where_it_is_told(
        store_url: str, make_records: MakeRecords) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("plain", owner="t") as plain:
            assert plain.clock is None
            await plain.append(make_records(2))
        clock = SystemClock(40)
        clock.advance_past(12)  # (never backwards)
        async with await store.open_thread("plain", owner="t", clock=clock) as log:
            await log.append(make_records(2))
        assert await stamps(store, "plain") == [(1, None), (2, None), (3, 41), (4, 42)]


async def test_concurrent_appends_to_threads_of_one_clock_never_share_a_number_and_each_thread_increases(
        store_url: str, make_records: MakeRecords) -> None:
    clock = SystemClock()
    async with await open_store(store_url) as store:
        async def write(thread: str) -> None:
            async with await store.open_thread(thread, owner="t", clock=clock) as log:
                for _ in range(20):
                    await log.append(make_records(2))

        async with trio.open_nursery() as nursery:
            for thread in ("x", "y", "z"):
                nursery.start_soon(write, thread)
        seen = [await stamps(store, t) for t in ("x", "y", "z")]
    numbers = [s for thread in seen for _, s in thread]
    assert sorted(numbers) == list(range(1, 121))  # (no append failed: no gap)
    for thread in seen:
        assert [s for _, s in thread] == sorted(s for _, s in thread)  # type: ignore[type-var]


def test_a_records_checksum_covers_its_system_seq_and_one_without_hashes_as_before() -> None:
    fields = dict(thread_id="t", seq=1, sender="s", sent_at=T0, sent_mono_ns=1, kind="k", payload="{}",
                  schema_version=1)
    plain = record_checksum(**fields)  # type: ignore[arg-type]
    assert record_checksum(**fields, system_seq=None) == plain  # type: ignore[arg-type]
    assert len({plain, record_checksum(**fields, system_seq=1),  # type: ignore[arg-type]
                record_checksum(**fields, system_seq=2)}) == 3  # type: ignore[arg-type]


async def test_a_changed_system_seq_is_a_corrupt_record(durable_url: str, make_records: MakeRecords,
                                                        tamper: Tamper) -> None:
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", owner="t", clock=SystemClock()) as log:
            await log.append(make_records(3))
    if tamper.backend != "jsonl":
        tamper.execute("UPDATE records SET system_seq = 9 WHERE thread_id = 't' AND seq = 2")
    else:
        file = tamper.records_file("t")
        lines = file.read_bytes().split(b"\n")
        data = json.loads(lines[1])
        data["system_seq"] = 9
        lines[1] = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
        file.write_bytes(b"\n".join(lines))
    async with await open_store(durable_url) as store:
        async with await store.open_reader("t") as reader:
            with pytest.raises(CorruptRecordError, match=r"^thread 't': the record at seq 2 is corrupt \(checksum"):
                await reader.read()


async def test_a_jsonl_thread_is_format_1_until_its_first_stamped_record_and_a_fork_of_stamped_ones_format_2(
        tmp_path: Path, make_records: MakeRecords) -> None:
    url = f"jsonl:{tmp_path / 'store'}"
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="t") as log:
            await log.append(make_records(1))
    meta = tmp_path / "store" / "t" / "meta.json"
    assert json.loads(meta.read_text())["format"] == 1
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="t") as log:
            await log.append(make_records(1))  # unstamped: still readable by an older build
        assert json.loads(meta.read_text())["format"] == 1
        async with await store.open_thread("t", owner="t", clock=SystemClock()) as log:
            await log.append(make_records(1))
        assert json.loads(meta.read_text())["format"] == 2
        assert await stamps(store, "t") == [(1, None), (2, None), (3, 1)]
        await store.fork("t", 2, "unstamped")
        await store.fork("t", 3, "stamped")
    formats = [json.loads((tmp_path / "store" / t / "meta.json").read_text())["format"] for t in ("unstamped", "stamped")]
    assert formats == [1, 2]


async def test_a_sqlite_store_of_format_2_stays_so_until_a_record_with_a_system_seq_is_written(
        tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # the tables of format 2, as an older build made them
        conn.executescript("""
            CREATE TABLE threads (thread_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, forked_from TEXT,
                                  forked_at INTEGER);
            CREATE TABLE records (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, sender TEXT NOT NULL,
                sent_at TEXT NOT NULL, sent_mono_ns INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL,
                schema_version INTEGER NOT NULL, checksum TEXT NOT NULL, PRIMARY KEY (thread_id, seq));
            CREATE TABLE snapshots (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, state TEXT NOT NULL,
                schema_version INTEGER NOT NULL, checksum TEXT NOT NULL, PRIMARY KEY (thread_id, seq));
            CREATE TABLE leases (thread_id TEXT PRIMARY KEY, token TEXT NOT NULL, owner TEXT NOT NULL,
                host TEXT NOT NULL, pid INTEGER NOT NULL, start TEXT NOT NULL, acquired_at REAL NOT NULL,
                renewed_at REAL NOT NULL);
            PRAGMA user_version = 2;
        """)

    def layout() -> tuple[str, int]:
        with sqlite3.connect(path) as conn:
            columns = [row[1] for row in conn.execute("PRAGMA table_info(records)")]
            return columns[-1], conn.execute("PRAGMA user_version").fetchone()[0]

    async with await open_store(f"sqlite:{path}") as store:
        async with await store.open_thread("t", owner="t") as log:  # no system: an older build reads it still
            await log.append([NewRecord("s", T0, 1, "k", "{}")])
        await store.fork("t", 1, "t2")
        assert layout() == ("checksum", 2)
        async with await store.open_thread("t", owner="t", clock=SystemClock()) as log:
            await log.append([NewRecord("s", T0, 2, "k", "{}")])
        assert layout() == ("system_seq", 3)  # an older build would misread it: it refuses it now
        assert await stamps(store, "t") == [(1, None), (2, 1)]
        await store.fork("t", 2, "t3")
        assert await stamps(store, "t3") == [(1, None), (2, 1)]

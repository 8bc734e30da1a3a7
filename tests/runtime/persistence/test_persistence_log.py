"""Appending, reading, reopening, forking and snapshots, on every backend."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
import trio
import trio.testing
from livecontext.protocol.wire import SCHEMA_VERSION
from livecontext.runtime.persistence import (
    InvalidRecordError,
    InvalidThreadIdError,
    NewRecord,
    SeqOutOfRangeError,
    SnapshotOrderError,
    StoreClosedError,
    ThreadExistsError,
    ThreadNotFoundError,
    open_store,
)
from tests.support.busy import busy_task

MakeRecords = Callable[..., list[NewRecord]]


async def test_appended_records_read_back_with_contiguous_seqs(
    store_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            first = await log.append(make_records(3))
            second = await log.append(make_records(1, 3))
            third = await log.append(make_records(5, 4))
            assert [r.seq for r in first + second + third] == list(range(1, 10))
            assert await log.last_seq() == 9
            stored = await log.read()
            assert stored == first + second + third
            for new, old in zip(make_records(9), stored, strict=True):
                assert (old.sender, old.sent_at, old.sent_mono_ns, old.kind, old.payload) == (
                    new.sender,
                    new.sent_at,
                    new.sent_mono_ns,
                    new.kind,
                    new.payload,
                )
                assert old.thread_id == "t" and old.schema_version == SCHEMA_VERSION == 3
                old.verify()


async def test_read_returns_the_requested_range_clamped_to_the_end(
    store_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            await log.append(make_records(10))
            assert [r.seq for r in await log.read(4, 6)] == [4, 5, 6]
            assert [r.seq for r in await log.read(8)] == [8, 9, 10]
            assert [r.seq for r in await log.read(9, 99)] == [9, 10]
            assert await log.read(11) == []
            assert await log.read(6, 5) == []
            with pytest.raises(
                SeqOutOfRangeError,
                match="seq 0 is out of range for thread 't', whose last seq is 10",
            ):
                await log.read(0)


async def test_an_empty_append_writes_nothing(store_url: str) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            assert await log.append([]) == []
            assert await log.last_seq() == 0


@pytest.mark.parametrize("payload", ["NaN", '{"x": Infinity}', "-Infinity", "{'a': 1}", ""])
async def test_a_payload_that_is_not_standard_json_is_refused_and_names_the_record(
    store_url: str, payload: str
) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            bad = NewRecord("a", dt.datetime.now(dt.timezone.utc), 1, "entry", payload)
            with pytest.raises(InvalidRecordError, match=r"record 0 of the batch: payload is not valid JSON text"):
                await log.append([bad])
            assert await log.last_seq() == 0


async def test_a_batch_with_a_bad_record_is_refused_whole(
    store_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            bad = NewRecord("a", dt.datetime.now(dt.timezone.utc), 1, "entry", "{not json")
            with pytest.raises(
                InvalidRecordError, match=r"record 2 of the batch: payload is not valid JSON"
            ):
                await log.append([*make_records(2), bad])
            surrogate = NewRecord("\ud800", dt.datetime.now(dt.timezone.utc), 1, "entry", "{}")
            with pytest.raises(
                InvalidRecordError, match="record 0 of the batch holds text that is not valid UTF-8"
            ):
                await log.append([surrogate])
            assert await log.last_seq() == 0
            assert await log.read() == []


def test_a_record_without_a_time_zone_is_refused() -> None:
    with pytest.raises(InvalidRecordError, match="has no time zone; pass an aware UTC datetime"):
        NewRecord("a", dt.datetime(2025, 1, 1), 1, "entry", "{}")


async def test_records_survive_closing_and_reopening_the_store(
    durable_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            written = await log.append(make_records(4))
            await log.write_snapshot(2, '{"folded": 2}')
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", create=False, owner="history") as log:
            assert await log.read() == written
            more = await log.append(make_records(2, 4))
            assert [r.seq for r in more] == [5, 6]
            snapshot = await log.latest_snapshot()
            assert snapshot is not None and (snapshot.seq, snapshot.state) == (2, '{"folded": 2}')


async def test_threads_lists_every_thread_with_its_last_seq(
    store_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(store_url) as store:
        assert await store.threads() == []
        async with await store.open_thread("b", owner="history") as log:
            await log.append(make_records(3))
        async with await store.open_thread("a/with spaces", owner="history"):
            pass
        infos = await store.threads()
        assert [(i.thread_id, i.last_seq) for i in infos] == [("a/with spaces", 0), ("b", 3)]
        assert infos[1].last_activity >= infos[1].created_at
        assert await store.exists("b") and await store.exists("a/with spaces")
        assert not await store.exists("c")


async def test_opening_a_missing_thread_without_create_writes_nothing(store_url: str) -> None:
    async with await open_store(store_url) as store:
        with pytest.raises(
            ThreadNotFoundError,
            match="thread 'nope' does not exist in this store; nothing was written",
        ):
            await store.open_thread("nope", create=False, owner="history")
        with pytest.raises(ThreadNotFoundError):
            await store.open_reader("nope")
        assert not await store.exists("nope")
        assert await store.threads() == []


async def test_bad_thread_ids_are_refused(store_url: str) -> None:
    async with await open_store(store_url) as store:
        for bad in ["", "x" * 201, "line\nbreak"]:
            with pytest.raises(InvalidThreadIdError):
                await store.open_thread(bad, owner="history")


async def test_a_reader_sees_what_the_writer_committed(
    store_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            async with await store.open_reader("t") as reader:
                assert await reader.last_seq() == 0
                written = await log.append(make_records(3))
                assert await reader.last_seq() == 3
                assert await reader.read(2) == written[1:]


async def test_a_closed_log_refuses_calls(store_url: str, make_records: MakeRecords) -> None:
    async with await open_store(store_url) as store:
        log = await store.open_thread("t", owner="history")
        await log.aclose()
        await log.aclose()
        with pytest.raises(
            StoreClosedError, match="the log of thread 't' is closed; open it again to use it"
        ):
            await log.append(make_records(1))
    with pytest.raises(StoreClosedError):
        await store.threads()


async def test_closing_the_store_closes_its_logs_and_releases_them(
    durable_url: str, make_records: MakeRecords
) -> None:
    store = await open_store(durable_url)
    log = await store.open_thread("t", owner="history")
    await store.aclose()
    with pytest.raises(StoreClosedError):
        await log.append(make_records(1))
    async with await open_store(durable_url) as again:
        async with await again.open_thread("t", owner="history"):
            pass


async def test_a_cancelled_append_either_committed_or_did_not(
    store_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            with trio.move_on_after(0):
                await log.append(make_records(3))
            assert await log.last_seq() in (0, 3)
            after = await log.append(make_records(1))
            assert after[0].seq == await log.last_seq()
            assert [r.seq for r in await log.read()] == list(range(1, after[0].seq + 1))


async def test_concurrent_appends_to_one_log_get_distinct_seqs(
    store_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            async with trio.open_nursery() as nursery:
                for i in range(10):
                    nursery.start_soon(log.append, make_records(2, 2 * i))
            assert [r.seq for r in await log.read()] == list(range(1, 21))


async def test_fork_copies_records_up_to_the_seq_under_the_new_id(
    store_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("src", owner="history") as log:
            source = await log.append(make_records(6))
            await log.write_snapshot(2, '{"at": 2}')
            await log.write_snapshot(5, '{"at": 5}')
        info = await store.fork("src", 4, "dst")
        assert (info.thread_id, info.last_seq, info.forked_from, info.forked_at) == (
            "dst",
            4,
            "src",
            4,
        )
        async with await store.open_thread("dst", create=False, owner="history") as fork:
            copied = await fork.read()
            assert [r.seq for r in copied] == [1, 2, 3, 4]
            assert [r.payload for r in copied] == [r.payload for r in source[:4]]
            assert all(r.thread_id == "dst" for r in copied)
            assert all(a.checksum != b.checksum for a, b in zip(copied, source, strict=False))
            for record in copied:
                record.verify()
            snapshot = await fork.latest_snapshot()
            assert snapshot is not None and (snapshot.thread_id, snapshot.seq) == ("dst", 2)
            snapshot.verify(copied[1])
            assert [r.seq for r in await fork.append(make_records(1))] == [5]
        listed = {i.thread_id: i for i in await store.threads()}
        assert (listed["dst"].forked_from, listed["dst"].forked_at) == ("src", 4)
        assert listed["src"].forked_from is None


async def test_fork_at_zero_makes_an_empty_thread(
    store_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("src", owner="history") as log:
            await log.append(make_records(2))
        info = await store.fork("src", 0, "dst")
        assert info.last_seq == 0
        async with await store.open_reader("dst") as reader:
            assert await reader.read() == []


async def test_fork_errors_name_what_is_wrong(store_url: str, make_records: MakeRecords) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("src", owner="history") as log:
            await log.append(make_records(3))
        with pytest.raises(
            SeqOutOfRangeError,
            match="cannot fork: seq 4 is out of range for thread 'src', whose last seq is 3",
        ):
            await store.fork("src", 4, "dst")
        with pytest.raises(SeqOutOfRangeError):
            await store.fork("src", -1, "dst")
        with pytest.raises(ThreadNotFoundError, match="thread 'nope' does not exist"):
            await store.fork("nope", 1, "dst")
        await store.fork("src", 3, "dst")
        with pytest.raises(
            ThreadExistsError, match="thread 'dst' already exists; fork into a new thread id"
        ):
            await store.fork("src", 1, "dst")
        assert [i.thread_id for i in await store.threads()] == ["dst", "src"]


async def test_latest_snapshot_is_the_newest_at_or_before_the_seq(
    store_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            assert await log.latest_snapshot() is None
            await log.append(make_records(10))
            await log.write_snapshot(3, '{"v": 3}')
            await log.write_snapshot(7, '{"v": 7}')
            await log.write_snapshot(7, '{"v": "7 again"}')
            assert await log.latest_snapshot(2) is None
            for at, expected in [
                (3, '{"v": 3}'),
                (6, '{"v": 3}'),
                (7, '{"v": "7 again"}'),
                (None, '{"v": "7 again"}'),
            ]:
                snapshot = await log.latest_snapshot(at)
                assert snapshot is not None and snapshot.state == expected
            async with await store.open_reader("t") as reader:
                snapshot = await reader.latest_snapshot(5)
                assert snapshot is not None and snapshot.seq == 3


async def test_snapshots_must_be_in_range_and_in_order(
    store_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            await log.append(make_records(5))
            with pytest.raises(
                SeqOutOfRangeError, match="cannot write a snapshot: seq 6 is out of range"
            ):
                await log.write_snapshot(6, "{}")
            with pytest.raises(SeqOutOfRangeError):
                await log.write_snapshot(0, "{}")
            with pytest.raises(InvalidRecordError, match="snapshot state is not valid JSON"):
                await log.write_snapshot(2, "nope")
            await log.write_snapshot(4, "{}")
            with pytest.raises(
                SnapshotOrderError, match="at seq 2: its latest snapshot is at seq 4"
            ):
                await log.write_snapshot(2, "{}")


async def test_sqlite_and_memory_keep_only_the_two_newest_snapshots(
    store_url: str, make_records: MakeRecords
) -> None:
    if store_url.startswith("jsonl:"):
        pytest.skip("the JSONL snapshot file is append-only and keeps every snapshot")
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            await log.append(make_records(10))
            for seq in range(1, 11):
                await log.write_snapshot(seq, f'{{"v": {seq}}}')
            kept = [s for s in [await log.latest_snapshot(at) for at in range(1, 11)] if s is not None]
            assert sorted({s.seq for s in kept}) == [9, 10]  # (two: the README says so)


async def test_a_loop_of_appends_lets_other_tasks_run_and_honours_a_cancel(
    store_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(store_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            async with busy_task() as other:
                for i in range(200):
                    await log.append(make_records(1, i + 1))
                assert other.count >= 4  # a memory store yields once every few dozen appends, not never
            with trio.CancelScope() as scope:
                scope.cancel()
                await log.append(make_records(1, 201))
            assert scope.cancelled_caught and await log.last_seq() == 200  # cancelled before it wrote


async def test_append_nowait_on_a_store_that_does_not_block_appends_at_once_as_append_would(
    make_records: MakeRecords,
) -> None:
    async with await open_store("memory:") as store:
        async with await store.open_thread("t", owner="history") as log:
            assert not log.would_block()
            first = await log.append(make_records(2))
            second = log.append_nowait(make_records(2, 2))  # no await: no checkpoint
            assert [r.seq for r in first + second] == [1, 2, 3, 4]
            assert await log.read() == first + second
            assert log.append_nowait([]) == []


async def test_append_nowait_raises_would_block_on_a_store_that_blocks(
    durable_url: str, make_records: MakeRecords
) -> None:
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            assert log.would_block()
            with pytest.raises(trio.WouldBlock):
                log.append_nowait(make_records(1))
            assert await log.last_seq() == 0  # nothing written


async def test_append_nowait_raises_would_block_while_another_call_holds_the_log(make_records: MakeRecords) -> None:
    async with await open_store("memory:") as store:
        async with await store.open_thread("t", owner="history") as log:
            async with log._lock:  # what a snapshot being written, or a read, holds meanwhile
                assert log.would_block()
                with pytest.raises(trio.WouldBlock):
                    log.append_nowait(make_records(1))
            assert not log.would_block()
            assert [r.seq for r in log.append_nowait(make_records(1))] == [1]


async def test_append_nowait_on_a_closed_log_says_it_is_closed(make_records: MakeRecords) -> None:
    async with await open_store("memory:") as store:
        log = await store.open_thread("t", owner="history")
        await log.aclose()
        with pytest.raises(StoreClosedError):
            log.append_nowait(make_records(1))


@pytest.mark.parametrize("top", ["main", "batch/t1"])  # (a batch task's thread: BATCH/TASK_ID)
async def test_a_sub_agents_thread_id_with_slashes_is_stored_listed_reopened_and_forked(
    store_url: str, make_records: MakeRecords, top: str
) -> None:
    sub = f"{top}/sub/call_1_0"
    async with await open_store(store_url) as store:
        async with await store.open_thread(top, owner="history") as log:
            await log.append(make_records(1))
        async with await store.open_thread(sub, owner="history") as log:
            assert log.store is store
            await log.append(make_records(2))
        await store.fork(sub, 1, f"{sub}.copy")
        assert [i.thread_id for i in await store.threads()] == [top, sub, f"{sub}.copy"]
        assert await store.exists(sub) and not await store.exists(f"{top}/sub")
    if store_url.startswith("memory:"):
        return
    async with await open_store(store_url) as store:  # reopened: nothing was lost to the '/'
        async with await store.open_reader(sub) as reader:
            assert [r.seq for r in await reader.read()] == [1, 2]
            assert all(r.thread_id == sub for r in await reader.read())
        async with await store.open_reader(top) as reader:
            assert [(r.seq, r.thread_id) for r in await reader.read()] == [(1, top)]

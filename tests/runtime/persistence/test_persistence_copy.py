"""Copying a thread into another store: ``create_thread``, ``append_stored``, ``copy_thread``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import attrs
import pytest
from livecontext.runtime.persistence import (
    InvalidRecordError,
    NewRecord,
    SystemClock,
    ThreadExistsError,
    ThreadInfo,
    copy_thread,
    open_store,
)

T0 = dt.datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc)

MakeRecords = Callable[..., list[NewRecord]]
CREATED = T0 - dt.timedelta(days=3)


async def test_a_thread_copied_into_each_backend_keeps_its_creation_time_fork_link_and_records(
        store_url: str, make_records: MakeRecords) -> None:
    async with await open_store("memory:") as source, await open_store(store_url) as target:
        async with await source.open_thread("t", owner="me", clock=SystemClock(40)) as log:
            records = await log.append(make_records(5))
        await source.fork("t", 3, "k")
        for info in await source.threads():
            copied = await copy_thread(source, attrs.evolve(info, created_at=CREATED), target, chunk=2)
            assert copied.whole and copied.copied == info.last_seq
        infos = await target.threads()
        assert [(i.thread_id, i.last_seq, i.created_at, i.forked_from, i.forked_at) for i in infos] == [
            ("k", 3, CREATED, "t", 3), ("t", 5, CREATED, None, None)]
        async with await target.open_reader("t") as reader:
            assert await reader.read() == records  # (system seqs 41..45 and checksums as they were)
        assert [r.system_seq for r in records] == [41, 42, 43, 44, 45]


async def test_append_stored_refuses_a_record_that_does_not_follow_on_belongs_elsewhere_or_is_damaged(
        make_records: MakeRecords) -> None:
    async with await open_store("memory:") as source, await open_store("memory:") as target:
        async with await source.open_thread("t", owner="me") as log:
            records = await log.append(make_records(3))
        await target.create_thread(ThreadInfo("t", 0, CREATED, CREATED))
        async with await target.open_thread("t", create=False, owner="copy") as copy:
            with pytest.raises(InvalidRecordError, match=r"record 0 of the batch has seq 2, not 1 \(the next of thread 't'\)"):
                await copy.append_stored(records[1:])
            with pytest.raises(InvalidRecordError, match="belongs to thread 'u', not 't'"):
                await copy.append_stored([attrs.evolve(records[0], thread_id="u")])
            with pytest.raises(InvalidRecordError, match=r"record 1 of the batch fails its checks .*checksum mismatch"):
                await copy.append_stored([records[0], attrs.evolve(records[1], payload='{"evil":1}')])
            assert await copy.last_seq() == 0  # (nothing of a refused batch)
            await copy.append_stored(records)
            assert await copy.read() == records


async def test_creating_a_thread_that_exists_writes_nothing(durable_url: str, make_records: MakeRecords) -> None:
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", owner="me") as log:
            await log.append(make_records(2))
        with pytest.raises(ThreadExistsError):
            await store.create_thread(ThreadInfo("t", 0, CREATED, CREATED))
        (info,) = await store.threads()
        assert info.last_seq == 2 and info.created_at != CREATED

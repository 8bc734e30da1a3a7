"""Crash safety: torn tails are dropped with a warning, damage elsewhere is never skipped."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from livecontext.protocol import SCHEMA_VERSION, UnsupportedSchemaVersionError
from livecontext.runtime.persistence.jsonl._codec import encode_snapshot
from livecontext.runtime.persistence.base._records import Snapshot, snapshot_checksum
from livecontext.runtime.persistence import (
    CorruptRecordError,
    NewRecord,
    TornRecordWarning,
    TornSnapshotWarning,
    open_store,
)

if TYPE_CHECKING:
    from conftest import Tamper

MakeRecords = Callable[..., list[NewRecord]]


async def _write(url: str, records: list[NewRecord], *, batch: int = 1) -> None:
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="history") as log:
            for i in range(0, len(records), batch):
                await log.append(records[i : i + batch])


@pytest.mark.parametrize("durable_url", ["jsonl"], indirect=True)  # (SQLite leaves no torn record: below)
async def test_a_corrupt_last_record_is_dropped_with_a_warning_on_open(
    durable_url: str, make_records: MakeRecords, tamper: Tamper
) -> None:
    await _write(durable_url, make_records(5))
    tamper.corrupt_payload("t", 5)
    async with await open_store(durable_url) as store:
        async with await store.open_reader("t") as reader:
            assert await reader.last_seq() == 4  # readers ignore it, and repair nothing
        assert [i.last_seq for i in await store.threads()] == [4]
        with pytest.warns(
            TornRecordWarning,
            match=r"thread 't': dropped the torn record at seq 5 \(.*checksum mismatch.*\)"
            r".*ends at seq 4",
        ):
            log = await store.open_thread("t", owner="history")
        async with log:
            assert [r.seq for r in await log.read()] == [1, 2, 3, 4]
            assert [r.seq for r in await log.append(make_records(1, 10))] == [5]
            assert json.loads((await log.read(5))[0].payload)["i"] == 10


@pytest.mark.parametrize("durable_url", ["sqlite"], indirect=True)
async def test_a_damaged_last_sqlite_row_is_an_error_naming_it_and_is_never_dropped(
    durable_url: str, make_records: MakeRecords, tamper: Tamper
) -> None:
    # a transaction is whole or absent: a last row that fails its checks was damaged after it
    # was committed, so it is reported like any other record, not dropped as a torn write
    url = durable_url
    await _write(url, make_records(5))
    tamper.corrupt_payload("t", 5)
    async with await open_store(url) as store:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (no warning: nothing is passed over)
            async with await store.open_reader("t") as reader:
                assert await reader.last_seq() == 5
                with pytest.raises(CorruptRecordError, match=r"the record at seq 5 is corrupt \(checksum mismatch\)"):
                    await reader.read(5)
        with pytest.raises(CorruptRecordError, match=r"the record at seq 5 is corrupt .* fork the thread at seq 4"):
            await store.open_thread("t", owner="history")
        async with await store.open_reader("t") as reader:
            assert len(await reader.read(1, 4)) == 4  # (nothing was dropped, nor written)
            assert await reader.last_seq() == 5


async def test_a_partial_last_line_is_dropped_with_a_warning(
    tmp_path: Path, make_records: MakeRecords
) -> None:
    url = f"jsonl:{tmp_path}"
    await _write(url, make_records(3))
    records = tmp_path / "t" / "records.jsonl"
    good = records.read_bytes()
    records.write_bytes(good + b'{"seq":4,"end":4,"thread_id":"t","sen')
    async with await open_store(url) as store:
        async with await store.open_reader("t") as reader:
            assert [r.seq for r in await reader.read()] == [1, 2, 3]
        assert records.read_bytes() != good
        with pytest.warns(TornRecordWarning, match=r"torn record at seq 4 \(partial last line\)"):
            log = await store.open_thread("t", owner="history")
        await log.aclose()
    assert records.read_bytes() == good


async def test_an_unfinished_batch_is_dropped_whole(
    tmp_path: Path, make_records: MakeRecords
) -> None:
    url = f"jsonl:{tmp_path}"
    await _write(url, make_records(2))
    await _write(url, make_records(4, 2), batch=4)
    records = tmp_path / "t" / "records.jsonl"
    lines = records.read_bytes().split(b"\n")
    records.write_bytes(b"\n".join(lines[:4]) + b"\n" + lines[4][:20])  # records 3, 4 and part of 5
    async with await open_store(url) as store:
        async with await store.open_reader("t") as reader:
            assert await reader.last_seq() == 2
        with pytest.warns(
            TornRecordWarning, match=r"seqs 3\.\.5 \(partial last line\).*ends at seq 2"
        ):
            log = await store.open_thread("t", owner="history")
        async with log:
            assert [r.seq for r in await log.read()] == [1, 2]


async def test_corruption_before_the_tail_raises_naming_the_seq(
    durable_url: str, make_records: MakeRecords, tamper: Tamper
) -> None:
    await _write(durable_url, make_records(6))
    tamper.corrupt_payload("t", 3)
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            assert [r.seq for r in await log.read(4)] == [4, 5, 6]
            with pytest.raises(
                CorruptRecordError,
                match=r"thread 't': the record at seq 3 is corrupt \(checksum mismatch\)",
            ) as info:
                await log.read()
            assert info.value.seq == 3
            assert "fork the thread at seq 2" in str(info.value)


@pytest.mark.parametrize("durable_url", ["jsonl"], indirect=True)  # (SQLite leaves no torn record: below)
async def test_corruption_just_before_a_torn_tail_is_not_dropped(
    durable_url: str, make_records: MakeRecords, tamper: Tamper
) -> None:
    await _write(durable_url, make_records(4))
    tamper.corrupt_payload("t", 3)
    tamper.corrupt_payload("t", 4)
    async with await open_store(durable_url) as store:
        with pytest.raises(CorruptRecordError, match="the record at seq 3 is corrupt"):
            await store.open_thread("t", owner="history")
        async with await store.open_reader("t") as reader:
            with pytest.raises(CorruptRecordError, match="seq 3"):
                await reader.read()


async def test_a_missing_record_is_reported_as_corruption(
    durable_url: str, make_records: MakeRecords, tamper: Tamper
) -> None:
    await _write(durable_url, make_records(4))
    tamper.delete_record("t", 2)
    async with await open_store(durable_url) as store:
        async with await store.open_reader("t") as reader:
            with pytest.raises(
                CorruptRecordError, match=r"the record at seq 2 is corrupt \(the record is missing"
            ):
                await reader.read()


async def test_a_record_of_an_unknown_schema_version_raises_when_read(
    durable_url: str, make_records: MakeRecords, tamper: Tamper
) -> None:
    await _write(durable_url, make_records(3))
    tamper.set_schema_version("t", 2, 99)
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            assert len(await log.read(3)) == 1
            with pytest.raises(
                UnsupportedSchemaVersionError, match="unsupported schema version 99"
            ):
                await log.read()


async def test_a_last_record_of_an_unknown_version_is_never_dropped_as_torn_whatever_its_checksum(
    durable_url: str, make_records: MakeRecords, tamper: Tamper
) -> None:
    await _write(durable_url, make_records(3))
    tamper.set_schema_version("t", 3, 99, checksum="0" * 64)  # not ours: a newer version's, perhaps
    async with await open_store(durable_url) as store:
        with warnings.catch_warnings():
            warnings.simplefilter("error", TornRecordWarning)
            with pytest.raises(UnsupportedSchemaVersionError, match="unsupported schema version 99"):
                await store.open_thread("t", owner="history")
        async with await store.open_reader("t") as reader:
            assert await reader.last_seq() == 3


async def test_a_writer_refuses_to_append_after_a_record_of_an_unknown_version(
    durable_url: str, make_records: MakeRecords, tamper: Tamper
) -> None:
    await _write(durable_url, make_records(3))
    tamper.set_schema_version("t", 3, 4)
    async with await open_store(durable_url) as store:
        with pytest.raises(UnsupportedSchemaVersionError, match="unsupported schema version 4"):
            await store.open_thread("t", owner="history")
        async with await store.open_reader("t") as reader:
            assert await reader.last_seq() == 3
            with pytest.raises(UnsupportedSchemaVersionError):
                await reader.read(3)
        with pytest.raises(UnsupportedSchemaVersionError):  # not ThreadLockedError: released
            await store.open_thread("t", owner="history")


def old_snapshot(thread_id: str, seq: int, state: str) -> Snapshot:
    """A snapshot as a build before snapshots committed to their record sealed it."""
    return Snapshot(thread_id, seq, state, SCHEMA_VERSION, snapshot_checksum(thread_id, seq, state, SCHEMA_VERSION))


async def test_a_torn_snapshot_line_is_dropped_and_an_older_one_used(
    tmp_path: Path, make_records: MakeRecords
) -> None:
    url = f"jsonl:{tmp_path}"
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="history") as log:
            await log.append(make_records(5))
    # snapshots as a build before snapshot files wrote them: lines of snapshots.jsonl
    snapshots = tmp_path / "t" / "snapshots.jsonl"
    snapshots.write_bytes(encode_snapshot(old_snapshot("t", 2, '{"at": 2}'))
                          + encode_snapshot(old_snapshot("t", 4, '{"at": 4}'))[:-10])
    async with await open_store(url) as store:
        async with await store.open_reader("t") as reader:
            snapshot = await reader.latest_snapshot()
            assert snapshot is not None and snapshot.seq == 2
        with pytest.warns(TornSnapshotWarning, match="dropped 1 torn snapshot"):
            log = await store.open_thread("t", owner="history")
        async with log:
            await log.write_snapshot(3, '{"at": 3}')
            snapshot = await log.latest_snapshot()
            assert snapshot is not None and snapshot.seq == 3


@pytest.mark.parametrize("durable_url", ["jsonl"], indirect=True)  # (SQLite leaves no torn record: below)
async def test_snapshots_past_a_dropped_tail_are_dropped_too(
    durable_url: str, make_records: MakeRecords, tamper: Tamper
) -> None:
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            for record in make_records(4):
                await log.append([record])
            await log.write_snapshot(4, '{"at": 4}')
    tamper.corrupt_payload("t", 4)
    async with await open_store(durable_url) as store:
        with (
            pytest.warns(TornRecordWarning),
            pytest.warns(TornSnapshotWarning, match="past the log's end"),
        ):
            log = await store.open_thread("t", owner="history")
        async with log:
            assert await log.latest_snapshot() is None
            await log.write_snapshot(3, "{}")


@pytest.mark.parametrize("durable_url", ["jsonl"], indirect=True)  # (SQLite leaves no torn record: below)
async def test_a_repair_warning_raised_as_an_error_does_not_keep_the_lock(
    durable_url: str, make_records: MakeRecords, tamper: Tamper
) -> None:
    await _write(durable_url, make_records(3))
    tamper.corrupt_payload("t", 3)
    async with await open_store(durable_url) as store:
        with warnings.catch_warnings():
            warnings.simplefilter("error", TornRecordWarning)
            with pytest.raises(TornRecordWarning):
                await store.open_thread("t", owner="history")
        async with await store.open_thread("t", owner="history") as log:  # repaired, unlocked
            assert await log.last_seq() == 2

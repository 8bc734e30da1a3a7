"""The SQLite store's format 2: long texts stored compressed, checksums as bytes, damage reported.

Old (format 1) files are covered with the stores of ``tests/fixtures/v1`` in
``tests/durability/test_old_format.py``.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from livecontext.runtime.persistence import (
    CorruptRecordError,
    NewRecord,
    DamagedSnapshotWarning,
    open_store,
)

from livecontext.runtime.persistence.sqlite._tables import STORE_FORMAT_VERSION

if TYPE_CHECKING:
    from conftest import Tamper

T0 = dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


def payload_of(size: int, fill: str = "x") -> str:
    """JSON text of exactly ``size`` UTF-8 bytes (``fill`` is one ASCII character)."""
    return '{"t":"' + fill * (size - 8) + '"}'


def step_output(k: int) -> str:
    """A tool result's JSON, as long and as repetitive as a shell step's."""
    lines = [f"src/pkg/mod_{n}.py:{n * k}:    return helper(value_{n}, config)" for n in range(20)]
    return json.dumps({"result": {"call_id": f"call_{k}", "content": {"live": {"text": "\n".join(lines)}}}})


def record(payload: str, i: int = 0) -> NewRecord:
    return NewRecord("engine/t", T0 + dt.timedelta(seconds=i), i, "entry", payload)


def stored_types(path: Path, table: str = "records") -> dict[int, tuple[str, str]]:
    """Each row's seq: the SQLite storage classes of its text (payload or state) and checksum."""
    column = "payload" if table == "records" else "state"
    with sqlite3.connect(path) as conn:
        rows = conn.execute(f"SELECT seq, typeof({column}), typeof(checksum) FROM {table} ORDER BY seq")
        return {seq: (text, checksum) for seq, text, checksum in rows}


pytestmark = pytest.mark.parametrize("durable_url", ["sqlite"], indirect=True)
"""Every test runs on SQLite only (``durable_url``, and so ``tamper``, of that backend)."""


def db_file(url: str) -> Path:
    return Path(url.removeprefix("sqlite:"))


async def write(url: str, payloads: list[str]) -> None:
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="history") as log:
            for i, payload in enumerate(payloads):
                await log.append([record(payload, i)])


async def test_payloads_from_the_threshold_up_are_stored_compressed_below_it_as_text_and_all_read_back(
        durable_url: str) -> None:
    payloads = [payload_of(127), payload_of(128), step_output(1), payload_of(60)]
    await write(durable_url, payloads)
    assert stored_types(db_file(durable_url)) == {
        1: ("text", "blob"), 2: ("blob", "blob"), 3: ("blob", "blob"), 4: ("text", "blob")}
    async with await open_store(durable_url) as store:
        async with await store.open_reader("t") as reader:
            records = await reader.read(1)
    assert [r.payload for r in records] == payloads
    for r in records:
        r.verify()
        assert len(r.checksum) == 64 and int(r.checksum, 16) >= 0  # hex, as a record holds it


async def test_a_long_snapshot_state_is_stored_compressed_and_read_back(durable_url: str) -> None:
    state = json.dumps({"entries": [step_output(k) for k in range(30)]})
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            await log.append([record(payload_of(20))])
            written = await log.write_snapshot(1, state)
    assert stored_types(db_file(durable_url), "snapshots") == {1: ("blob", "blob")}
    with sqlite3.connect(db_file(durable_url)) as conn:
        (stored,) = conn.execute("SELECT length(state) FROM snapshots").fetchone()
    assert stored < len(state) // 5
    async with await open_store(durable_url) as store:
        async with await store.open_reader("t") as reader:
            snapshot = await reader.latest_snapshot()
    assert snapshot == written and snapshot.state == state


async def test_a_flipped_byte_in_a_compressed_payload_is_corruption_naming_the_thread_and_seq(
        durable_url: str, tamper: Tamper) -> None:
    await write(durable_url, [step_output(k) for k in range(4)])
    tamper.flip_compressed_byte("t", 2)
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            assert [r.seq for r in await log.read(3)] == [3, 4]
            with pytest.raises(
                CorruptRecordError,
                match=r"^thread 't': the record at seq 2 is corrupt \(undecodable row: the compressed "
                      r"payload does not decompress \(zlib: Error -3 while decompressing data: .*\)\); "
                      r"restore the store from a backup, or fork the thread at seq 1 \(`livecontext fork --thread t --at 1 --new-thread NEW`\) to go on without it$",
            ) as info:
                await log.read(1)
    assert (info.value.thread_id, info.value.seq) == ("t", 2)


async def test_a_compressed_payload_that_decompresses_to_other_text_fails_its_checksum(
        durable_url: str, tamper: Tamper) -> None:
    await write(durable_url, [step_output(k) for k in range(3)])
    tamper.compress_other_text("t", 2, step_output(99))
    async with await open_store(durable_url) as store:
        async with await store.open_reader("t") as reader:
            with pytest.raises(CorruptRecordError, match=r"thread 't': the record at seq 2 is corrupt \(checksum mismatch\)"):
                await reader.read(1)


async def test_a_damaged_compressed_last_record_is_an_error_and_is_never_dropped(
        durable_url: str, tamper: Tamper) -> None:
    await write(durable_url, [step_output(k) for k in range(3)])
    tamper.flip_compressed_byte("t", 3)
    async with await open_store(durable_url) as store:
        async with await store.open_reader("t") as reader:
            assert await reader.last_seq() == 3
        with pytest.raises(CorruptRecordError, match=r"the record at seq 3 is corrupt \(undecodable row: the "
                                                     r"compressed payload does not decompress"):
            await store.open_thread("t", owner="history")
        async with await store.open_reader("t") as reader:
            assert [r.payload for r in await reader.read(1, 2)] == [step_output(0), step_output(1)]


async def test_a_damaged_compressed_snapshot_is_refused_when_read_and_dropped_by_the_next_writer(
        durable_url: str, tamper: Tamper) -> None:
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            await log.append([record(step_output(k), k) for k in range(3)])
            await log.write_snapshot(2, step_output(2))
            await log.write_snapshot(3, step_output(3))
    tamper.flip_compressed_byte("t", 3, table="snapshots")
    async with await open_store(durable_url) as store:
        async with await store.open_reader("t") as reader:
            with pytest.raises(
                CorruptRecordError,
                match=r"thread 't': the snapshot at seq 3 is corrupt \(the compressed state does not decompress",
            ):
                await reader.latest_snapshot()
        with pytest.warns(DamagedSnapshotWarning, match=r"the snapshot at seq 3 is damaged \(undecodable snapshot row: "
                                                        r".*\), not left by an interrupted write; dropped it"):
            log = await store.open_thread("t", owner="history")
        async with log:
            snapshot = await log.latest_snapshot()
            assert snapshot is not None and (snapshot.seq, snapshot.state) == (2, step_output(2))


async def test_a_fork_of_compressed_records_holds_them_compressed_and_verified_in_the_new_thread(
        durable_url: str) -> None:
    payloads = [step_output(k) for k in range(4)]
    await write(durable_url, payloads)
    async with await open_store(durable_url) as store:
        await store.fork("t", 3, "u")
        async with await store.open_reader("u") as reader:
            forked = await reader.read(1)
    assert [r.payload for r in forked] == payloads[:3]
    for r in forked:
        r.verify()
    with sqlite3.connect(db_file(durable_url)) as conn:
        kinds = conn.execute("SELECT DISTINCT typeof(payload) FROM records WHERE thread_id = 'u'").fetchall()
    assert kinds == [("blob",)]


async def test_a_store_written_now_says_the_current_format_and_keeps_it_when_reopened(durable_url: str) -> None:
    await write(durable_url, [step_output(1)])
    async with await open_store(durable_url) as store:
        async with await store.open_thread("t", owner="history") as log:
            await log.append([record(step_output(2))])
    with sqlite3.connect(db_file(durable_url)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (STORE_FORMAT_VERSION,)

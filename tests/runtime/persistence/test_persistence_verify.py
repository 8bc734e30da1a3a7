"""Every reader checks what it relies on, and verify_store checks everything (issue 16, finding 2)."""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from livecontext.runtime.persistence import (
    CorruptRecordError,
    DamagedSnapshotWarning,
    StoreCorruptError,
    TornTailWarning,
    NewRecord,
    open_store,
    record_checksum,
    verify_store,
)

if TYPE_CHECKING:
    from conftest import Tamper

MakeRecords = Callable[..., list[NewRecord]]


async def write(url: str, make_records: MakeRecords, *, records: int = 6, snapshots: tuple[int, ...] = (2, 4)) -> None:
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="history") as log:
            for record in make_records(records):  # (one batch each: a torn one drops only itself)
                await log.append([record])
            for seq in snapshots:
                await log.write_snapshot(seq, json.dumps({"at": seq}))


async def test_a_sound_store_verifies_with_every_record_and_kept_snapshot_counted(
        durable_url: str, make_records: MakeRecords) -> None:
    await write(durable_url, make_records)
    async with await open_store(durable_url) as store:
        check = await verify_store(store)
    assert check.ok and (check.threads, check.records, check.snapshots) == (1, 6, 2)
    assert check.problems == () and check.notes == ()


async def test_verify_lists_each_damaged_record_by_seq_and_goes_on_past_it(
        durable_url: str, make_records: MakeRecords, tamper: Tamper) -> None:
    await write(durable_url, make_records)
    tamper.corrupt_payload("t", 1)  # (covered by both snapshots: opening does not read it)
    tamper.corrupt_payload("t", 3)
    async with await open_store(durable_url) as store:
        check = await verify_store(store)
    assert not check.ok
    assert [(p.thread_id, p.seq) for p in check.problems] == [("t", 1), ("t", 3)]
    assert all("restore the store from a backup, or fork the thread at seq" in p.text for p in check.problems)
    assert check.records == 4  # the sound ones


async def test_a_snapshot_whose_record_was_replaced_does_not_open_and_verify_names_it(
        tmp_path: Path, make_records: MakeRecords) -> None:
    url = f"jsonl:{tmp_path}"
    await write(url, make_records, snapshots=(4,))
    # record 4 rewritten with a checksum of its own: sound by itself, but not what the snapshot folded
    file = tmp_path / "t" / "records.jsonl"
    lines = file.read_bytes().split(b"\n")
    data = json.loads(lines[3])
    data["payload"] = '{"other": 1}'
    data["checksum"] = record_checksum(thread_id="t", seq=4, sender=data["sender"],
                                       sent_at=dt.datetime.fromisoformat(data["sent_at"]),
                                       sent_mono_ns=data["sent_mono_ns"], kind=data["kind"], payload=data["payload"],
                                       schema_version=data["schema_version"])
    lines[3] = json.dumps(data, separators=(",", ":")).encode()
    file.write_bytes(b"\n".join(lines))
    async with await open_store(url) as store:
        async with await store.open_reader("t") as reader:
            with pytest.raises(CorruptRecordError, match=r"the snapshot at seq 4 is corrupt \(checksum mismatch: the "
                                                         r"snapshot is damaged, or its log was changed under it\)"):
                await reader.latest_snapshot()
        check = await verify_store(store)
    assert [(p.seq, "snapshot" in p.text) for p in check.problems] == [(4, True)]


async def test_a_damaged_snapshot_is_named_damaged_and_dropped_by_the_next_writer(
        durable_url: str, make_records: MakeRecords, tamper: Tamper) -> None:
    await write(durable_url, make_records)
    kind, _, path = durable_url.partition(":")
    if kind != "jsonl":
        tamper.execute("UPDATE snapshots SET state = '{\"at\": 5}' WHERE seq = 4")
    else:
        file = Path(path) / "t" / "snapshot-00000000000000000004.json"
        file.write_bytes(file.read_bytes().replace(b'{\\"at\\": 4}', b'{\\"at\\": 5}'))
    async with await open_store(durable_url) as store:
        check = await verify_store(store)
        assert [p.seq for p in check.problems] == [4] and "snapshot only shortens replay" in check.problems[0].text
        with pytest.warns(DamagedSnapshotWarning, match=r"the snapshot at seq 4 is damaged \(checksum mismatch.*\), "
                                                        r"not left by an interrupted write; dropped it"):
            log = await store.open_thread("t", owner="history")
        async with log:
            snapshot = await log.latest_snapshot()
            assert snapshot is not None and snapshot.seq == 2
        assert (await verify_store(store)).ok


async def test_a_reader_says_it_passes_over_a_torn_tail_and_verify_notes_it(
        tmp_path: Path, make_records: MakeRecords) -> None:
    url = f"jsonl:{tmp_path}"
    await write(url, make_records, snapshots=())
    file = tmp_path / "t" / "records.jsonl"
    file.write_bytes(file.read_bytes()[:-7])
    async with await open_store(url) as store:
        with pytest.warns(TornTailWarning, match=r"thread 't': ignored a torn record at seq 6 \(partial last line\) "
                                                 r"left by an interrupted write; read the log up to seq 5"):
            reader = await store.open_reader("t")
        async with reader:
            assert await reader.last_seq() == 5
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (verify collects the warning as a note)
            check = await verify_store(store)
    assert check.ok and check.records == 5 and len(check.notes) == 1 and "seq 6" in check.notes[0]


def damage_a_page(path: str) -> None:
    """Overwrite the middle of the records table's root page, as bit rot of a page would."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'records'").fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    with open(path, "r+b") as f:
        f.seek((root - 1) * page_size + 8)
        f.write(b"\xff" * 64)


async def test_a_damaged_sqlite_page_is_a_store_corrupt_error_and_no_writer_writes_into_the_file(
        tmp_path: Path, make_records: MakeRecords) -> None:
    path = tmp_path / "s.db"
    url = f"sqlite:{path}"
    await write(url, make_records, records=300, snapshots=())
    async with await open_store(url) as store:
        async with await store.open_thread("other", owner="x") as log:
            await log.append(make_records(1))
    damage_a_page(str(path))
    before = path.read_bytes()
    advice = re.escape(f"restore it from a backup, or copy what can be read into a new store "
                       f"(`livecontext copy --store sqlite:{path} --to sqlite:NEW.db`)")
    with pytest.raises(StoreCorruptError, match=rf"the store file {path} is damaged \(.*\); nothing was written; "
                                                rf"`livecontext verify --store sqlite:.*; {advice}$"):
        async with await open_store(url) as store:
            async with await store.open_reader("t") as reader:
                await reader.read(1)
    async with await open_store(url) as store:
        with pytest.raises(StoreCorruptError, match="is damaged"):
            await store.open_thread("other", owner="x")  # (a thread whose own pages are sound)
        structure = await store.check_structure()
    assert structure and path.read_bytes() == before


async def test_load_state_passes_over_a_damaged_snapshot_to_an_older_one_and_gets_the_same_state(
        tmp_path: Path) -> None:
    from livecontext.actors.history import HistoryState, load_state, write_snapshot
    from livecontext.protocol.records import SystemPromptSet
    from livecontext.protocol.wire import make_converter

    converter = make_converter()
    url = f"jsonl:{tmp_path}"
    payloads = [SystemPromptSet(f"prompt {k}") for k in range(6)]
    state = HistoryState("t")
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="history") as log:
            for payload in payloads:
                [stored] = await log.append([NewRecord.encoding("history/t", dt.datetime.now(dt.timezone.utc), 0,
                                                                "SystemPromptSet", converter.dump_message(payload))])
                state.apply(stored.seq, payload)
                if stored.seq in (2, 4):
                    await write_snapshot(log, converter, state)
    file = tmp_path / "t" / "snapshot-00000000000000000004.json"
    file.write_bytes(file.read_bytes().replace(b"prompt 3", b"prompt X"))
    async with await open_store(url) as store:
        async with await store.open_reader("t") as reader:
            with pytest.warns(DamagedSnapshotWarning, match=r"the snapshot at seq 4 is damaged .* passed over it: "
                                                            r"the state is rebuilt from the records"):
                loaded = await load_state(reader, converter, "t")
    assert (loaded.seq, loaded.system_prompt) == (6, "prompt 5")
    async with await open_store(url) as store:
        async with await store.open_reader("t") as reader:
            with pytest.warns(DamagedSnapshotWarning):
                at_four = await load_state(reader, converter, "t", 4)
    assert (at_four.seq, at_four.system_prompt) == (4, "prompt 3")

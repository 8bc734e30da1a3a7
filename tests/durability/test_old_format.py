"""Stores written by an older record format still open, fold, verify and resume.

The stores in ``tests/fixtures/v1`` were written by format v1 (commit fc1e7f4; see the
README there): every kind of record that format wrote, a snapshot, and a tail after it.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pytest

from livecontext.actors import AgentSettings
from livecontext.actors.apps import Notebook
from livecontext.actors.agent._session import open_session, run_until_idle
from livecontext.actors.history import HistoryState, load_state
from livecontext.actors.history import write_snapshot
from livecontext.protocol.history import HistoryEntry, ModelOutputEntry, ToolResultsEntry
from livecontext.protocol.wire import SCHEMA_VERSION, make_converter
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import LeaseLostError, NewRecord, StoredRecord, TornRecordWarning, open_store
from livecontext.runtime.persistence.sqlite._compression import pack_text

from tests.support.command import json_lines, without_added_keys

V1 = Path(__file__).parent.parent / "fixtures" / "v1"
THREAD = "old"
V1_KINDS = {"SystemPromptSet", "EntryAppended", "ToolStarted", "ToolResultRecorded", "NotificationPosted",
            "HistoryEdited", "EntriesFolded", "AccessDenied"}
"""Every kind of record format v1 wrote."""


def copy_of_v1_store(backend: str, tmp_path: Path) -> str:
    """The URL of a copy of the v1 store of ``backend`` (opening a store may write to it)."""
    if backend == "sqlite":
        shutil.copy(V1 / "store.db", tmp_path / "store.db")
        return f"sqlite:{tmp_path / 'store.db'}"
    shutil.copytree(V1 / "store", tmp_path / "store")
    return f"jsonl:{tmp_path / 'store'}"


def printed_by_v1(backend: str, what: str) -> Any:
    return json.loads((V1 / f"{backend}.{what}.json").read_text(encoding="utf-8"))


async def folded(url: str) -> HistoryState:
    """The thread's state as opening it builds it: the latest snapshot, then the tail."""
    async with await open_store(url) as store:
        async with await store.open_reader(THREAD) as reader:
            return await load_state(reader, make_converter(), THREAD)


async def replayed_from_the_first_record(url: str) -> HistoryState:
    """The thread's state folded from every record, no snapshot."""
    converter = make_converter()
    async with await open_store(url) as store:
        async with await store.open_reader(THREAD) as reader:
            records = await reader.read(1)
    return HistoryState.replay(THREAD, ((r.seq, converter.load_message(json.loads(r.payload))) for r in records))


def entries_folded_by_v1(backend: str) -> list[HistoryEntry]:
    converter = make_converter()
    return [converter.structure(e, HistoryEntry) for e in printed_by_v1(backend, "entries")]  # type: ignore[arg-type]


async def test_a_v1_store_holds_every_record_kind_v1_wrote_and_each_verifies(backend: str, tmp_path: Path) -> None:
    url = copy_of_v1_store(backend, tmp_path)
    async with await open_store(url) as store:
        async with await store.open_reader(THREAD) as reader:
            records = await reader.read(1)
            snapshot = await reader.latest_snapshot()
    assert {r.kind for r in records} == V1_KINDS
    assert {r.schema_version for r in records} == {1}
    for record in records:
        record.verify()
    assert snapshot is not None and snapshot.schema_version == 1 and snapshot.seq < records[-1].seq
    snapshot.verify(records[snapshot.seq - 1])


async def test_a_v1_store_folds_to_the_entries_v1_folded_from_its_snapshot_and_from_its_first_record(
        backend: str, tmp_path: Path) -> None:
    url = copy_of_v1_store(backend, tmp_path)
    expected = entries_folded_by_v1(backend)
    from_snapshot = await folded(url)
    from_records = await replayed_from_the_first_record(url)
    assert list(from_snapshot.entries) == expected
    assert list(from_records.entries) == expected
    assert from_records.active_tokens == from_snapshot.active_tokens
    assert [h.latest for h in from_records.app_histories()] == [h.latest for h in from_snapshot.app_histories()]
    # the fold really covers results entries whose results the records carry
    results_entries = [e for e in from_records.entries if isinstance(e, ToolResultsEntry)]
    assert [len(e.results) for e in results_entries] == [1, 2, 1]
    assert [n.id for n in results_entries[1].notifications] == ["n1"]


async def test_a_v1_store_prints_the_history_state_and_audit_v1_printed(backend: str, tmp_path: Path,
                                                                        cli: Any) -> None:
    url = copy_of_v1_store(backend, tmp_path)
    for what in ("history", "state", "audit"):
        done = await cli(what, "--store", url, "--thread", THREAD, "--json")
        assert done.returncode == 0, done.stderr
        lines = json_lines(done.stdout)
        printed = lines if what == "audit" else lines[0]
        old = printed_by_v1(backend, what)
        assert without_added_keys(printed, old) == old


async def resume_with_task_three(url: str) -> HistoryState:
    """Run a new session on the old thread (input "task three", one notebook edit, an answer);
    return the thread's state before it."""
    before = await folded(url)
    # A scripted model answers call k with turn k: the old thread made 5 calls already. Its
    # notebook holds "plan: fix step_3\ndone: task one": an edit that only applies to that
    # text shows the app's state was rebuilt from the old records' effects.
    turns = [{"text": f"(call {k}: answered in v1)"} for k in range(before.model_outputs)] + [
             {"text": "noting task three",
              "tool_calls": [{"name": "notebook_replace",
                              "arguments": {"old_text": "done: task one", "new_text": "done: tasks one, three"}}]},
             {"text": "noted"}]
    model = ScriptedModel.from_turns(turns)
    async with open_session(url, AgentSettings(thread_id=THREAD), "scripted",
                            inputs=("task three",), model=model, apps=[Notebook()]) as s:
        await run_until_idle(s, None)
    assert model.unused_turns() == tuple(range(before.model_outputs))
    return before


async def test_a_new_session_resumes_a_v1_thread_and_reads_it_all_back(backend: str, tmp_path: Path) -> None:
    url = copy_of_v1_store(backend, tmp_path)
    before = await resume_with_task_three(url)
    after = await folded(url)
    assert list(after.entries[: len(before.entries)]) == list(before.entries)
    added = list(after.entries[len(before.entries):])
    assert [type(e).__name__ for e in added] == ["ModelInputEntry", "ModelOutputEntry", "ToolResultsEntry",
                                               "ModelOutputEntry"]
    assert isinstance(added[1], ModelOutputEntry) and isinstance(added[2], ToolResultsEntry)
    assert [r.call_id for r in added[2].results] == [c.id for c in added[1].tool_calls]
    assert [getattr(h.latest and h.latest.effect, "text", None) for h in after.app_histories()] == ["plan: fix step_3\ndone: tasks one, three"]
    assert list((await replayed_from_the_first_record(url)).entries) == list(after.entries)
    # a snapshot written now holds v1 entries (some still as the v1 snapshot wrote them) and new ones
    converter = make_converter()
    async with await open_store(url) as store:
        async with await store.open_thread(THREAD, owner="test") as log:
            state = await load_state(log, converter, THREAD)
            await write_snapshot(log, converter, state)
            records = await log.read(1)
            snapshot = await log.latest_snapshot()
    for record in records:
        record.verify()
    assert [r.schema_version for r in records] == [1] * before.seq + [SCHEMA_VERSION] * (len(records) - before.seq)
    assert [r.kind for r in records[before.seq:]] == ["ThreadConfigured", "EntryAppended", "ContextCompacted",
                                                      "EntryAppended", "ToolResultRecorded", "ToolResultsAppended",
                                                      "EntryAppended"]
    assert snapshot is not None and snapshot.seq == records[-1].seq and snapshot.schema_version == SCHEMA_VERSION
    snapshot.verify(records[snapshot.seq - 1])
    reopened = await folded(url)
    assert reopened.seq == snapshot.seq and list(reopened.entries) == list(after.entries)


# SQLite store format: format 1 (the v1 fixture) kept every value as text; format 2 may keep
# a payload or state compressed (a BLOB) and a checksum as its 32 bytes.


def store_format(path: Path) -> int:
    """A SQLite store's format version (``PRAGMA user_version``)."""
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def stored_types(path: Path) -> dict[int, tuple[str, str]]:
    """Each record of the old thread: the SQLite storage classes of its payload and checksum."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT seq, typeof(payload), typeof(checksum) FROM records WHERE thread_id = ?"
                            " ORDER BY seq", (THREAD,))
        return {seq: (payload, checksum) for seq, payload, checksum in rows}


def a_long_note() -> NewRecord:
    text = json.dumps({"note": "\n".join(f"line {k} of a note long enough to be compressed" for k in range(10))})
    return NewRecord("test", dt.datetime.now(dt.timezone.utc), 0, "note", text)


async def every_record_verified(url: str, thread_id: str = THREAD) -> list[StoredRecord]:
    async with await open_store(url) as store:
        async with await store.open_reader(thread_id) as reader:
            records = await reader.read(1)
    for record in records:
        record.verify()
    return records


async def test_reading_a_v1_sqlite_store_or_opening_its_thread_to_write_leaves_it_format_1(tmp_path: Path) -> None:
    url = copy_of_v1_store("sqlite", tmp_path)
    await folded(url)
    async with await open_store(url) as store:
        async with await store.open_thread(THREAD, owner="test") as log:
            await log.read(1)
    assert store_format(tmp_path / "store.db") == 1  # an older build still opens it
    assert set(stored_types(tmp_path / "store.db").values()) == {("text", "text")}


@pytest.mark.parametrize("write", ["append", "snapshot", "fork"])
async def test_the_first_write_of_a_record_or_snapshot_to_a_v1_sqlite_store_makes_it_format_2(
        write: str, tmp_path: Path) -> None:
    url = copy_of_v1_store("sqlite", tmp_path)
    old = await every_record_verified(url)
    async with await open_store(url) as store:
        if write == "fork":
            await store.fork(THREAD, len(old), "forked")
        else:
            async with await store.open_thread(THREAD, owner="test") as log:
                if write == "append":
                    await log.append([a_long_note()])
                else:
                    await log.write_snapshot(len(old), a_long_note().payload)
    assert store_format(tmp_path / "store.db") == 2  # an older build refuses it now
    assert (await every_record_verified(url))[: len(old)] == old
    if write == "fork":
        assert [r.payload for r in await every_record_verified(url, "forked")] == [r.payload for r in old]


async def test_a_v1_sqlite_store_whose_first_write_is_rolled_back_stays_format_1_until_one_commits(
        tmp_path: Path) -> None:
    url = copy_of_v1_store("sqlite", tmp_path)
    path = tmp_path / "store.db"
    async with await open_store(url) as store:
        async with await store.open_thread(THREAD, owner="test") as log:
            with sqlite3.connect(path) as conn:  # another writer took the thread: our append fails
                (token,) = conn.execute("SELECT token FROM leases WHERE thread_id = ?", (THREAD,)).fetchone()
                conn.execute("UPDATE leases SET token = 'someone-else' WHERE thread_id = ?", (THREAD,))
            with pytest.raises(LeaseLostError):
                await log.append([a_long_note()])
            assert store_format(path) == 1
            with sqlite3.connect(path) as conn:  # (given back)
                conn.execute("UPDATE leases SET token = ? WHERE thread_id = ?", (token, THREAD))
            await log.append([a_long_note()])
    assert store_format(path) == 2
    assert stored_types(path)[len(stored_types(path))] == ("blob", "blob")


async def test_a_resumed_v1_sqlite_store_is_format_2_and_reads_back_its_text_rows_and_its_new_compressed_rows(
        tmp_path: Path) -> None:
    url = copy_of_v1_store("sqlite", tmp_path)
    path = tmp_path / "store.db"
    before = await resume_with_task_three(url)
    assert store_format(path) == 2
    types = stored_types(path)
    assert {types[seq] for seq in types if seq <= before.seq} == {("text", "text")}  # v1's rows, as they were
    new = [types[seq] for seq in types if seq > before.seq]
    assert {checksum for _, checksum in new} == {"blob"}
    assert ("blob", "blob") in new  # and the long payloads compressed
    records = await every_record_verified(url)
    assert [r.seq for r in records] == sorted(types)
    assert list((await replayed_from_the_first_record(url)).entries) == list((await folded(url)).entries)


async def test_a_v1_sqlite_store_with_compressed_rows_made_by_hand_reads_them_by_what_they_are(
        tmp_path: Path) -> None:
    """No build writes a compressed row to a format-1 file (that write makes it format 2), but
    one made by hand is no reason to guess: each value says what it is (text or compressed),
    and its checksum, over the text, proves what it read. So the rows read as the texts they
    were, and a writer does not drop the compressed last one as torn."""
    url = copy_of_v1_store("sqlite", tmp_path)
    path = tmp_path / "store.db"
    expected = await every_record_verified(url)
    with sqlite3.connect(path) as conn:
        for seq, payload in conn.execute("SELECT seq, payload FROM records WHERE thread_id = ?", (THREAD,)).fetchall():
            conn.execute("UPDATE records SET payload = ? WHERE thread_id = ? AND seq = ?",
                         (pack_text(payload), THREAD, seq))
    types = stored_types(path)
    assert types[len(expected)] == ("blob", "text") and store_format(path) == 1
    assert await every_record_verified(url) == expected
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornRecordWarning)
        async with await open_store(url) as store:
            async with await store.open_thread(THREAD, owner="test") as log:
                assert await log.read(1) == expected
    assert list((await folded(url)).entries) == entries_folded_by_v1("sqlite")

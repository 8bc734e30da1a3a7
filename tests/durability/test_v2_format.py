"""Stores written by record format v2 still open, fold, print, render, verify and resume.

The stores in ``tests/fixtures/v2`` were written by format v2 (commit 49ae260; see the
README there): every kind of record that format wrote, content written by reference, a
pinned task, DISPOSABLE results, a recap with data, notebook effects that name their app,
snapshots holding ``app_effects`` and a tail after the latest one. The thread's ``shell``
app is recorded as ``v2_fixture_apps:Shell``, in that folder: ``render`` and a resumed run
import it from there.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from livecontext.actors import AgentSettings
from livecontext.actors.agent._session import open_session, run_until_idle
from livecontext.actors.agent._thread_apps import shown_apps
from livecontext.actors.apps import App, Notebook
from livecontext.actors.cli._commands_store import render_json
from livecontext.actors.history import HistoryState, load_state, replay_app_effects
from livecontext.actors.history import write_snapshot
from livecontext.protocol.history import HistoryEntry, ModelOutputEntry, RecapEntry, Retention, ToolResultsEntry
from livecontext.protocol.records import AppEffect, NotebookEdited
from livecontext.protocol.wire import SCHEMA_VERSION, make_converter
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import StoredRecord, open_store
from livecontext.runtime.tokens import TokenCounter

from tests.support.command import json_lines, without_added_keys

V2 = Path(__file__).parent.parent / "fixtures" / "v2"
THREAD = "old"
V2_RECORDS = 33
V2_KINDS = {"SystemPromptSet", "ThreadConfigured", "EntryAppended", "ToolStarted", "ToolResultRecorded",
            "ToolResultsAppended", "NotificationPosted", "HistoryEdited", "EntriesFolded", "AccessDenied"}
"""Every kind of record format v2 wrote."""
V2_NOTEBOOK = "plan: fix step_3\ndone: task one"
"""The notebook's text at the end of the v2 thread."""
SNAPSHOTS = ["snapshot", "replay"]
"""Open the thread from its latest v2 snapshot and the tail, or from its records alone (the
copy's snapshots deleted)."""


def copy_of_v2_store(backend: str, tmp_path: Path, *, snapshots: bool = True) -> str:
    """The URL of a copy of the v2 store of ``backend`` (opening a store may write to it),
    without its snapshots if ``snapshots`` is false."""
    if backend == "sqlite":
        shutil.copy(V2 / "store.db", tmp_path / "store.db")
        if not snapshots:
            with sqlite3.connect(tmp_path / "store.db") as conn:
                conn.execute("DELETE FROM snapshots")
            conn.close()
        return f"sqlite:{tmp_path / 'store.db'}"
    shutil.copytree(V2 / "store", tmp_path / "store")
    if not snapshots:
        (tmp_path / "store" / THREAD / "snapshots.jsonl").write_bytes(b"")
    return f"jsonl:{tmp_path / 'store'}"


def printed_by_v2(backend: str, what: str) -> Any:
    return json.loads((V2 / f"{backend}.{what}.json").read_text(encoding="utf-8"))


def entries_folded_by_v2(backend: str) -> list[HistoryEntry]:
    converter = make_converter()
    return [converter.structure(e, HistoryEntry) for e in printed_by_v2(backend, "entries")]  # type: ignore[arg-type]


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> type[App]:
    """The thread's shell app class, imported as the thread recorded it."""
    monkeypatch.syspath_prepend(str(V2))
    import v2_fixture_apps

    return v2_fixture_apps.Shell


async def folded(url: str, at_seq: int | None = None) -> HistoryState:
    """The thread's state as opening it builds it: the latest snapshot, then the tail."""
    async with await open_store(url) as store:
        async with await store.open_reader(THREAD) as reader:
            return await load_state(reader, make_converter(), THREAD, at_seq)


async def replayed_from_the_first_record(url: str) -> HistoryState:
    """The thread's state folded from every record, no snapshot."""
    converter = make_converter()
    async with await open_store(url) as store:
        async with await store.open_reader(THREAD) as reader:
            records = await reader.read(1)
    return HistoryState.replay(THREAD, ((r.seq, converter.load_message(json.loads(r.payload))) for r in records))


async def every_record_verified(url: str) -> list[StoredRecord]:
    async with await open_store(url) as store:
        async with await store.open_reader(THREAD) as reader:
            records = await reader.read(1)
    for record in records:
        record.verify()
    return records


def notebook_text(state: HistoryState) -> str | None:
    """The notebook's text as of ``state``: its latest committed effect's."""
    for history in state.app_histories():
        if history.app == "notebook" and history.latest is not None:
            effect = history.latest.effect
            assert isinstance(effect, NotebookEdited)
            return effect.text
    return None


async def rendered(url: str, at_seq: int | None = None) -> dict[str, Any]:
    """What ``render --at SEQ --json`` prints, in this process: the thread's apps rebuilt as
    of that seq (the shell app must be importable)."""
    converter = make_converter()
    async with await open_store(url) as store:
        async with await store.open_reader(THREAD) as reader:
            state = await load_state(reader, converter, THREAD, at_seq)

            async def replay(app: str) -> tuple[AppEffect, ...]:
                return await replay_app_effects(reader, converter, app, state.seq)
            apps = await shown_apps(state, converter, replay)
    return render_json(state, None, TokenCounter.from_env(), apps.windows)


async def render_of(state: HistoryState) -> dict[str, Any]:
    """``render --json`` of ``state``, its apps rebuilt from the effects it holds (no saved
    app state: v2 saved none, so nothing is replayed from the log)."""
    async def replay(app: str) -> tuple[AppEffect, ...]:
        raise AssertionError(f"app {app} has no saved state to fail to load")
    apps = await shown_apps(state, make_converter(), replay)
    return render_json(state, None, TokenCounter.from_env(), apps.windows)


def windows_of(printed: dict[str, Any]) -> list[str]:
    """The apps' windows in a rendered context (from the first one on, in its message)."""
    return [m["content"][m["content"].index("[Window: "):] for m in printed["messages"]
            if "[Window: " in (m.get("content") or "")]


# -- what the fixtures hold ----------------------------------------------------------------------


async def test_a_v2_store_holds_every_record_kind_v2_wrote_each_verified_and_a_v2_snapshot_before_a_tail(
        backend: str, tmp_path: Path) -> None:
    url = copy_of_v2_store(backend, tmp_path)
    async with await open_store(url) as store:
        async with await store.open_reader(THREAD) as reader:
            records = await reader.read(1)
            snapshot = await reader.latest_snapshot()
    assert len(records) == V2_RECORDS and {r.kind for r in records} == V2_KINDS
    assert {r.schema_version for r in records} == {2}
    for record in records:
        record.verify()
    assert snapshot is not None and snapshot.schema_version == 2 and snapshot.seq == 30
    snapshot.verify(records[snapshot.seq - 1])
    # as v2 wrote them: levels by reference, effects naming their app, app_effects in snapshots
    payloads = "\n".join(r.payload for r in records)
    assert '"recent":"live"' in payloads and '"head":' in payloads and '"tail":' in payloads
    edits = [json.loads(r.payload)["effect"] for r in records if r.kind == "ToolResultRecorded"
             and json.loads(r.payload)["effect"] is not None]
    assert [(e["type"], e["app"]) for e in edits] == [("NotebookEdited", "notebook")] * 3
    state = json.loads(snapshot.state)
    assert state["app_effects"] == [{"app": "notebook", "text": "plan: fix step_3", "type": "NotebookEdited"}]
    assert "apps" not in state


# -- reading -------------------------------------------------------------------------------------


@pytest.mark.parametrize("start", SNAPSHOTS)
async def test_a_v2_store_folds_to_the_entries_v2_folded_and_the_notebook_text_it_had_at_each_seq(
        backend: str, start: str, tmp_path: Path) -> None:
    url = copy_of_v2_store(backend, tmp_path, snapshots=start == "snapshot")
    state = await folded(url)
    assert list(state.entries) == entries_folded_by_v2(backend)
    assert list(state.entries) == list((await replayed_from_the_first_record(url)).entries)
    entries = list(state.entries)
    # what format 2 wrote reads back as it was written
    assert state.pinned == ["e1"] and entries[0].retention is Retention.CRITICAL
    long_result = entries[4].results[0]  # type: ignore[union-attr]
    assert long_result.content.recent.text.startswith(long_result.content.live.text[:600])
    assert long_result.content.recent.text.endswith(long_result.content.live.text[-300:])
    assert "lines," in long_result.content.recent.text and long_result.content.recent != long_result.content.live
    short_result = entries[8].results[0]  # type: ignore[union-attr]
    assert short_result.content.recent == short_result.content.live
    assert isinstance(entries[5], ModelOutputEntry) and isinstance(entries[6], ToolResultsEntry)
    assert entries[5].retention is entries[6].retention is Retention.DISPOSABLE
    assert [e.id for e in entries].count("e8") == 0  # (the other DISPOSABLE call, removed)
    recap = entries[10]
    assert isinstance(recap, RecapEntry) and json.loads(recap.data)["facts"] == ["the plan is noted in the notebook"]
    assert [n.id for n in entries[4].notifications] == ["n1"]  # type: ignore[union-attr]
    for expected in printed_by_v2(backend, "notebook"):
        assert notebook_text(await folded(url, expected["at"])) == expected["text"]


async def test_a_v2_store_prints_the_history_state_and_audit_v2_printed(backend: str, tmp_path: Path,
                                                                        cli: Any) -> None:
    url = copy_of_v2_store(backend, tmp_path)
    for what in ("history", "state", "audit"):
        done = await cli(what, "--store", url, "--thread", THREAD, "--json")
        assert done.returncode == 0, done.stderr
        lines = json_lines(done.stdout)
        printed = lines if what == "audit" else lines[0]
        old = printed_by_v2(backend, what)
        assert without_added_keys(printed, old) == old
        if what == "audit":
            assert [line["seq"] for line in printed] == list(range(1, V2_RECORDS + 1))
        if what == "state":
            assert printed["apps"] == {"notebook": V2_NOTEBOOK, "shell": ""}


async def test_a_v2_store_renders_as_v2_rendered_the_notebook_window_rebuilt_from_its_snapshot_and_the_tail(
        backend: str, tmp_path: Path, cli: Any) -> None:
    url = copy_of_v2_store(backend, tmp_path)
    windows = {}
    for expected in printed_by_v2(backend, "render"):
        ran = await cli("render", "--store", url, "--thread", THREAD, "--at", str(expected["at"]), "--json",
                        import_from=[V2])
        assert ran.returncode == 0, ran.stderr
        printed = json_lines(ran.stdout)[0]
        assert without_added_keys(printed, expected["printed"]) == expected["printed"]
        windows[expected["at"]] = windows_of(printed)
    # seq 29: the notebook from the snapshot at 20 alone; 32: from the snapshot at 30 and
    # seq 31's edit (30 and 33 end with a model output: no window)
    assert windows == {29: ["[Window: notebook]\nplan: fix step_3\n\n[Window: shell]\n"], 30: [],
                       32: [f"[Window: notebook]\n{V2_NOTEBOOK}\n\n[Window: shell]\n"], 33: []}


@pytest.mark.usefixtures("shell")
async def test_a_v2_store_without_its_snapshots_renders_the_same_from_its_records(
        backend: str, tmp_path: Path) -> None:
    url = copy_of_v2_store(backend, tmp_path, snapshots=False)
    for expected in printed_by_v2(backend, "render"):
        printed = await rendered(url, expected["at"])
        assert without_added_keys(printed, expected["printed"]) == expected["printed"]


async def test_at_every_seq_a_v2_thread_opened_from_its_snapshots_is_the_state_its_records_fold_to(
        backend: str, tmp_path: Path, shell: type[App]) -> None:
    """Snapshots at 10 (JSONL: results still pending, a notification not yet delivered), 20
    and 30, each with the tail after it; render (the apps rebuilt as of the seq) agrees too."""
    url = copy_of_v2_store(backend, tmp_path)
    converter = make_converter()
    records = await every_record_verified(url)
    replayed = HistoryState(THREAD)
    for record in records:
        replayed.apply(record.seq, converter.load_message(json.loads(record.payload)))
        opened = await folded(url, record.seq)
        assert opened.seq == replayed.seq == record.seq
        assert list(opened.entries) == list(replayed.entries)
        assert (opened.recorded, opened.started) == (replayed.recorded, replayed.started)
        assert opened.pending_notifications == replayed.pending_notifications
        assert (opened.state, opened.status, opened.config) == (replayed.state, replayed.status, replayed.config)
        assert notebook_text(opened) == notebook_text(replayed)
        if replayed.config is not None:  # (from seq 2 on)
            assert await render_of(opened) == await render_of(replayed)


# -- resuming ------------------------------------------------------------------------------------


async def resume_with_task_three(url: str, shell: type[App]) -> HistoryState:
    """Run a new session on the old thread, with its apps (input "task three", one notebook
    edit, an answer); return the thread's state before it."""
    before = await folded(url)
    # A scripted model answers call k with turn k: the old thread made 8 calls already. Its
    # notebook holds "plan: fix step_3\ndone: task one": an edit that only applies to that
    # text shows the app's state was rebuilt from the old records' effects.
    turns = [{"text": f"(call {k}: answered in v2)"} for k in range(before.model_outputs)] + [
             {"text": "noting task three",
              "tool_calls": [{"name": "notebook_replace",
                              "arguments": {"old_text": "done: task one", "new_text": "done: tasks one, three"}}]},
             {"text": "noted"}]
    model = ScriptedModel.from_turns(turns)
    async with open_session(url, AgentSettings(thread_id=THREAD), "scripted",
                            inputs=("task three",), model=model, apps=[Notebook(), shell()]) as s:
        await run_until_idle(s, None)
    assert model.unused_turns() == tuple(range(before.model_outputs))
    return before


@pytest.mark.parametrize("start", SNAPSHOTS)
async def test_a_new_session_resumes_a_v2_thread_its_notebook_continuing_from_its_v2_text(
        backend: str, start: str, tmp_path: Path, shell: type[App], cli: Any) -> None:
    url = copy_of_v2_store(backend, tmp_path, snapshots=start == "snapshot")
    async with await open_store(url) as store:
        async with await store.open_reader(THREAD) as reader:
            latest = await reader.latest_snapshot()
    assert (latest.seq if latest is not None else None) == (30 if start == "snapshot" else None)
    before = await resume_with_task_three(url, shell)
    assert before.seq == V2_RECORDS and notebook_text(before) == V2_NOTEBOOK
    after = await folded(url)
    assert list(after.entries[: len(before.entries)]) == list(before.entries)
    added = list(after.entries[len(before.entries):])
    assert [type(e).__name__ for e in added] == ["ModelInputEntry", "ModelOutputEntry", "ToolResultsEntry",
                                               "ModelOutputEntry"]
    assert isinstance(added[1], ModelOutputEntry) and isinstance(added[2], ToolResultsEntry)
    assert [r.call_id for r in added[2].results] == [c.id for c in added[1].tool_calls]
    assert notebook_text(after) == "plan: fix step_3\ndone: tasks one, three"
    replayed = await replayed_from_the_first_record(url)
    assert list(replayed.entries) == list(after.entries) and notebook_text(replayed) == notebook_text(after)
    # format-3 records after the v2 ones, the new effect wrapped with its app
    records = await every_record_verified(url)
    assert [r.schema_version for r in records] == [2] * V2_RECORDS + [SCHEMA_VERSION] * (len(records) - V2_RECORDS)
    new = records[V2_RECORDS:]
    assert [r.kind for r in new] == ["ThreadConfigured", "EntryAppended", "ContextCompacted", "AppWindowsRecorded",
                                     "EntryAppended", "ToolResultRecorded", "ToolResultsAppended", "EntryAppended"]
    effect = json.loads(new[5].payload)["effect"]
    assert (effect["type"], effect["app"], effect["effect"]) == (
        "AppEffect", "notebook", {"text": "plan: fix step_3\ndone: tasks one, three", "type": "NotebookEdited"})
    # render shows the window as the resumed agent saw it; audit lists every record
    shown = await rendered(url, new[5].seq)
    assert windows_of(shown) == ["[Window: notebook]\nplan: fix step_3\ndone: tasks one, three\n\n[Window: shell]\n"]
    done = await cli("audit", "--store", url, "--thread", THREAD, "--json")
    assert done.returncode == 0, done.stderr
    audit = json_lines(done.stdout)
    assert [line["seq"] for line in audit] == [r.seq for r in records]
    old = printed_by_v2(backend, "audit")
    assert without_added_keys(audit[:V2_RECORDS], old) == old
    # a snapshot written now is format 3: the notebook's effects in apps, none in app_effects
    converter = make_converter()
    async with await open_store(url) as store:
        async with await store.open_thread(THREAD, owner="test") as log:
            state = await load_state(log, converter, THREAD)
            await write_snapshot(log, converter, state)
            snapshot = await log.latest_snapshot()
    assert snapshot is not None and snapshot.seq == records[-1].seq and snapshot.schema_version == SCHEMA_VERSION
    snapshot.verify(records[snapshot.seq - 1])
    saved = json.loads(snapshot.state)
    assert saved["app_effects"] == [] and [a["app"] for a in saved["apps"]] == ["notebook"]
    reopened = await folded(url)
    assert reopened.seq == snapshot.seq and list(reopened.entries) == list(after.entries)
    assert notebook_text(reopened) == notebook_text(after)


async def test_a_v2_thread_stopped_at_its_snapshot_finishes_its_notebook_call_on_the_text_the_snapshot_holds(
        backend: str, tmp_path: Path, shell: type[App]) -> None:
    """A fork at seq 30 holds the v2 snapshot at 30 and nothing after it: the model's
    notebook_replace there (of "plan: fix step_3") was never run. Resumed, the call runs on
    the notebook rebuilt from that snapshot's ``app_effects`` alone, and succeeds."""
    url = copy_of_v2_store(backend, tmp_path)
    async with await open_store(url) as store:
        await store.fork(THREAD, 30, "mid")
        async with await store.open_reader("mid") as reader:
            snapshot = await reader.latest_snapshot()
            stopped = await load_state(reader, make_converter(), "mid")
    assert snapshot is not None and snapshot.seq == 30 and snapshot.schema_version == 2
    assert stopped.pending_calls() == 1 and notebook_text(stopped) == "plan: fix step_3"
    turns = [{"text": f"(call {k}: answered in v2)"} for k in range(stopped.model_outputs)] + [
             {"text": "noting task three",
              "tool_calls": [{"name": "notebook_replace",
                              "arguments": {"old_text": "done: task one", "new_text": "done: tasks one, three"}}]},
             {"text": "noted"}]
    async with open_session(url, AgentSettings(thread_id="mid"), "scripted", model=ScriptedModel.from_turns(turns),
                            apps=[Notebook(), shell()]) as s:
        await run_until_idle(s, None)
    async with await open_store(url) as store:
        async with await store.open_reader("mid") as reader:
            resumed = await load_state(reader, make_converter(), "mid")
    finished = resumed.entries[len(stopped.entries)]
    assert isinstance(finished, ToolResultsEntry)
    assert [(r.name, r.status.value, r.content.live.text) for r in finished.results] == [
        ("notebook_replace", "ok", V2_NOTEBOOK)]
    assert notebook_text(resumed) == "plan: fix step_3\ndone: tasks one, three"


# -- the SQLite file -----------------------------------------------------------------------------
# The v2 build's SQLite stores are store format 2 (compressed payloads, checksums as bytes),
# as this build's are: its first write has no file to upgrade. What it writes are format-3
# records (and snapshots), which a format-2 build refuses by their version.


def store_format(path: Path) -> int:
    """A SQLite store's format version (``PRAGMA user_version``)."""
    with sqlite3.connect(path) as conn:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    conn.close()
    return version


def rows(path: Path, table: str) -> dict[int, tuple[Any, ...]]:
    """Each row of the old thread in ``records`` or ``snapshots``, by seq, as stored."""
    with sqlite3.connect(path) as conn:
        found = conn.execute(f"SELECT * FROM {table} WHERE thread_id = ? ORDER BY seq", (THREAD,)).fetchall()  # noqa: S608
    conn.close()
    return {row[1]: tuple(row) for row in found}  # (both tables: thread_id, seq, ...)


async def test_a_v2_sqlite_store_stays_store_format_2_its_v2_rows_untouched_when_resumed_with_format_3_records(
        tmp_path: Path, shell: type[App]) -> None:
    url = copy_of_v2_store("sqlite", tmp_path)
    path = tmp_path / "store.db"
    records, snapshots = rows(path, "records"), rows(path, "snapshots")
    assert store_format(path) == 2 and sorted(snapshots) == [20, 30]
    await folded(url)  # reading changes nothing
    assert store_format(path) == 2 and rows(path, "records") == records
    await resume_with_task_three(url, shell)
    assert store_format(path) == 2
    after = rows(path, "records")
    assert {seq: after[seq] for seq in records} == records  # the v2 rows, byte for byte
    assert rows(path, "snapshots") == snapshots
    new = [after[seq] for seq in after if seq not in records]
    assert new and {row[7] for row in new} == {SCHEMA_VERSION}  # schema_version
    assert {type(row[8]) for row in new} == {bytes}  # checksums as bytes, as format 2 keeps them
    assert list((await replayed_from_the_first_record(url)).entries) == list((await folded(url)).entries)

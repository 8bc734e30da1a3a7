"""Snapshots write only the blocks of entries that changed, and a state opened from them is the
state folded from every record."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from livecontext.actors.history import HistoryState, load_state, write_snapshot
from livecontext.actors.history._blocks import BLOCK
from livecontext.protocol.context import EntriesFolded, HistoryEdited
from livecontext.protocol.history import ModelInputEntry, RecapEntry, Retention
from livecontext.protocol.kernel import ActorId, Message
from livecontext.protocol.records import EntryAppended
from livecontext.protocol.wire import make_converter
from livecontext.runtime.persistence import CorruptRecordError, DamagedSnapshotWarning, NewRecord, open_store
from livecontext.runtime.tokens import TokenCounter

CONVERTER = make_converter()
COUNTER = TokenCounter()
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def _input(number: int, text: str = "hi", revision: int = 1, retention: Retention = Retention.COMPRESSIBLE
           ) -> ModelInputEntry:
    return ModelInputEntry(id=f"e{number}", revision=revision, author=ActorId("engine", "t"), created_at=NOW,
                           retention=retention, content=COUNTER.content(text, text, text), text=text)


def _recap(number: int, covers: tuple[str, ...]) -> RecapEntry:
    return RecapEntry(id=f"e{number}", revision=1, author=ActorId("recap", "t"), created_at=NOW,
                      retention=Retention.COMPRESSIBLE, content=COUNTER.content("r", "r", "r"), covers=covers)


class _Thread:
    """A log and the state folded from it, as the history store keeps them."""

    def __init__(self, log: object) -> None:
        self.log = log
        self.state = HistoryState("t")
        self.next = 1

    async def commit(self, payload: Message) -> None:
        text = json.dumps(CONVERTER.dump_message(payload))
        [rec] = await self.log.append([NewRecord("engine/t", NOW, 0, type(payload).__name__, text)])  # type: ignore[attr-defined]
        self.state.apply(rec.seq, payload)

    async def append(self, gap: int = 1, **kw: object) -> str:
        self.next += gap
        await self.commit(EntryAppended(_input(self.next, **kw)))  # type: ignore[arg-type]
        return f"e{self.next}"


def _url(backend: str, folder: Path) -> str:
    return {"memory": "memory:", "sqlite": f"sqlite:{folder / 'db'}", "jsonl": f"jsonl:{folder}"}[backend]


def _same(opened: HistoryState, folded: HistoryState) -> None:
    assert list(opened.entries) == list(folded.entries)
    assert list(opened.active) == list(folded.active)
    assert opened.recaps == folded.recaps
    assert (opened.pos, opened.pinned, opened.active_tokens, opened.active_bytes, opened.seq, opened.next_entry) == (
        folded.pos, folded.pinned, folded.active_tokens, folded.active_bytes, folded.seq, folded.next_entry)


_OPS = st.lists(st.tuples(st.sampled_from(["append", "append", "append", "fold", "remove", "revise", "snapshot"]),
                          st.integers(1, 300), st.integers(0, 10**6)), min_size=1, max_size=40)


async def _play(url: str, ops: list[tuple[str, int, int]]) -> None:
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="test") as log:
            thread = _Thread(log)
            for op, size, pick in ops:
                state = thread.state
                live = [e.id for e in state.active]
                if op == "append" or not live:
                    critical = pick % 7 == 0
                    await thread.append(size, text=f"entry {pick}",
                                        retention=Retention.CRITICAL if critical else Retention.COMPRESSIBLE)
                elif op == "fold":
                    folded = tuple(live[pick % len(live):][: 1 + size % 5])
                    thread.next += 1
                    await thread.commit(EntriesFolded(_recap(thread.next, folded), folded))
                elif op == "remove":
                    await thread.commit(HistoryEdited((), (live[pick % len(live)],)))
                elif op == "revise":
                    old = state.entry(live[pick % len(live)])
                    assert isinstance(old, ModelInputEntry)
                    await thread.commit(HistoryEdited((_input(int(old.id[1:]), f"revised {pick}", old.revision + 1),)))
                else:
                    await write_snapshot(log, CONVERTER, state)
            folded = HistoryState.replay("t", [(r.seq, CONVERTER.load_message(json.loads(r.payload)))
                                             for r in await log.read(1)])
            _same(await load_state(log, CONVERTER, "t"), folded)
            _same(thread.state, folded)
            # and once more, from a snapshot of the state opened from the last one
            opened = await load_state(log, CONVERTER, "t")
            await write_snapshot(log, CONVERTER, opened)
            _same(await load_state(log, CONVERTER, "t"), folded)


@pytest.mark.parametrize("backend", ["memory", "sqlite", "jsonl"])
def test_a_state_opened_from_incremental_snapshots_and_the_tail_is_the_state_folded_from_every_record(
        backend: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    @settings(max_examples=25 if backend == "memory" else 10, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(_OPS)
    def check(ops: list[tuple[str, int, int]]) -> None:
        folder = tmp_path_factory.mktemp(backend)
        trio.run(_play, _url(backend, folder), ops)

    check()


async def test_a_snapshot_after_a_few_changes_writes_only_the_blocks_they_touched() -> None:
    async with await open_store("memory:") as store:
        async with await store.open_thread("t", owner="test") as log:
            thread = _Thread(log)
            ids = [await thread.append() for _ in range(5 * BLOCK)]
            first = await write_snapshot(log, CONVERTER, thread.state)
            assert len(first.parts) == 6  # e2..e1281: blocks 0 to 5
            await thread.append()  # block 5
            await thread.commit(HistoryEdited((), (ids[10],)))  # block 0
            await thread.commit(HistoryEdited((_input(3 * BLOCK, "new text", 2),)))  # block 3
            draft = thread.state.snapshot()
            assert [number for number, key, items in draft.blocks if items is not None] == [0, 3, 5]
            second = await write_snapshot(log, CONVERTER, thread.state, draft)
            kept = {first.parts[i] for i in (1, 2, 4)}
            assert kept <= set(second.parts) and len(set(second.parts) - set(first.parts)) == 3
            nothing = thread.state.snapshot()
            assert all(items is None for _, _, items in nothing.blocks)


async def test_a_snapshot_that_could_not_be_written_leaves_its_blocks_to_the_next_one() -> None:
    async with await open_store("memory:") as store:
        async with await store.open_thread("t", owner="test") as log:
            thread = _Thread(log)
            await thread.append(gap=BLOCK)
            await write_snapshot(log, CONVERTER, thread.state)
            await thread.append()
            draft = thread.state.snapshot()
            thread.state.snapshot_lost(draft)
            again = thread.state.snapshot()
            assert [number for number, _, items in again.blocks if items is not None] == [1]


@pytest.mark.parametrize("backend", ["sqlite", "jsonl", "memory"])
async def test_a_damaged_part_is_a_corrupt_record_error_naming_the_snapshot_and_opening_passes_over_it(backend: str, tmp_path: Path) -> None:
    async with await open_store(_url(backend, tmp_path)) as store:
        async with await store.open_thread("t", owner="test") as log:
            thread = _Thread(log)
            for _ in range(3):
                await thread.append(gap=100)
            snap = await write_snapshot(log, CONVERTER, thread.state)
            key = snap.parts[1]
            if backend == "sqlite":
                import sqlite3
                with sqlite3.connect(tmp_path / "db") as conn:
                    conn.execute("UPDATE snapshot_parts SET data = ? WHERE key = ?", (b"damaged", key))
                conn.close()
            elif backend == "jsonl":
                (tmp_path / "t" / "parts" / key).write_bytes(b"damaged")
            else:
                store._backend._threads["t"].parts[key] = b"damaged"  # type: ignore[attr-defined]
            with pytest.raises(CorruptRecordError, match=rf"the snapshot part at seq {snap.seq} is corrupt \(its part {key} fails"):
                await log.read_snapshot_parts(snap)
            # opening passes over it (snapshots only shorten replay) and says so
            with pytest.warns(DamagedSnapshotWarning, match=rf"the snapshot at seq {snap.seq} is damaged \(its part {key} "):
                state = await load_state(log, CONVERTER, "t")
            _same(state, thread.state)


@pytest.mark.parametrize("backend", ["sqlite", "jsonl", "memory"])
async def test_a_fork_copies_the_parts_of_its_snapshot_and_opens_as_the_source_did(
        backend: str, tmp_path: Path) -> None:
    async with await open_store(_url(backend, tmp_path)) as store:
        async with await store.open_thread("t", owner="test") as log:
            thread = _Thread(log)
            for _ in range(4):
                await thread.append(gap=200)
            await write_snapshot(log, CONVERTER, thread.state)
            await thread.append()
            at = thread.state.seq
            await write_snapshot(log, CONVERTER, thread.state)  # uses 3 parts of the one before
            await thread.append()
            await write_snapshot(log, CONVERTER, thread.state)
        await store.fork("t", at, "u")
        async with await store.open_thread("u", owner="test") as log:
            copied = await log.latest_snapshot()
            assert copied is not None and copied.seq == at and len(copied.parts) == 4
            opened = await load_state(log, CONVERTER, "u")
            assert [e.id for e in opened.entries] == [e.id for e in thread.state.entries[:5]]
            await write_snapshot(log, CONVERTER, opened)  # its own, reusing the copied parts
            assert list((await load_state(log, CONVERTER, "u")).entries) == list(opened.entries)


@pytest.mark.parametrize("change", ["revise", "fold", "remove"])
async def test_a_change_to_an_entry_of_an_old_block_reaches_the_next_snapshot(change: str) -> None:
    async with await open_store("memory:") as store:
        async with await store.open_thread("t", owner="test") as log:
            thread = _Thread(log)
            ids = [await thread.append(gap=50) for _ in range(20)]
            await write_snapshot(log, CONVERTER, thread.state)
            if change == "revise":
                await thread.commit(HistoryEdited((_input(int(ids[2][1:]), "revised", 2),)))
            elif change == "fold":
                thread.next += 1
                await thread.commit(EntriesFolded(_recap(thread.next, (ids[2],)), (ids[2],)))
            else:
                await thread.commit(HistoryEdited((), (ids[2],)))
            await write_snapshot(log, CONVERTER, thread.state)
            snap = await log.latest_snapshot()
            assert snap is not None and snap.seq == thread.state.seq  # (no tail to replay)
            _same(await load_state(log, CONVERTER, "t"), thread.state)

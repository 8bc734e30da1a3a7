"""Opening from a snapshot decodes an entry only when it is used, and loses nothing."""

from __future__ import annotations

import json

from livecontext.actors.history._render import MAX_MISFITS
from livecontext.actors.history import HistoryState, load_state
from livecontext.actors.history._lazy import Raw
from livecontext.actors.history import write_snapshot
from livecontext.actors.history._log import dump_snapshot
from livecontext.actors.history._render import render
from livecontext.protocol.history import ModelInputEntry, ModelOutputEntry, Retention
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.records import EntryAppended
from livecontext.protocol.wire import make_converter
from livecontext.runtime.persistence import NewRecord, open_store
from livecontext.runtime.tokens import TokenCounter

import datetime as dt

CONVERTER = make_converter()
COUNTER = TokenCounter()
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def _entry(n: int):  # type: ignore[no-untyped-def]
    cls = ModelInputEntry if n % 2 else ModelOutputEntry
    text = f"entry number {n}"
    extra = {"text": text} if cls is ModelInputEntry else {}
    return cls(id=f"e{n}", revision=1, author=ActorId("engine", "t"), created_at=NOW,
               retention=Retention.COMPRESSIBLE, content=COUNTER.content(text, text, text), **extra)


async def _thread_with_snapshot(entries: int, snapshot_at: int):  # type: ignore[no-untyped-def]
    store = await open_store("memory:")
    log = await store.open_thread("t", owner="test")
    state = HistoryState("t")
    for n in range(1, entries + 1):
        payload = EntryAppended(_entry(n))
        [rec] = await log.append([NewRecord("engine/t", NOW, 0, "EntryAppended",
                                            json.dumps(CONVERTER.dump_message(payload)))])
        state.apply(rec.seq, payload)
        if rec.seq == snapshot_at:
            await write_snapshot(log, CONVERTER, state)
    return store, log, state


async def test_a_state_opened_from_a_snapshot_equals_the_replayed_one() -> None:
    store, log, replayed = await _thread_with_snapshot(200, 150)
    opened = await load_state(log, CONVERTER, "t")
    assert list(opened.entries) == replayed.entries
    assert list(opened.active) == replayed.active
    assert (opened.active_tokens, opened.active_bytes, opened.pos) == (
        replayed.active_tokens, replayed.active_bytes, replayed.pos)
    await store.aclose()


async def test_opening_from_a_snapshot_decodes_only_the_entries_rendering_uses() -> None:
    store, log, _ = await _thread_with_snapshot(300, 300)
    opened = await load_state(log, CONVERTER, "t")
    stored = opened.entries.items_as_stored()  # type: ignore[attr-defined]
    assert all(type(item) is Raw for item in stored)

    result = render(opened.active, opened.recaps, 60, system_prompt="", system_tokens=0,
                    windows="", windows_tokens=0)
    decoded = [i for i, item in enumerate(opened.active.items_as_stored()) if type(item) is not Raw]  # type: ignore[attr-defined]
    # the rendered ones, the misfits looked at before it stopped, and the oldest, whose id the
    # line saying what was left out names
    looked_at = result.entries + 2 * MAX_MISFITS + 2
    assert 0 < len(decoded) <= looked_at + 1
    assert decoded[0] == 0 and min(decoded[1:]) >= 300 - looked_at  # only the newest
    await store.aclose()


async def test_a_snapshot_of_an_opened_state_reuses_the_undecoded_entries_as_they_were() -> None:
    store, log, _ = await _thread_with_snapshot(600, 600)
    first = await log.latest_snapshot()
    opened = await load_state(log, CONVERTER, "t")
    assert first is not None and len(first.parts) == 3
    unchanged = dump_snapshot(CONVERTER, opened.snapshot())
    assert (unchanged.state, unchanged.parts, unchanged.new_parts) == (first.state, first.parts, {})
    opened.changed = set(opened.parts)  # every block encoded again: the same bytes
    again = dump_snapshot(CONVERTER, opened.snapshot())
    assert again.parts == first.parts and set(again.new_parts) == set(first.parts)
    assert all(type(item) is Raw for item in opened.entries.items_as_stored())  # type: ignore[attr-defined]
    await store.aclose()


def _undecoded(entries: list) -> int:  # type: ignore[type-arg]
    return sum(type(item) is Raw for item in list.__iter__(entries))


async def test_finding_ephemeral_entries_and_taking_one_out_decode_no_other_entry() -> None:
    store, log, replayed = await _thread_with_snapshot(400, 400)
    opened = await load_state(log, CONVERTER, "t")
    assert _undecoded(opened.active) == 400
    assert opened.active_with_retention(Retention.COMPRESSIBLE) == [f"e{n}" for n in range(1, 401)]
    assert opened.active_with_retention(Retention.EPHEMERAL) == []
    assert _undecoded(opened.active) == 400  # (the history store asks this at every start)
    opened._deactivate_ids({"e7"})  # (what a fold, a revision or a removal does)
    replayed._deactivate_ids({"e7"})
    assert _undecoded(opened.active) == 399
    assert list(opened.active) == list(replayed.active)
    assert (opened.active_tokens, opened.active_bytes) == (replayed.active_tokens, replayed.active_bytes)
    await store.aclose()

"""Reflection: reading a thread's history by id, position, time and kind, folded or not."""

from __future__ import annotations

from livecontext.protocol.context import EditHistory, FoldIntoRecap, RemoveEntries, SetRetention
from livecontext.protocol.history import RecapEntry, Retention

from tests.support.context_world import HistoryWorld, open_history, replay


async def folded_world(world: HistoryWorld) -> tuple[list[str], RecapEntry]:
    """Three steps (e1 ... e12), the first folded into a recap (e13)."""
    for n in range(3):
        await world.step(n)
    ids = [e.id for e in (await world.read()).entries]
    reply = await world.root.ask(world.history, FoldIntoRecap(
        tuple([await world.ref(i) for i in ids[:4]]), "the first step", "step 0", "test"))
    assert reply.recap is not None
    return ids, reply.recap


async def test_by_default_a_read_returns_the_unfolded_entries_and_the_recap() -> None:
    async with open_history() as world:
        ids, recap = await folded_world(world)
        view = await world.read()
        assert [e.id for e in view.entries] == [*ids[4:], recap.id]
        assert view.total == 13
        state = replay("h", await world.records())
        assert (view.active_tokens, view.seq) == (state.active_tokens, state.seq)
        everything = await world.read(include_folded=True)
        assert [e.id for e in everything.entries] == [*ids, recap.id]
        assert [e.folded for e in everything.entries] == [True] * 4 + [False] * 9


async def test_an_id_range_includes_both_ends_and_survives_a_removed_bound() -> None:
    async with open_history() as world:
        ids, _ = await folded_world(world)
        view = await world.read(start_id=ids[5], end_id=ids[7])
        assert [e.id for e in view.entries] == ids[5:8]
        # folded entries are only in range when asked for
        assert [e.id for e in (await world.read(start_id=ids[2], end_id=ids[5])).entries] == ids[4:6]
        assert [e.id for e in (await world.read(start_id=ids[2], end_id=ids[5], include_folded=True)).entries] == ids[2:6]
        # remove the entry a bound names: the range still starts there
        ref = await world.ref(ids[8])
        applied = await world.root.ask(world.history, EditHistory((SetRetention(ref, Retention.DISPOSABLE),)))
        await world.root.ask(world.history, EditHistory((RemoveEntries(applied.entries),)))
        assert [e.id for e in (await world.read(start_id=ids[8], end_id=ids[10])).entries] == ids[9:11]


async def test_positions_count_every_entry_folded_or_not() -> None:
    async with open_history() as world:
        ids, recap = await folded_world(world)
        assert [e.id for e in (await world.read(start=2, stop=6, include_folded=True)).entries] == ids[2:6]
        assert [e.id for e in (await world.read(start=2, stop=6)).entries] == ids[4:6]
        assert [e.id for e in (await world.read(start=11)).entries] == [ids[11], recap.id]


async def test_a_time_range_selects_by_creation_time() -> None:
    async with open_history() as world:
        ids, recap = await folded_world(world)
        entries = (await world.read(include_folded=True)).entries
        since, until = entries[5].created_at, entries[8].created_at
        view = await world.read(since=since, until=until, include_folded=True)
        assert [e.id for e in view.entries] == ids[5:9]
        # the recap was made after the last step
        assert [e.id for e in (await world.read(since=recap.created_at)).entries] == [recap.id]


async def test_kinds_select_entry_types() -> None:
    async with open_history() as world:
        ids, recap = await folded_world(world)
        results = await world.read(kinds=("tool_results",), include_folded=True)
        assert [e.id for e in results.entries] == [ids[2], ids[6], ids[10]]
        mixed = await world.read(kinds=("recap", "model_input"))
        assert [e.id for e in mixed.entries] == [ids[4], ids[8], recap.id]


async def test_a_limit_keeps_the_oldest_matches() -> None:
    async with open_history() as world:
        ids, _ = await folded_world(world)
        view = await world.read(kinds=("model_output",), limit=3)
        assert [e.id for e in view.entries] == [ids[5], ids[7], ids[9]]
        assert view.total == 13  # the totals describe the thread, not the slice


async def test_entries_carry_their_levels_token_counts_retention_and_revision() -> None:
    async with open_history() as world:
        ids, _ = await folded_world(world)
        folded = await world.entry(ids[0])
        assert folded.folded and folded.revision == 2  # folding is a revision
        live = await world.entry(ids[4])
        assert (live.revision, live.retention, live.folded) == (1, Retention.COMPRESSIBLE, False)
        assert live.content.live.text == "input 1"
        assert live.content.recent.tokens > 0 and live.content.gist.text.startswith("user: input 1")

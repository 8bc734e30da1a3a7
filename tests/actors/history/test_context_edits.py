"""Compare-and-swap edits and folds of the history store, and its limits."""

from __future__ import annotations

import pytest
import trio

from livecontext.actors.history import HistoryLimits, history_topic
from livecontext.protocol.context import (
    Conflict,
    EditApplied,
    EditConflict,
    EditHistory,
    EntriesFolded,
    EntryRef,
    FoldIntoRecap,
    GetFill,
    HistoryEdited,
    HistoryFill,
    HistoryUsage,
    LimitLevel,
    MarkFolded,
    ReadHistory,
    RemoveEntries,
    ReplaceContent,
    SetRetention,
)
from livecontext.protocol.history import Level, RecapEntry, Retention
from livecontext.protocol.kernel import Envelope
from livecontext.runtime import RemoteActorError

from tests.support.context_world import COUNTER, HistoryWorld, open_history, replay

# After two steps: e1 input, e2 output calling a tool, e3 its results, e4 answer; e5 ... e8 again.


async def two_steps(world: HistoryWorld) -> list[str]:
    await world.step(1)
    await world.step(2)
    return [e.id for e in (await world.read()).entries]


async def test_an_edit_naming_a_stale_revision_is_refused_whole_and_names_the_stale_entries() -> None:
    async with open_history() as world:
        ids = await two_steps(world)
        first, second = ids[0], ids[1]
        fresh = await world.ref(first)
        applied = await world.root.ask(world.history, EditHistory((SetRetention(fresh, Retention.CRITICAL),)))
        assert isinstance(applied, EditApplied)
        assert applied.entries == (EntryRef(first, fresh.revision + 1),)
        before = await world.records()

        # the first edit still names the old revision; the second is fine on its own
        reply = await world.root.ask(world.history, EditHistory((
            ReplaceContent(fresh, Level.GIST, "stale"),
            ReplaceContent(await world.ref(second), Level.GIST, "fresh"),
        )))

        assert reply == EditConflict((Conflict(first, fresh.revision, fresh.revision + 1),))
        assert await world.records() == before  # all or nothing: not even the fresh edit
        assert (await world.entry(second)).content.gist.text != "fresh"


async def test_the_newest_entry_cannot_be_edited() -> None:
    async with open_history() as world:
        ids = await two_steps(world)
        newest = await world.ref(ids[-1])
        reply = await world.root.ask(world.history, EditHistory((ReplaceContent(newest, Level.GIST, "x"),)))
        assert isinstance(reply, EditConflict)
        assert [c.id for c in reply.conflicts] == [newest.id]
        assert "newest entry" in reply.conflicts[0].reason


async def test_an_edit_that_would_split_a_model_output_from_its_tool_results_is_refused() -> None:
    async with open_history() as world:
        ids = await two_steps(world)
        output, results = ids[1], ids[2]
        for edit in (MarkFolded(await world.ref(output)), MarkFolded(await world.ref(results))):
            reply = await world.root.ask(world.history, EditHistory((edit,)))
            assert isinstance(reply, EditConflict), edit
            assert "split a model output from its tool results" in reply.conflicts[0].reason
        fold = FoldIntoRecap((await world.ref(ids[0]), await world.ref(output)), "recap", "gist", "test")
        reply = await world.root.ask(world.history, fold)
        assert isinstance(reply, EditConflict)
        assert reply.conflicts[0].id == output
        # together they may go
        both = EditHistory((MarkFolded(await world.ref(output)), MarkFolded(await world.ref(results))))
        assert isinstance(await world.root.ask(world.history, both), EditApplied)
        assert [e.id for e in (await world.read()).entries] == [ids[0], *ids[3:]]


async def test_only_disposable_entries_can_be_removed() -> None:
    async with open_history() as world:
        ids = await two_steps(world)
        first = await world.ref(ids[0])
        reply = await world.root.ask(world.history, EditHistory((RemoveEntries((first,)),)))
        assert isinstance(reply, EditConflict)
        assert "only DISPOSABLE" in reply.conflicts[0].reason

        applied = await world.root.ask(world.history, EditHistory((SetRetention(first, Retention.DISPOSABLE),)))
        removed = await world.root.ask(world.history, EditHistory((RemoveEntries(applied.entries),)))

        assert isinstance(removed, EditApplied)
        assert ids[0] not in [e.id for e in (await world.read(include_folded=True)).entries]
        assert (await world.records())[-1][2] == HistoryEdited((), (ids[0],))


async def test_critical_entries_are_never_folded() -> None:
    async with open_history() as world:
        ids = await two_steps(world)
        critical = (await world.root.ask(world.history, EditHistory((
            SetRetention(await world.ref(ids[0]), Retention.CRITICAL),)))).entries[0]
        marked = await world.root.ask(world.history, EditHistory((MarkFolded(critical),)))
        folded = await world.root.ask(world.history, FoldIntoRecap((critical,), "r", "g", "test"))
        for reply in (marked, folded):
            assert isinstance(reply, EditConflict)
            assert reply.conflicts[0].reason == "CRITICAL entries are never folded"
        assert not (await world.entry(ids[0])).folded


async def test_replacing_content_recounts_its_tokens() -> None:
    async with open_history() as world:
        ids = await two_steps(world)
        before = await world.read()
        text = "a much longer replacement text " * 10
        output = await world.entry(ids[1])  # it calls a tool: its counts include the call
        calls = output.content.recent.tokens - COUNTER.count(output.content.recent.text)
        assert calls > 0

        reply = await world.root.ask(world.history, EditHistory((
            ReplaceContent(await world.ref(ids[0]), Level.RECENT, text),
            ReplaceContent(await world.ref(ids[1]), Level.RECENT, text),
        )))

        assert isinstance(reply, EditApplied)
        new_input, new_output = await world.entry(ids[0]), await world.entry(ids[1])
        assert new_input.content.recent.tokens == COUNTER.count(text)
        assert new_output.content.recent.tokens == COUNTER.count(text) + calls
        assert new_output.content.gist == output.content.gist  # the other levels stay
        old_tokens = (before.entries[0].content.recent.tokens + output.content.recent.tokens)
        after = await world.read()
        assert after.active_tokens == before.active_tokens - old_tokens + 2 * COUNTER.count(text) + calls
        # the replay of the log agrees with the live store
        assert replay("h", await world.records()).active_tokens == after.active_tokens


async def test_every_edit_and_fold_is_a_log_record_with_its_sender() -> None:
    async with open_history() as world:
        ids = await two_steps(world)
        editor = world.rt.client("editor")
        await editor.ask(world.history, EditHistory((SetRetention(await world.ref(ids[0]), Retention.DISPOSABLE),)))
        await editor.ask(world.history, FoldIntoRecap(
            tuple([await world.ref(i) for i in ids[1:4]]), "recap text", "recap gist", "test"))
        kinds = [(sender, type(p).__name__) for _, sender, p in await world.records()][-2:]
        assert kinds == [("client/editor", "HistoryEdited"), ("client/editor", "EntriesFolded")]


async def test_a_fold_replaces_the_previous_recap_and_the_new_one_covers_both() -> None:
    async with open_history() as world:
        ids = await two_steps(world)
        first = await world.root.ask(world.history, FoldIntoRecap(
            (await world.ref(ids[0]),), "first recap", "g1", "test"))
        assert isinstance(first, EditApplied) and first.recap is not None
        second = await world.root.ask(world.history, FoldIntoRecap(
            tuple([await world.ref(i) for i in ids[1:4]]), "second recap", "g2", "test",
            previous_recap=EntryRef(first.recap.id, first.recap.revision)))

        assert isinstance(second, EditApplied) and second.recap is not None
        assert second.recap.covers == (first.recap.id, *ids[1:4])  # the first recap stands for ids[0]
        assert first.recap.covers == (ids[0],)
        view = await world.read()
        recaps = [e for e in view.entries if isinstance(e, RecapEntry)]
        assert [r.id for r in recaps] == [second.recap.id]
        assert [e.id for e in view.entries if not isinstance(e, RecapEntry)] == ids[4:]
        assert (await world.entry(first.recap.id)).folded
        assert {r.id for r in second.entries} == {*ids[1:4], first.recap.id}
        # a fold naming the recap that was replaced is stale
        stale = await world.root.ask(world.history, FoldIntoRecap(
            (await world.ref(ids[4]),), "x", "x", "test", previous_recap=EntryRef(first.recap.id, 1)))
        assert isinstance(stale, EditConflict)


async def test_a_fold_of_entries_that_are_not_contiguous_is_refused() -> None:
    async with open_history() as world:
        ids = await two_steps(world)
        reply = await world.root.ask(world.history, FoldIntoRecap(
            (await world.ref(ids[0]), await world.ref(ids[4])), "r", "g", "test"))
        assert isinstance(reply, EditConflict)
        assert "not contiguous" in reply.conflicts[0].reason
        assert not [p for _, _, p in await world.records() if isinstance(p, EntriesFolded)]


async def test_an_edit_without_edits_is_a_usage_error() -> None:
    async with open_history() as world:
        await two_steps(world)
        with pytest.raises(RemoteActorError, match="EditHistory needs at least one edit"):
            await world.root.ask(world.history, EditHistory(()))


async def test_at_the_truncate_threshold_the_oldest_disposable_steps_are_dropped_whole() -> None:
    limits = HistoryLimits(max_entries=12)
    async with open_history(limits=limits) as world:
        ids = await two_steps(world)
        # the first step's output and results are DISPOSABLE, and so is the second input; the
        # second step's output alone is DISPOSABLE too, but not its results: it must stay
        await world.root.ask(world.history, EditHistory(tuple([
            SetRetention(await world.ref(i), Retention.DISPOSABLE) for i in (ids[1], ids[2], ids[4], ids[5])])))
        async with world.rt.open_subscription(history_topic("h"), buffer=100) as usage:
            await world.step(3)  # 12 entries: truncate
            reports = [e.payload for e in drain(usage)]

        left = [e.id for e in (await world.read(include_folded=True)).entries]
        assert [i for i in ids if i not in left] == [ids[1], ids[2], ids[4]]  # 9 left: under hard
        levels = [r.level for r in reports if isinstance(r, HistoryUsage)]
        assert levels[-1] is LimitLevel.SOFT
        dropped = [p for _, _, p in await world.records() if isinstance(p, HistoryEdited) and p.removed]
        assert dropped == [HistoryEdited((), (ids[1], ids[2], ids[4]))]


async def test_a_drop_back_to_ok_is_published_once() -> None:
    async with open_history(limits=HistoryLimits(max_entries=10)) as world:
        async with world.rt.open_subscription(history_topic("h"), buffer=100) as usage:
            await world.step(1)
            await world.step(2)  # 8 entries: HARD
            view = await world.read()
            folded = await world.root.ask(world.history, FoldIntoRecap(
                tuple([await world.ref(e.id) for e in view.entries[:5]]), "r", "g", "test"))
            assert isinstance(folded, EditApplied)
            await world.input("more")  # 4 entries
            await world.output("more")
            levels = [e.payload.level for e in drain(usage) if isinstance(e.payload, HistoryUsage)]
        assert levels == [LimitLevel.SOFT, LimitLevel.SOFT, LimitLevel.HARD, LimitLevel.OK]


def drain(channel: trio.MemoryReceiveChannel[Envelope]) -> list[Envelope]:
    out = []
    while True:
        try:
            out.append(channel.receive_nowait())
        except trio.WouldBlock:
            return out


async def test_ephemeral_entries_are_gone_when_a_new_session_opens_the_thread() -> None:
    from livecontext.actors.history import HistoryStore
    from livecontext.protocol.kernel import ActorId

    from tests.support.context_world import CONVERTER

    async with open_history() as world:
        ids = await two_steps(world)
        first = await world.ref(ids[0])
        await world.root.ask(world.history, EditHistory((SetRetention(first, Retention.EPHEMERAL),)))
        assert ids[0] in [e.id for e in (await world.read()).entries]  # alive in this session

        await world.rt.stop(world.history)  # the session ends; a new one opens the same log
        again = await world.rt.spawn(lambda: HistoryStore("h", world.log, CONVERTER, COUNTER),
                                     ActorId("history", "h"))
        view = await world.root.ask(again, ReadHistory(include_folded=True))

        assert ids[0] not in [e.id for e in view.entries]
        assert [e.id for e in view.entries] == ids[1:]
        assert (await world.records())[-1][2] == HistoryEdited((), (ids[0],))


async def test_get_fill_reads_the_unfolded_history_against_its_limits_as_a_fold_empties_it() -> None:
    async with open_history(limits=HistoryLimits(max_entries=10, soft=0.5, hard=0.7)) as world:
        await world.step(1)
        await world.step(2)  # 8 entries: past hard
        full = await world.root.ask(world.history, GetFill())
        assert isinstance(full, HistoryFill)
        assert (full.level, full.entries, full.max_entries, full.max_tokens) == (LimitLevel.HARD, 8, 10, None)
        assert (full.soft, full.hard, full.truncate) == (0.5, 0.7, 1.0)
        assert full.tokens == (await world.read()).active_tokens > 0
        view = await world.read()
        folded = await world.root.ask(world.history, FoldIntoRecap(
            tuple([await world.ref(e.id) for e in view.entries[:5]]), "r", "g", "test"))
        assert isinstance(folded, EditApplied)
        after = await world.root.ask(world.history, GetFill())
        assert isinstance(after, HistoryFill)
        assert (after.level, after.entries) == (LimitLevel.OK, 3)
        assert after.tokens < full.tokens and after.bytes < full.bytes

"""Capabilities: who may read, append, notify, edit and fold a thread's history."""

from __future__ import annotations

from livecontext.actors import AgentSettings, spawn_agent
from livecontext.actors.agent._agent import ANALYZER_CAPABILITIES, ENGINE_CAPABILITIES, RECAP_CAPABILITIES
from livecontext.actors.analyzers import Analyzer, AnalyzerSettings
from livecontext.actors.recap import RecapSettings
from livecontext.protocol.agent import NotificationPosted, PostNotification, RunUntilIdle
from livecontext.protocol.context import (
    AccessDenied,
    Capability,
    EditApplied,
    EditHistory,
    EntryRef,
    FoldIntoRecap,
    HistorySlice,
    ReadHistory,
    ReplaceContent,
)
from livecontext.protocol.history import Level
from livecontext.protocol.kernel import ActorId, Message
from livecontext.runtime import open_runtime
from livecontext.runtime.persistence import open_store

from tests.support.context_world import CONVERTER, COUNTER, agent_turns, decode, open_history, replay, scripted


async def test_a_client_that_may_read_and_notify_is_denied_folds_and_edits_and_audited() -> None:
    async with open_history() as world:
        await world.step(1)
        await world.step(2)
        reader = world.rt.client("reader", capabilities={Capability.READ, Capability.NOTIFY})
        view = await reader.ask(world.history, ReadHistory())
        assert isinstance(view, HistorySlice)
        first = EntryRef(view.entries[0].id, view.entries[0].revision)
        before = replay("h", await world.records())

        fold = await reader.ask(world.history, FoldIntoRecap((first,), "mine now", "g", "test"))
        edit = await reader.ask(world.history, EditHistory((ReplaceContent(first, Level.LIVE, "x"),)))

        reader_id = ActorId("client", "reader")
        assert fold == AccessDenied(reader_id, Capability.FOLD, "FoldIntoRecap")
        assert edit == AccessDenied(reader_id, Capability.EDIT, "EditHistory")
        records = await world.records()
        # each denial is the store's record (it decided it), naming who tried and what
        assert [(s, p) for _, s, p in records[-2:]] == [("history/h", fold), ("history/h", edit)]
        after = replay("h", records)
        assert after.entries == before.entries and after.active == before.active
        # what it may do, it does
        posted = await reader.ask(world.history, PostNotification("look at e1"))
        assert isinstance(posted, NotificationPosted)


class Meddler(Analyzer):
    """An analyzer that tries to fold and edit the history it watches."""

    def __init__(self, *args: object, replies: list[Message]) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.replies = replies

    async def analyze(self, view: HistorySlice) -> str | None:
        if len(view.entries) >= 3 and not self.replies:
            first = EntryRef(view.entries[0].id, view.entries[0].revision)
            self.replies.append(await self.ctx.ask(self.history, FoldIntoRecap((first,), "r", "g", "meddling")))
            self.replies.append(await self.ctx.ask(self.history, EditHistory((
                ReplaceContent(first, Level.GIST, "meddled"),))))
        return None


async def test_an_analyzer_trying_to_fold_or_edit_is_denied_and_audited() -> None:
    inputs = ["one", "two"]
    model = scripted(agent_turns(len(inputs)))
    replies: list[Message] = []
    store = await open_store("memory:")
    async with store:
        log = await store.open_thread("p", owner="test")
        async with open_runtime() as rt:
            agent = await spawn_agent(rt, log, model, AgentSettings(thread_id="p"), converter=CONVERTER,
                                      counter=COUNTER, inputs=inputs)
            meddler = ActorId("analyzer", "p.meddler")
            await rt.spawn(lambda: Meddler("p", agent.history.id, AnalyzerSettings("meddler"), replies=replies),
                           meddler, capabilities=ANALYZER_CAPABILITIES)
            await rt.client("test").ask(agent.engine, RunUntilIdle(), timeout=None)
        records = decode(await log.read(1))

    assert replies == [AccessDenied(meddler, Capability.FOLD, "FoldIntoRecap"),
                       AccessDenied(meddler, Capability.EDIT, "EditHistory")]
    audits = [(s, p) for _, s, p in records if isinstance(p, AccessDenied)]
    assert audits == [("history/p", replies[0]), ("history/p", replies[1])]  # the store decided them
    kinds = {type(p).__name__ for _, _, p in records}
    assert not kinds & {"EntriesFolded", "HistoryEdited"}
    state = replay("p", records)
    assert not any(e.folded for e in state.entries)
    assert all(e.revision == 1 for e in state.entries)


async def test_each_actor_of_an_agent_gets_its_capabilities_and_no_more() -> None:
    store = await open_store("memory:")
    async with store:
        log = await store.open_thread("c", owner="test")
        settings = AgentSettings(thread_id="c", recap=RecapSettings(), analyzers=(
            AnalyzerSettings("watch"), AnalyzerSettings("editor", capabilities=("read", "notify", "edit"))))
        async with open_runtime() as rt:
            agent = await spawn_agent(rt, log, scripted([]), settings, converter=CONVERTER, counter=COUNTER)
            assert agent.recap is not None
            assert rt.capabilities(agent.engine.id) == ENGINE_CAPABILITIES
            assert rt.capabilities(agent.recap.id) == RECAP_CAPABILITIES
            watch, editor = agent.analyzers
            assert rt.capabilities(watch.id) == ANALYZER_CAPABILITIES
            assert rt.capabilities(editor.id) == {Capability.READ, Capability.NOTIFY, Capability.EDIT}
            for actor, may_fold, may_edit in ((agent.engine.id, False, False), (agent.recap.id, True, False),
                                              (watch.id, False, False), (editor.id, False, True)):
                assert rt.has_capability(actor, Capability.FOLD) is may_fold, actor
                assert rt.has_capability(actor, Capability.EDIT) is may_edit, actor


async def test_a_granted_edit_is_applied_and_recorded_with_its_sender() -> None:
    async with open_history() as world:
        await world.step(1)
        await world.step(2)
        editor = world.rt.client("editor", capabilities={Capability.READ, Capability.EDIT})
        first = await world.ref("e1")
        reply = await editor.ask(world.history, EditHistory((ReplaceContent(first, Level.GIST, "edited"),)))
        assert isinstance(reply, EditApplied)
        assert (await world.records())[-1][1] == "client/editor"
        denied = await editor.ask(world.history, FoldIntoRecap((await world.ref("e1"),), "r", "g", "test"))
        assert denied == AccessDenied(ActorId("client", "editor"), Capability.FOLD, "FoldIntoRecap")

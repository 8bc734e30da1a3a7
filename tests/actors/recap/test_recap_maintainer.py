"""The recap maintainer: folds beside the engine, retries on conflict, never leaves it waiting."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing

from livecontext.actors import AgentSettings, spawn_agent
from livecontext.actors.agent._agent import RECAP_CAPABILITIES
from livecontext.actors.analyzers import AnalyzerSettings
from livecontext.actors.history import HistoryLimits
from livecontext.actors.recap import MIN_SUMMARY_CHARS, RecapMaintainer, RecapSettings, RecapStrategy, recap_topic
from livecontext.actors.recap._layer import Layer
from livecontext.protocol.agent import Idle, IdleReason, RunUntilIdle
from livecontext.protocol.context import (
    Capability,
    EditApplied,
    EditConflict,
    EditHistory,
    EntriesFolded,
    FoldDone,
    FoldIntoRecap,
    FoldNow,
    HistoryEdited,
    ReplaceContent,
    SetRetention,
)
from livecontext.protocol.history import Level, ModelReply, ModelRequest, Retention
from livecontext.protocol.kernel import ActorId
from livecontext.runtime import AuditEvent, AuditRecord, UsageError, open_runtime
from livecontext.runtime.models import ModelClient, ScriptedModel, TextCallback
from livecontext.runtime.persistence import open_store

from tests.support.context_world import (
    CONVERTER,
    COUNTER,
    HistoryWorld,
    agent_turns,
    check_folds,
    check_no_lost_entry,
    decode,
    open_history,
    replay,
    scripted,
)


async def spawn_maintainer(world: HistoryWorld, settings: RecapSettings, model: ModelClient | None = None,
                           capabilities: frozenset[Capability] = RECAP_CAPABILITIES) -> ActorId:
    maintainer = ActorId("recap", "h")
    await world.rt.spawn(lambda: RecapMaintainer("h", world.history.id, settings, COUNTER, model),
                         maintainer, capabilities=capabilities)
    return maintainer


class EditsOnFirstCall(ModelClient):
    """A recap model that, on its first call, edits the oldest entry behind the maintainer's back."""

    name = "meddling"

    def __init__(self, world: HistoryWorld) -> None:
        self.world = world
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.requests.append(request)
        if len(self.requests) == 1:  # between the maintainer's read and its fold
            oldest = await self.world.ref("e1")
            await self.world.rt.client("editor").ask(self.world.history, EditHistory((
                ReplaceContent(oldest, Level.RECENT, "edited while summarising"),)))
        return ModelReply(text=f"summary {len(self.requests)}")


async def test_the_maintainer_retries_a_fold_after_an_edit_conflict() -> None:
    async with open_history() as world:
        for n in range(4):
            await world.step(n)
        model = EditsOnFirstCall(world)
        maintainer = await spawn_maintainer(world, RecapSettings("model_summary", window=2, batch=2), model)

        done = await world.root.ask(maintainer, FoldNow())

        assert done == FoldDone("h", 1, 16 - 3, done.tokens)  # e1 and e2+e3 folded, at the second try
        assert len(model.requests) == 2
        assert "edited while summarising" not in model.requests[0].messages[1].content
        assert "edited while summarising" in model.requests[1].messages[1].content  # re-read
        records = await world.records()
        kinds = [(s, type(p).__name__) for _, s, p in records[-2:]]
        assert kinds == [("client/editor", "HistoryEdited"), ("recap/h", "EntriesFolded")]
        fold = records[-1][2]
        assert isinstance(fold, EntriesFolded)
        assert fold.folded == ("e1", "e2", "e3") and fold.recap.content.live.text == "summary 2"
        assert (await world.entry("e1")).revision == 3  # edited, then folded
        assert check_folds("h", records, folder="recap/h") == 1


class EditsOnEveryCall(EditsOnFirstCall):
    """A recap model that edits the oldest entry behind the maintainer's back at every call."""

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.requests.append(request)
        oldest = await self.world.ref("e1")
        await self.world.root.ask(self.world.history, EditHistory((
            ReplaceContent(oldest, Level.RECENT, f"edit {len(self.requests)}"),)))
        return ModelReply(text="never folded")


async def test_the_maintainer_gives_up_a_fold_after_its_retries() -> None:
    async with open_history() as world:
        for n in range(4):
            await world.step(n)
        model = EditsOnEveryCall(world)
        settings = RecapSettings("model_summary", window=2, batch=2, max_retries=3)
        maintainer = await spawn_maintainer(world, settings, model)
        done = await world.root.ask(maintainer, FoldNow())
        assert done.folds == 0 and len(model.requests) == 3
        assert not [p for _, _, p in await world.records() if isinstance(p, EntriesFolded)]


async def test_a_maintainer_that_may_not_fold_folds_nothing() -> None:
    async with open_history() as world:
        for n in range(4):
            await world.step(n)
        maintainer = await spawn_maintainer(world, RecapSettings(window=2, batch=2),
                                            capabilities=frozenset({Capability.READ}))
        with trio.fail_after(5):
            done = await world.root.ask(maintainer, FoldNow())
        assert done.folds == 0
        assert not [p for _, _, p in await world.records() if isinstance(p, EntriesFolded)]


def test_the_settings_default_to_what_the_blueprint_docs_say() -> None:
    assert RecapSettings() == RecapSettings(strategy="simple_extract", window=4, batch=4, max_summary_chars=2000,
                                            budget=2000, max_retries=8)


def test_a_strategy_is_given_by_its_blueprint_name_and_an_unknown_one_is_refused_listing_them() -> None:
    assert RecapSettings("structured").strategy is RecapStrategy.STRUCTURED
    with pytest.raises(UsageError, match=r"^recap strategy must be one of simple_extract, model_summary, "
                                         r"structured, got 'fancy'$"):
        RecapSettings("fancy")


async def test_a_recap_records_its_strategy_as_the_plain_text_stored_logs_hold() -> None:
    async with open_history() as world:
        for n in range(3):
            await world.step(n)
        maintainer = await spawn_maintainer(world, RecapSettings(RecapStrategy.STRUCTURED, window=2, batch=2))

        assert (await world.root.ask(maintainer, FoldNow())).folds == 1

        [fold] = [rec for rec in await world.log.read(1) if rec.kind == "EntriesFolded"]
        assert json.loads(fold.payload)["recap"]["strategy"] == "structured"


async def test_a_failing_recap_model_still_folds_by_extracting() -> None:
    async with open_history() as world:
        for n in range(3):
            await world.step(n)
        broken = ScriptedModel.from_turns([{"text": "never", "fail": {"error": "server", "times": 99}}])
        maintainer = await spawn_maintainer(world, RecapSettings("model_summary", window=2, batch=2), broken)

        done = await world.root.ask(maintainer, FoldNow())

        assert done.folds == 1
        fold = (await world.records())[-1][2]
        assert isinstance(fold, EntriesFolded)
        assert fold.recap.content.live.text.startswith("- e1 user: input 0\n- e2 notebook_replace → result 0")
        assert Layer.load(fold.recap.data).model_calls == 1  # the failed call had its turn


async def test_a_history_past_its_soft_limit_gets_one_fold_without_being_asked() -> None:
    async with open_history(limits=HistoryLimits(max_entries=20)) as world:  # soft: 12 entries, hard: 16
        await spawn_maintainer(world, RecapSettings(window=2, batch=2))
        async with world.rt.open_subscription(recap_topic("h"), buffer=10) as published:
            for n in range(3):
                await world.step(n)
            with trio.fail_after(5):
                done = (await published.receive()).payload
        await trio.testing.wait_all_tasks_blocked()  # a second fold would have been asked for by now
        folds = [p for _, _, p in await world.records() if isinstance(p, EntriesFolded)]
        assert [f.folded for f in folds] == [("e1", "e2", "e3")]  # one batch: soft asks for no more
        assert folds[0].recap.content.gist.text == "recap of the steps up to e3 (simple_extract)"
        assert done == FoldDone("h", 1, 9, done.tokens)  # published: the fold, and the 12 - 3 entries left


async def test_fold_now_is_answered_when_nothing_can_be_folded() -> None:
    async with open_history(limits=HistoryLimits(max_entries=4)) as world:
        await world.step(0)
        maintainer = await spawn_maintainer(world, RecapSettings(window=8))
        with trio.fail_after(2):
            done = await world.root.ask(maintainer, FoldNow())
        assert done == FoldDone("h", 0, 4, done.tokens)


async def test_a_model_summary_recap_holds_what_the_recap_model_wrote() -> None:
    inputs = [f"task {i}" for i in range(12)]
    recap_model = ScriptedModel.from_turns([{"text": f"summary number {k}"} for k in range(60)])
    store = await open_store("memory:")
    async with store:
        log = await store.open_thread("m", owner="test")
        settings = AgentSettings(thread_id="m", limits=HistoryLimits(max_entries=12),
                                 recap=RecapSettings("model_summary", window=2, batch=2, max_summary_chars=300))
        async with open_runtime() as rt:
            agent = await spawn_agent(rt, log, scripted(agent_turns(len(inputs))), settings, converter=CONVERTER,
                                      counter=COUNTER, inputs=inputs, recap_model=recap_model)
            await rt.client("t").ask(agent.engine, RunUntilIdle(), timeout=None)
            await trio.testing.wait_all_tasks_blocked()  # the last fold, if one is under way
        records = decode(await log.read(1))
    recaps = [p.recap for _, _, p in records if isinstance(p, EntriesFolded)]
    assert len(recaps) > 5
    # fold k was summarised by turn k of the recap model's script, in order
    assert [r.content.live.text for r in recaps] == [f"summary number {k}" for k in range(len(recaps))]
    assert {r.strategy for r in recaps} == {"model_summary"}
    assert check_folds("m", records, folder="recap/m") == len(recaps)


class SlowSummaries(ModelClient):
    """A recap (or analyzer) model that takes its time."""

    name = "slow"

    def __init__(self, delay: float, text: str = "OK") -> None:
        self.delay = delay
        self.text = text
        self.calls = 0

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.calls += 1
        await trio.sleep(self.delay)
        return ModelReply(text=f"{self.text} {self.calls}" if self.text != "OK" else "OK")


async def test_a_slow_recap_makes_the_engine_wait_at_the_truncate_threshold_and_only_there() -> None:
    inputs = [f"task {i}" for i in range(25)]
    model = scripted(agent_turns(len(inputs), words=10))
    fold_asks: list[AuditRecord] = []
    store = await open_store("memory:")
    async with store:
        log = await store.open_thread("s", owner="test")
        model.watch(log, "s")
        settings = AgentSettings(thread_id="s", limits=HistoryLimits(max_entries=16),
                                 recap=RecapSettings("model_summary", window=2, batch=2, max_summary_chars=400))
        with trio.fail_after(30):
            async with open_runtime() as rt:
                rt.add_audit_hook(lambda r: fold_asks.append(r) if (
                    r.event is AuditEvent.DELIVERED and isinstance(r.envelope.payload, FoldNow)) else None)
                agent = await spawn_agent(rt, log, model, settings, converter=CONVERTER, counter=COUNTER,
                                          inputs=inputs, recap_model=SlowSummaries(0.01, "slow summary"))
                idle = await rt.client("t").ask(agent.engine, RunUntilIdle(), timeout=None)
        records = decode(await log.read(1))
    assert isinstance(idle, Idle) and idle.reason is IdleReason.NO_INPUT
    check_no_lost_entry("s", records, model, inputs)
    assert fold_asks, "the recap never fell behind: the test shows nothing"
    assert all(str(r.envelope.sender) == "engine/s" for r in fold_asks)
    # every model call saw the history within its limit
    assert max(entries for entries, _ in model.sizes) <= 16, model.sizes
    check_folds("s", records, folder="recap/s")


async def test_slow_analyzers_and_recap_never_block_the_history_store() -> None:
    # a subscriber that asks the history store while its mailbox fills up would deadlock it;
    # here the engine outpaces a slow model analyzer and a slow recap by far
    inputs = [f"task {i}" for i in range(60)]
    store = await open_store("memory:")
    async with store:
        log = await store.open_thread("d", owner="test")
        settings = AgentSettings(thread_id="d", limits=HistoryLimits(max_entries=50),
                                 recap=RecapSettings("model_summary", window=4, batch=4),
                                 analyzers=(AnalyzerSettings("judge", kind="model", prompt="anything odd?"),))
        analyzer_model = SlowSummaries(0.05)
        with trio.fail_after(30):
            async with open_runtime() as rt:
                agent = await spawn_agent(rt, log, ScriptedModel.from_turns(agent_turns(len(inputs))), settings,
                                          converter=CONVERTER, counter=COUNTER, inputs=inputs,
                                          recap_model=SlowSummaries(0.02, "summary"),
                                          analyzer_models={"judge": analyzer_model})
                idle = await rt.client("t").ask(agent.engine, RunUntilIdle(), timeout=None)
        appended = sum(1 for r in await log.read(1) if r.kind in ("EntryAppended", "ToolResultsAppended"))
    assert idle.reason is IdleReason.NO_INPUT and idle.steps == 9 * len(inputs)
    # the analyzer ran, but once per burst of changes, not once per change
    assert 0 < analyzer_model.calls < appended / 2


async def test_the_engine_goes_on_when_its_recap_maintainer_is_gone() -> None:
    inputs = [f"task {i}" for i in range(6)]
    store = await open_store("memory:")
    async with store:
        log = await store.open_thread("g", owner="test")
        settings = AgentSettings(thread_id="g", limits=HistoryLimits(max_entries=8, soft=1.0, hard=1.0),
                                 recap=RecapSettings(window=2, batch=2))
        async with open_runtime() as rt:
            agent = await spawn_agent(rt, log, scripted(agent_turns(len(inputs))), settings, converter=CONVERTER,
                                      counter=COUNTER, inputs=inputs)
            assert agent.recap is not None
            await rt.stop(agent.recap)
            with trio.fail_after(5):
                idle = await rt.client("t").ask(agent.engine, RunUntilIdle(), timeout=None)
        records = decode(await log.read(1))
    assert idle.reason is IdleReason.NO_INPUT
    assert not [p for _, _, p in records if isinstance(p, (EntriesFolded, HistoryEdited))]


async def test_a_restarted_maintainer_asks_its_recap_model_for_the_next_turn_not_the_first() -> None:
    async with open_history() as world:
        for n in range(5):
            await world.step(n)
        script = ScriptedModel.from_turns([{"text": "first summary"}, {"text": "second summary"}])
        settings = RecapSettings("model_summary", window=2, batch=2)
        maintainer = await spawn_maintainer(world, settings, script)
        assert (await world.root.ask(maintainer, FoldNow())).folds == 1
        await world.rt.stop(maintainer)
        maintainer = await spawn_maintainer(world, settings, script)  # a new instance, as after a crash
        assert (await world.root.ask(maintainer, FoldNow())).folds == 1
        recaps = [p.recap.content.live.text for _, _, p in await world.records() if isinstance(p, EntriesFolded)]
        assert recaps == ["first summary", "second summary"]
        script.check_all_used()


async def test_a_fold_keeps_the_strategys_data_in_its_recap_through_the_log() -> None:
    async with open_history() as world:
        for n in range(3):
            await world.step(n)
        refs = tuple([await world.ref(f"e{k}") for k in (1, 2, 3)])
        applied = await world.root.ask(world.history, FoldIntoRecap(refs, "- e1 ...", "gist", "simple_extract",
                                                                    data='{"v": 1, "spans": []}'))
        assert isinstance(applied, EditApplied) and applied.recap is not None
        assert applied.recap.data == '{"v": 1, "spans": []}'
        replayed = replay("h", await world.records())
        assert replayed.recaps[-1].data == '{"v": 1, "spans": []}'  # (as the log holds it)


async def set_retention(world: HistoryWorld, retention: Retention, *ids: str) -> None:
    refs = [await world.ref(i) for i in ids]
    applied = await world.root.ask(world.history, EditHistory(tuple(SetRetention(r, retention) for r in refs)))
    assert isinstance(applied, EditApplied)


async def test_a_fold_taking_part_of_a_run_of_batch_compressible_entries_is_refused() -> None:
    async with open_history() as world:
        for n in range(4):
            await world.step(n)
        await set_retention(world, Retention.BATCH_COMPRESSIBLE, "e4", "e5", "e6", "e7")

        async def fold(*ids: str) -> object:
            refs = tuple([await world.ref(i) for i in ids])
            return await world.root.ask(world.history, FoldIntoRecap(refs, "x", "x", "simple_extract"))

        refused = await fold("e1", "e2", "e3", "e4")
        assert isinstance(refused, EditConflict)
        assert [(c.id, c.reason) for c in refused.conflicts] == [(
            "e5", "would fold part of a run of BATCH_COMPRESSIBLE entries (e4 to e7, e5 left out): fold the whole "
                  "run or none of it")]
        assert isinstance(await fold("e5", "e6", "e7", "e8"), EditConflict)  # its end without its start
        assert isinstance(await fold("e1", "e2", "e3"), EditApplied)  # before it: untouched
        assert isinstance(await fold("e4", "e5", "e6", "e7"), EditApplied)  # the whole run


async def test_the_maintainer_folds_a_run_of_batch_compressible_entries_whole() -> None:
    async with open_history() as world:
        for n in range(5):
            await world.step(n)
        await set_retention(world, Retention.BATCH_COMPRESSIBLE, *[f"e{k}" for k in range(2, 12)])
        maintainer = await spawn_maintainer(world, RecapSettings(window=2, batch=1))
        for _ in range(2):
            assert (await world.root.ask(maintainer, FoldNow())).folds == 1
        folds = [p for _, _, p in await world.records() if isinstance(p, EntriesFolded)]
        assert folds[0].folded == ("e1",)  # the batch: one step, the run not reached
        assert folds[1].folded == (*[f"e{k}" for k in range(2, 12)], folds[0].recap.id)  # the whole run: 7 steps


async def test_a_structured_recap_takes_its_task_from_the_pinned_inputs() -> None:
    async with open_history() as world:
        await world.input("Fix the parser: it chokes on tabs.")
        await world.output("On it.")
        for n in range(4):
            await world.step(n)
        await set_retention(world, Retention.CRITICAL, "e1")
        maintainer = await spawn_maintainer(world, RecapSettings("structured", window=2, batch=2))
        assert (await world.root.ask(maintainer, FoldNow())).folds == 1
        fold = (await world.records())[-1][2]
        assert isinstance(fold, EntriesFolded) and fold.folded == ("e2", "e3")  # (the pinned input stays)
        recap = json.loads(fold.recap.content.live.text)
        assert recap["task"] == "Fix the parser: it chokes on tabs."
        assert recap["steps"] == ["e2 agent: On it.", "e3 user: input 0"]
        assert Layer.load(fold.recap.data).spans[0].first == "e2"


async def test_a_restarted_maintainer_counts_two_calls_for_a_fold_whose_answer_was_shortened() -> None:
    async with open_history() as world:
        for n in range(5):
            await world.step(n)
        script = ScriptedModel.from_turns([{"text": "Far too long. " * 100}, {"text": "Short now."},
                                           {"text": "second summary"}])
        settings = RecapSettings("model_summary", window=2, batch=2, max_summary_chars=MIN_SUMMARY_CHARS)
        maintainer = await spawn_maintainer(world, settings, script)
        assert (await world.root.ask(maintainer, FoldNow())).folds == 1
        await world.rt.stop(maintainer)
        maintainer = await spawn_maintainer(world, settings, script)  # a new instance, as after a crash
        assert (await world.root.ask(maintainer, FoldNow())).folds == 1
        recaps = [p.recap for _, _, p in await world.records() if isinstance(p, EntriesFolded)]
        assert [r.content.live.text for r in recaps] == ["Short now.", "second summary"]
        assert [Layer.load(r.data).model_calls for r in recaps] == [2, 3]
        script.check_all_used()


async def test_a_maintainer_reading_a_recap_without_counted_calls_counts_the_recaps() -> None:
    async with open_history() as world:
        for n in range(5):
            await world.step(n)
        refs = tuple([await world.ref(f"e{k}") for k in (1, 2, 3)])
        first = await world.root.ask(world.history, FoldIntoRecap(refs, "an old recap", "g", "model_summary"))
        assert isinstance(first, EditApplied)  # a recap from before recaps kept data: one call
        script = ScriptedModel.from_turns([{"text": "never"}, {"text": "the next turn"}])
        maintainer = await spawn_maintainer(world, RecapSettings("model_summary", window=2, batch=2), script)
        assert (await world.root.ask(maintainer, FoldNow())).folds == 1
        fold = (await world.records())[-1][2]
        assert isinstance(fold, EntriesFolded) and fold.recap.content.live.text == "the next turn"
        assert Layer.load(fold.recap.data).model_calls == 2


@pytest.mark.parametrize("chars", [1, MIN_SUMMARY_CHARS - 1])
def test_a_recap_too_short_to_keep_every_step_is_refused(chars: int) -> None:
    with pytest.raises(UsageError, match=rf"^recap.max_summary_chars must be >= {MIN_SUMMARY_CHARS}, got {chars}: "
                                         "a shorter recap could not keep a line for every folded step; raise it$"):
        RecapSettings(max_summary_chars=chars)
    assert RecapSettings(max_summary_chars=MIN_SUMMARY_CHARS).max_summary_chars == MIN_SUMMARY_CHARS


@pytest.mark.parametrize(("name", "low"), [("window", -1), ("batch", 0), ("budget", 0), ("max_retries", 0)])
def test_settings_below_their_minimum_are_refused(name: str, low: int) -> None:
    with pytest.raises(UsageError, match=rf"^recap.{name} must be >= {low + 1}, got {low}$"):
        RecapSettings(**{name: low})  # type: ignore[arg-type]
    assert getattr(RecapSettings(**{name: low + 1}), name) == low + 1  # type: ignore[arg-type]

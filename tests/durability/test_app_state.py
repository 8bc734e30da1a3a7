"""A custom app's state is the fold of all its committed effects, and a restart gives it back.

The apps (``tests.support.counter``) define their own effect classes, with no field naming
the app; the runtime records which app made each effect. A restart opens the thread again in
a new runtime on the same store, as a new process would.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from attrs import define
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from livecontext.actors import AgentSettings, spawn_agent
from livecontext.actors.agent._agent import AgentActors
from livecontext.actors.apps import App
from livecontext.actors.history import load_state, write_snapshot
from livecontext.protocol.agent import (
    AppEffects,
    GetAppEffects,
    GetWindows,
    ProvideInput,
    RunUntilIdle,
    SaveAppState,
    Windows,
)
from livecontext.protocol.context import AccessDenied, Capability
from livecontext.protocol.records import AppEffect, AppHistory, HistorySnapshot, ToolResultRecorded
from livecontext.protocol.wire import load_json, make_converter
from livecontext.runtime import Context, open_runtime
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import EventStore, open_store
from livecontext.runtime.testing import actor_instance
from tests.support.agent_harness import counter
from tests.support.counter import Counter, CounterAdded, CounterReset, CounterV2, Tally, TallyMarked

THREAD = "t"


@define
class Running:
    """An agent of a session, and a client to drive it."""

    agent: Agent
    client: Context

    async def windows(self) -> str:
        got = await self.client.ask(self.agent.apps, GetWindows())
        assert isinstance(got, Windows)
        return got.text

    async def kept(self) -> dict[str, AppHistory]:
        """What the history store keeps to rebuild each app."""
        got = await self.client.ask(self.agent.history, GetAppEffects())
        assert isinstance(got, AppEffects)
        return {h.app: h for h in got.apps}

    async def run(self, text: str) -> None:
        await self.client.ask(self.agent.input, ProvideInput(text))
        await self.client.ask(self.agent.engine, RunUntilIdle(), timeout=30)

    def app(self, name: str) -> Any:
        """The host's instance of app ``name``."""
        return actor_instance(self.agent.apps).apps[name]

    async def snapshot(self, store: EventStore) -> HistorySnapshot:
        """Write the thread's snapshot now, as the history store does every ``snapshot_every``
        records (in the background, so one may be skipped or cut short by the end of a
        session), and read it back."""
        history = actor_instance(self.agent.history)
        await write_snapshot(history.log, history.converter, history.state)
        reader = await store.open_reader(THREAD)
        async with reader:
            snap = await reader.latest_snapshot()
            assert snap is not None and snap.seq == await reader.last_seq()
        loaded = make_converter().load_message(load_json(snap.state))
        assert isinstance(loaded, HistorySnapshot)
        return loaded


@asynccontextmanager
async def session(store: EventStore, apps: Sequence[App], turns: list[dict[str, Any]],
                  snapshot_every: int = 1000) -> AsyncIterator[Running]:
    """The thread opened in a new runtime with ``apps``, its model answering from ``turns``
    (the k-th model call of the thread answers with turn k, across sessions)."""
    async with await store.open_thread(THREAD, create=True, owner="test") as log:
        async with open_runtime() as rt:
            agent = await spawn_agent(rt, log, ScriptedModel.from_turns(turns),
                                      AgentSettings(THREAD, snapshot_every=snapshot_every),
                                      converter=make_converter(), counter=counter(), apps=apps)
            yield Running(agent, rt.client("test"))
            await rt.aclose()


def calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A model turn calling these tools."""
    return {"tool_calls": [{"name": name, "arguments": arguments} for name, arguments in calls]}




# -- end to end ------------------------------------------------------------------------------------


async def test_a_custom_app_with_its_own_effect_classes_works_end_to_end_with_a_scripted_model() -> None:
    turns = [calls(("add", {"amount": 5}), ("mark", {"mark": "a"})), calls(("add", {"amount": 3})),
             {"text": "total is 8"}]
    async with await open_store("memory:") as store, session(store, [Counter(), Tally()], turns) as s:
        await s.run("count")
        assert await s.windows() == "[Window: counter]\ntotal: 8\n\n[Window: tally]\na"
        reader = await store.open_reader(THREAD)
        async with reader:
            records = [make_converter().load_message(load_json(r.payload)) for r in await reader.read()]
    effects = [r.effect for r in records if isinstance(r, ToolResultRecorded) and r.effect is not None]
    assert effects == [AppEffect("counter", CounterAdded(5), "tests.support.counter:CounterAdded"),
                       AppEffect("tally", TallyMarked("a"), "tests.support.counter:TallyMarked"),
                       AppEffect("counter", CounterAdded(3), "tests.support.counter:CounterAdded")]
    results = [r.result.content.live.text for r in records if isinstance(r, ToolResultRecorded)]
    assert results == ["total 0 -> 5", "marked a", "total 5 -> 8"]


async def test_a_counter_at_8_after_plus_5_and_plus_3_is_still_at_8_after_a_restart() -> None:
    turns = [calls(("add", {"amount": 5})), calls(("add", {"amount": 3})), {"text": "8"}, {"text": "still 8"}]
    async with await open_store("memory:") as store:
        async with session(store, [Counter()], turns) as s:
            await s.run("count")
            before = await s.windows()
        async with session(store, [Counter()], turns) as s:
            assert await s.windows() == before == "[Window: counter]\ntotal: 8"
            assert (await s.kept())["counter"].effects == (AppEffect("counter", CounterAdded(5)),
                                                            AppEffect("counter", CounterAdded(3)))


async def test_a_restart_loads_the_saved_state_from_the_threads_snapshot_then_applies_the_effects_after_it() -> None:
    turns = [calls(*[("add", {"amount": k}) for k in (1, 2, 3, 4, 5)]), {"text": "15"}, {"text": "still 15"}]
    async with await open_store("memory:") as store:
        async with session(store, [Counter(snapshot_every=2)], turns, snapshot_every=1) as s:
            await s.run("count")
            kept = (await s.kept())["counter"]
            assert (kept.state, kept.saved, kept.effects) == ('{"version": 1, "total": 10}', 4,
                                                              (AppEffect("counter", CounterAdded(5)),))
            snapshot = await s.snapshot(store)
        assert [(h.app, h.state, h.saved, len(h.effects)) for h in snapshot.apps] == [
            ("counter", '{"version": 1, "total": 10}', 4, 1)]
        async with session(store, [Counter(snapshot_every=2)], turns, snapshot_every=1) as s:
            assert await s.windows() == "[Window: counter]\ntotal: 15"
            assert s.app("counter").loaded == ['{"version": 1, "total": 10}']  # not 5 effects replayed


async def test_an_app_that_saves_no_state_is_rebuilt_from_every_effect_it_committed() -> None:
    marks = [f"m{k}" for k in range(30)]  # past the default snapshot interval: nothing saved all the same
    turns = [calls(*[("mark", {"mark": m}) for m in marks]), {"text": "done"}, {"text": "again"}]
    async with await open_store("memory:") as store:
        async with session(store, [Tally()], turns, snapshot_every=1) as s:
            await s.run("mark")
            snapshot = await s.snapshot(store)
        assert [(h.state, h.saved, len(h.effects)) for h in snapshot.apps] == [(None, 0, 30)]
        async with session(store, [Tally()], turns, snapshot_every=1) as s:
            assert await s.windows() == "[Window: tally]\n" + " ".join(marks)


async def test_a_saved_state_the_app_cannot_load_is_not_lost_its_effects_are_replayed_and_the_log_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    turns = [calls(("add", {"amount": 5}), ("add", {"amount": 3}), ("reset", {}), ("add", {"amount": 7})),
             {"text": "7"}, {"text": "still 7"}]
    async with await open_store("memory:") as store:
        async with session(store, [Counter(snapshot_every=3)], turns, snapshot_every=1) as s:
            await s.run("count")
            assert (await s.kept())["counter"].state == '{"version": 1, "total": 0}'
            await s.snapshot(store)
        with caplog.at_level(logging.WARNING, logger="livecontext.apps"):
            async with session(store, [CounterV2(snapshot_every=3)], turns, snapshot_every=1) as s:
                assert await s.windows() == "[Window: counter]\ntotal: 7"
    # (only the apps' logger: the store's own snapshots, written in the background every record
    # here, may lose a race with the test's snapshot at seq 10 and say so on their own logger)
    assert [r.getMessage() for r in caplog.records if r.name == "livecontext.apps"] == [
        "app/t: app 'counter' cannot load its state saved as of its effect 3 (AppStateError: counter state "
        "'{\"version\": 1, \"total\": 0}' is not version 2: this release reads version 2 only); rebuilding it "
        "from every effect it committed, read from the log"]


# -- any effects, any restarts ------------------------------------------------------------------------

_OP = st.one_of(
    st.tuples(st.just("add"), st.integers(-50, 50)),
    st.tuples(st.just("reset"), st.none()),
    st.tuples(st.just("mark"), st.sampled_from("abcxyz")),
)


def _fold(ops: Sequence[tuple[str, Any]]) -> tuple[int, list[str]]:
    total, marks = 0, []
    for name, arg in ops:
        if name == "add":
            total += arg
        elif name == "reset":
            total = 0
        else:
            marks.append(arg)
    return total, marks


def _turn(ops: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    return calls(*[(name, {"amount": arg} if name == "add" else {"mark": arg} if name == "mark" else {})
                   for name, arg in ops])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions=st.lists(st.lists(_OP, min_size=1, max_size=6), min_size=1, max_size=4),
       app_every=st.integers(1, 4), thread_every=st.sampled_from([1, 3, 7, 1000]))
@example(sessions=[[("add", 5)], [("add", 3)]], app_every=20, thread_every=1000)
@example(sessions=[[("add", 1), ("add", 2), ("mark", "a")], [("add", 4), ("reset", None), ("add", 9)]],
         app_every=2, thread_every=1)
def test_a_custom_apps_state_after_a_restart_equals_its_state_before(
        sessions: list[list[tuple[str, Any]]], app_every: int, thread_every: int) -> None:
    """Each session runs some tool calls, then the thread is opened again in a new runtime: the
    counter (which saves its state every ``app_every`` effects, kept with the thread's snapshots
    every ``thread_every`` records) and the tally (which saves none) come back as they were."""
    turns: list[dict[str, Any]] = []
    for ops in sessions:
        turns += [_turn(ops), {"text": "ok"}]

    async def run() -> None:
        done: list[tuple[str, Any]] = []
        async with await open_store("memory:") as store:
            for ops in sessions:
                async with session(store, [Counter(app_every), Tally()], turns, thread_every) as s:
                    total, marks = _fold(done)
                    expected = f"[Window: counter]\ntotal: {total}\n\n[Window: tally]\n{' '.join(marks) or '(no marks)'}"
                    assert await s.windows() == expected  # as it was when the last session ended
                    await s.run("go")
                    done += ops
                    total, marks = _fold(done)
                    assert s.app("counter").total == total and s.app("tally").marks == marks
            async with session(store, [Counter(app_every), Tally()], turns, thread_every) as s:
                assert (s.app("counter").total, s.app("tally").marks) == _fold(done)
            reader = await store.open_reader(THREAD)
            async with reader:  # what the CLI folds from the log alone, snapshots or not
                state = await load_state(reader, make_converter(), THREAD)
            effects = [e.effect for h in state.app_histories() for e in h.effects if h.state is None]
            assert all(isinstance(e, (CounterAdded, CounterReset, TallyMarked)) for e in effects)

    trio.run(run)


# -- who may save a state, and which ---------------------------------------------------------------


async def test_only_the_app_host_may_save_an_apps_state_another_actors_attempt_is_denied_and_audited() -> None:
    turns = [calls(("add", {"amount": 5})), {"text": "5"}]
    async with await open_store("memory:") as store, session(store, [Counter()], turns) as s:
        await s.run("count")
        rt = s.client.runtime
        intruder = rt.client("intruder", capabilities=[Capability.READ, Capability.NOTIFY])
        denied = await intruder.ask(s.agent.history, SaveAppState("counter", 1, '{"version": 1, "total": 1000}'))
        assert denied == AccessDenied(intruder.self_id, Capability.APP_STATE, "SaveAppState")
        assert (await s.kept())["counter"].state is None


async def test_a_saved_state_not_past_the_kept_one_or_past_the_committed_effects_is_not_kept(
        caplog: pytest.LogCaptureFixture) -> None:
    turns = [calls(("add", {"amount": 5}), ("add", {"amount": 3})), {"text": "8"}]
    async with await open_store("memory:") as store, session(store, [Counter()], turns) as s:
        await s.run("count")
        with caplog.at_level(logging.WARNING, logger="livecontext.history"):
            await s.client.ask(s.agent.history, SaveAppState("counter", 3, '{"version": 1, "total": 99}'))
            await s.client.ask(s.agent.history, SaveAppState("counter", 1, '{"version": 1, "total": 5}'))
            await s.client.ask(s.agent.history, SaveAppState("counter", 1, '{"version": 1, "total": 5}'))
            await s.client.ask(s.agent.history, SaveAppState("nobody", 1, "{}"))
        kept = (await s.kept())["counter"]
        assert (kept.state, kept.saved, kept.effects, kept.last_saved) == (
            '{"version": 1, "total": 5}', 1, (AppEffect("counter", CounterAdded(3)),),
            AppEffect("counter", CounterAdded(5)))
    assert [r.getMessage() for r in caplog.records] == [
        "thread t: state of app 'counter' as of effect 3 not kept: the kept one is as of effect 0 and 2 are committed",
        "thread t: state of app 'counter' as of effect 1 not kept: the kept one is as of effect 1 and 2 are committed",
        "thread t: state of app 'nobody' as of effect 1 not kept: it has committed no effect"]

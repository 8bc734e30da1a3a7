"""Retention chosen when an entry is written: the pinned task, given classes, tools' classes."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack

import pytest

from livecontext.actors.apps import App, ToolDefinitionError, describe_tools, tool
from livecontext.actors.engine import CONTROL_TOOLS
from livecontext.actors.history import HistoryLimits, history_topic
from livecontext.actors.recap import RecapSettings
from livecontext.protocol.agent import BeforeModelCall, ProvideInput
from livecontext.protocol.context import (
    EditApplied,
    EditConflict,
    EditHistory,
    EntryRef,
    HistoryEdited,
    MarkFolded,
    SetRetention,
)
from livecontext.protocol.history import ModelInputEntry, Retention, Shown
from livecontext.protocol.records import EntryAppended, ThreadConfigured, ToolResultsAppended
from livecontext.runtime.testing import actor_instance
from tests.support.agent_harness import ProbeApp, ProbeModel, open_agent, scripted
from tests.support.context_world import decode, open_history


async def retentions(entries: Sequence[object]) -> list[str]:
    return [e.retention.value for e in entries]  # type: ignore[attr-defined]


async def test_the_first_input_is_pinned_and_later_ones_are_compressible() -> None:
    async with open_agent([{"text": "one"}, {"text": "two"}], inputs=["the task", "more"]) as h:
        await h.run_until_idle()
        entries = await h.entries()
        inputs = [e for e in entries if isinstance(e, ModelInputEntry)]
        assert [(e.text, e.retention) for e in inputs] == [
            ("the task", Retention.CRITICAL), ("more", Retention.COMPRESSIBLE)]


async def test_without_pin_task_the_first_input_is_compressible() -> None:
    async with open_agent([{"text": "one"}], inputs=["the task"], pin_task=False) as h:
        await h.run_until_idle()
        assert [e.retention for e in await h.entries()] == [Retention.COMPRESSIBLE] * 2


async def test_an_input_keeps_the_retention_it_was_given_with_first_or_not() -> None:
    async with open_agent([{"text": "one"}, {"text": "two"}]) as h:
        await h.client.tell(h.agent.input, ProvideInput("scratch", Retention.EPHEMERAL))
        await h.client.tell(h.agent.input, ProvideInput("the spec", Retention.CRITICAL))
        await h.run_until_idle()
        entries = await h.entries()
        assert [(e.content.live.text, e.retention) for e in entries if isinstance(e, ModelInputEntry)] == [
            ("scratch", Retention.EPHEMERAL), ("the spec", Retention.CRITICAL)]


async def test_the_newest_entry_may_get_another_retention_class_but_not_be_folded() -> None:
    async with open_history() as world:
        await world.input("a")
        newest = (await world.output("b")).last
        assert newest is not None
        ref = EntryRef(newest.id, newest.revision)
        applied = await world.root.ask(world.history, EditHistory((SetRetention(ref, Retention.CRITICAL),)))
        assert isinstance(applied, EditApplied)
        [entry] = (await world.read()).entries[-1:]
        assert (entry.id, entry.retention, entry.revision) == (newest.id, Retention.CRITICAL, 2)
        refused = await world.root.ask(world.history, EditHistory((
            SetRetention(EntryRef(newest.id, 2), Retention.COMPRESSIBLE), MarkFolded(EntryRef(newest.id, 2)))))
        assert isinstance(refused, EditConflict)
        assert refused.conflicts[0].reason == "the newest entry cannot be edited away: the engine's state stands on it"


class Lookup(App):
    """An app with a read-only lookup whose results a later lookup supersedes."""

    name = "lookup"

    @tool(idempotent=True, retention=Retention.DISPOSABLE)
    def status(self) -> str:
        """Say how things stand now."""
        return "all green " * 20

    @tool(idempotent=True)
    def keep(self) -> str:
        """Say something worth keeping."""
        return "kept"


def call(name: str) -> dict[str, object]:
    return {"name": name, "arguments": {}}


async def test_a_tools_declared_retention_reaches_its_results_and_a_silent_call_to_it() -> None:
    turns = [{"text": "", "tool_calls": [call("status")]},
             {"text": "checking", "tool_calls": [call("status")]},
             {"text": "", "tool_calls": [call("status"), call("keep")]},
             {"text": "done"}]
    async with open_agent(turns, inputs=["go"], apps=[Lookup()]) as h:
        await h.run_until_idle()
        entries = await h.entries()
        assert [(type(e).__name__, e.retention) for e in entries[1:7]] == [
            ("ModelOutputEntry", Retention.DISPOSABLE), ("ToolResultsEntry", Retention.DISPOSABLE),
            ("ModelOutputEntry", Retention.COMPRESSIBLE), ("ToolResultsEntry", Retention.DISPOSABLE),
            ("ModelOutputEntry", Retention.COMPRESSIBLE), ("ToolResultsEntry", Retention.COMPRESSIBLE)]
    assert [spec.retention for spec in describe_tools(Lookup())] == [Retention.DISPOSABLE, Retention.COMPRESSIBLE]


async def test_disposable_steps_are_dropped_first_when_the_history_is_full() -> None:
    turns = [{"text": "", "tool_calls": [call("status")]} for _ in range(6)] + [{"text": "done"}]
    async with open_agent(turns, inputs=["go"], apps=[Lookup()],
                          limits=HistoryLimits(max_entries=6, soft=0.5, hard=0.6)) as h:
        await h.run_until_idle()
        entries = await h.entries()
        # each time the history filled up, the status steps went (whole: call and result),
        # the pinned task stayed, and so did the answer
        assert [(e.id, e.retention) for e in entries] == [("e1", Retention.CRITICAL), ("e14", Retention.COMPRESSIBLE)]


@pytest.mark.parametrize("watched", [False, True], ids=["nobody-watching", "watched"])
async def test_the_drop_of_disposable_steps_is_recorded_as_the_history_stores_not_the_engines(
        watched: bool) -> None:
    # the drop is decided by the store at the threshold, while it handles the engine's append
    # (which may only append); with nobody watching the history the store commits at once,
    # watched it awaits the log and publishes: both ways the record names the store
    turns = [{"text": "", "tool_calls": [call("status")]} for _ in range(6)] + [{"text": "done"}]
    async with open_agent(turns, inputs=["go"], apps=[Lookup()],
                          limits=HistoryLimits(max_entries=6, soft=0.5, hard=0.6)) as h:
        async with AsyncExitStack() as stack:
            if watched:
                await stack.enter_async_context(h.rt.open_subscription(history_topic("t1"), buffer=4096))
            await h.run_until_idle()
        async with await h.store.open_reader("t1") as reader:
            records = decode(await reader.read())
    drops = [(sender, p.removed) for _, sender, p in records if isinstance(p, HistoryEdited)]
    assert [sender for sender, _ in drops] == ["history/t1"] * 3, drops
    appenders = {sender for _, sender, p in records if isinstance(p, EntryAppended | ToolResultsAppended)}
    assert appenders == {"engine/t1"}


def test_a_tool_cannot_declare_its_results_critical() -> None:
    with pytest.raises(ToolDefinitionError, match=r"^@tool\(retention=<Retention.CRITICAL: 'critical'>\) is "
                       r"not a retention class for results: use COMPRESSIBLE, DISPOSABLE, EPHEMERAL \(pin an "
                       r"input to keep it for good\)$"):
        tool(retention=Retention.CRITICAL)


async def test_the_pinned_task_is_never_folded_and_is_in_every_context_of_a_long_run() -> None:
    task = "TASK: rename the module foo to bar everywhere, and keep the tests green."
    record = {"name": "record", "arguments": {"label": "some words to make the history grow " * 4}}
    turns = [{"text": f"step {k}", "tool_calls": [record]} for k in range(40)] + [{"text": "done"}]
    recap = RecapSettings(window=2, batch=2)
    model = ProbeModel(scripted(turns))
    async with open_agent(model=model, inputs=[task], apps=[ProbeApp()], budget=1500, recap=recap) as h:
        await h.run_until_idle(timeout=60)
        await h.settle()
        entries = await h.entries()
        assert entries[0].content.live.text == task and not entries[0].folded
        assert any(e.folded for e in entries)  # the recap did fold (limits derived from the budget)
        calls = h.of_type(BeforeModelCall)
        assert len(calls) == len(model.requests) == 41
        assert all(any(m.content.startswith(task) for m in r.messages) for r in model.requests)
        for event in calls:
            assert event.budget == 1500 and event.tokens <= 1500
            pinned = [s for s in event.spans if s.first == entries[0].id]
            assert pinned and pinned[0].shown in (Shown.LIVE, Shown.RECENT)


async def test_a_thread_records_its_budget_tools_and_apps_once_and_again_when_they_change() -> None:
    async with open_agent([{"text": "ok"}], inputs=["hi"], apps=[ProbeApp()], budget=3000) as h:
        await h.run_until_idle()
        store = actor_instance(h.agent.history)
        config = store.state.config
        assert isinstance(config, ThreadConfigured)
        assert config.budget == 3000
        assert config.tools == describe_tools(ProbeApp()) + CONTROL_TOOLS  # the app's, then the engine's
        assert [(a.name, a.source) for a in config.apps] == [("probe", "tests.support.agent_harness:ProbeApp")]
        assert store.tools_tokens > 0

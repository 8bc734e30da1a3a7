"""Analyzers: they read a thread's history beside the engine and post notifications to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from livecontext.actors import AgentSettings, spawn_agent
from livecontext.actors.agent._agent import ANALYZER_CAPABILITIES
from livecontext.actors.analyzers import (
    AnalyzerKind,
    AnalyzerSettings,
    AnalyzerTrigger,
    ModelAnalyzer,
    RepeatedFailures,
    UsageWatcher,
    make_analyzer,
)
from livecontext.actors.history import HistoryLimits
from livecontext.actors.recap import RecapSettings
from livecontext.protocol.agent import HistoryChanged, IdleReason, NotificationPosted, RunUntilIdle
from livecontext.protocol.context import EditApplied, FoldIntoRecap
from livecontext.protocol.history import ModelReply, ModelRequest
from livecontext.protocol.kernel import ActorId, Message
from livecontext.runtime import Runtime, UsageError, open_runtime
from livecontext.runtime.models import ModelClient, TextCallback
from livecontext.runtime.persistence import open_store
from livecontext.runtime.testing import open_stepping_runtime

from tests.support.context_world import (
    CONVERTER,
    COUNTER,
    HistoryWorld,
    decode,
    open_history,
    scripted,
    step_until_settled,
)


async def spawn(world: HistoryWorld, settings: AnalyzerSettings, model: ModelClient | None = None) -> ActorId:
    aid = ActorId("analyzer", f"h.{settings.name}")
    await world.rt.spawn(lambda: make_analyzer("h", world.history.id, settings, model), aid,
                         capabilities=ANALYZER_CAPABILITIES)
    return aid


async def posted(world: HistoryWorld) -> list[str]:
    """The texts of the notifications posted so far, once every actor has settled."""
    await trio.testing.wait_all_tasks_blocked()
    return [p.notification.text for _, _, p in await world.records() if isinstance(p, NotificationPosted)]


async def failing_calls(world: HistoryWorld, n: int, tool: str = "flaky") -> None:
    await world.output(f"calling {tool} {n} times", *([tool] * n))
    await world.results(*[f"{tool} broke: disk full" for _ in range(n)], failed=True)


async def test_repeated_failures_speak_once_per_streak() -> None:
    async with open_history() as world:
        await spawn(world, AnalyzerSettings("failures", threshold=3))
        await world.input("go")
        await failing_calls(world, 2)
        assert await posted(world) == []  # two are not a streak yet
        await failing_calls(world, 1)
        first = await posted(world)
        assert len(first) == 1 and first[0].startswith("the last 3 tool calls failed the same way (flaky")
        await failing_calls(world, 2)
        assert await posted(world) == first  # the same streak, going on
        await world.output("a good call", "steady")
        await world.results("fine")
        await failing_calls(world, 3)
        again = await posted(world)
        assert len(again) == 2 and again[1] == first[0]  # a new streak, though it reads the same


async def test_a_streak_counts_failures_folded_into_the_recap_after_they_were_read() -> None:
    async with open_history() as world:
        await spawn(world, AnalyzerSettings("failures", threshold=3))
        await world.input("go")
        await failing_calls(world, 1)
        assert await posted(world) == []  # read: one failure
        await world.output("let me try again")
        await world.input("go on")
        view = await world.read()
        folded = await world.root.ask(world.history, FoldIntoRecap(  # all but the newest entry
            tuple([await world.ref(e.id) for e in view.entries[:-1]]), "r", "g", "test"))
        assert isinstance(folded, EditApplied)  # the failure is folded away
        await failing_calls(world, 2)
        notes = await posted(world)
        assert len(notes) == 1 and notes[0].startswith("the last 3 tool calls failed the same way (flaky")


async def test_failures_that_differ_are_no_streak() -> None:
    async with open_history() as world:
        await spawn(world, AnalyzerSettings("failures", threshold=2))
        await world.input("go")
        await failing_calls(world, 1, "one")
        await failing_calls(world, 1, "two")
        assert await posted(world) == []


async def test_the_usage_watcher_speaks_when_the_level_rises_to_hard_not_at_every_change() -> None:
    from livecontext.actors.history import HistoryLimits

    async with open_history(limits=HistoryLimits(max_entries=10)) as world:
        await spawn(world, AnalyzerSettings("usage", kind="usage"))
        await world.step(0)
        await world.step(1)  # 8 entries: hard
        notes = await posted(world)
        assert len(notes) == 1 and notes[0].startswith("your history is at its hard limit (8 entries")
        await world.input("more")  # 9: still hard
        assert await posted(world) == notes
        view = await world.read()
        await world.root.ask(world.history, FoldIntoRecap(
            tuple([await world.ref(e.id) for e in view.entries[:5]]), "r", "g", "test"))
        await world.output("ok")  # 5 entries: ok again
        await world.input("and more")
        await world.output("then", "tool")
        await world.results("done")  # 8: hard again
        notes = await posted(world)
        assert len(notes) == 2 and notes[1].startswith("your history is at its hard limit (8 entries")


class Judge(ModelClient):
    name = "judge"

    def __init__(self, answers: list[str | Exception]) -> None:
        self.answers = answers
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.requests.append(request)
        answer = self.answers.pop(0) if self.answers else "OK"
        if isinstance(answer, Exception):
            raise answer
        return ModelReply(text=answer)


async def test_a_model_analyzer_posts_what_its_model_says_unless_ok_and_survives_its_failures() -> None:
    from livecontext.runtime.models import TransientModelError
    from livecontext.runtime.models._errors import FailureKind

    judge = Judge(["OK", TransientModelError(FailureKind.SERVER, "down"), "you repeat yourself"])
    async with open_history() as world:
        await spawn(world, AnalyzerSettings("judge", kind="model", prompt="Is the agent stuck?"), judge)
        await world.input("first")
        assert await posted(world) == []
        await world.output("second")
        assert await posted(world) == []  # the failure is logged, the analyzer goes on
        await world.input("third")
        assert await posted(world) == ["you repeat yourself"]
        request = judge.requests[-1]
        assert request.messages[0].content.startswith("Is the agent stuck?")
        assert "[e3] user: third" in request.messages[1].content
        assert request.thread_id == "h/judge"


async def test_a_periodic_analyzer_runs_without_history_changes(autojump_clock: trio.testing.MockClock) -> None:
    judge = Judge(["still thinking?"])
    async with open_history() as world:
        await world.input("hello")
        await spawn(world, AnalyzerSettings("clock", kind="model", prompt="p", trigger="period", period_s=5), judge)
        await trio.sleep(4)
        assert judge.requests == []
        await trio.sleep(2)
        assert await posted(world) == ["still thinking?"]
        await trio.sleep(10)  # nothing changed since: nothing new to read, no model call
        assert len(judge.requests) == 1



def test_a_kind_and_a_trigger_are_given_by_their_blueprint_names_and_unknown_ones_refused_listing_them() -> None:
    settings = AnalyzerSettings("clock", kind="model", prompt="odd?", trigger="period")
    assert settings.kind is AnalyzerKind.MODEL and settings.trigger is AnalyzerTrigger.PERIOD
    with pytest.raises(UsageError, match=r"^analyzer kind must be one of repeated_failures, model, usage, got 'usual'$"):
        AnalyzerSettings("x", kind="usual")
    with pytest.raises(UsageError, match=r"^analyzer trigger must be one of history, period, got 'often'$"):
        AnalyzerSettings("x", trigger="often")


def test_each_kind_makes_its_analyzer_and_a_model_analyzer_needs_a_model() -> None:
    history = ActorId("history", "t")
    made = {kind: type(make_analyzer("t", history, AnalyzerSettings("a", kind=kind, prompt="p"), model=scripted([])))
            for kind in AnalyzerKind}
    assert made == {AnalyzerKind.REPEATED_FAILURES: RepeatedFailures, AnalyzerKind.MODEL: ModelAnalyzer,
                    AnalyzerKind.USAGE: UsageWatcher}
    with pytest.raises(UsageError, match=r"^analyzer 'a' of kind model needs a model$"):
        make_analyzer("t", history, AnalyzerSettings("a", kind="model", prompt="p"))


def test_window_analyzers_wake_on_appended_entries_and_repeated_failures_on_none() -> None:
    history = ActorId("history", "h")
    kinds = ("EntryAppended", "ToolResultsAppended", "ToolResultRecorded", "NotificationPosted", "HistoryEdited")

    def woken_by(settings: AnalyzerSettings) -> list[str]:
        analyzer = make_analyzer("h", history, settings, Judge([]))
        return [k for k in kinds if analyzer.wants(HistoryChanged("h", k, 3, 9))]

    # repeated failures reads nothing: each entry comes with its change (see the tests below)
    assert woken_by(AnalyzerSettings("fails")) == []
    assert woken_by(AnalyzerSettings("judge", kind="model", prompt="odd?")) == ["EntryAppended", "ToolResultsAppended"]


# -- every entry judged, however fast they come --------------------------------------------------------

FAIL = {"name": "no_such_tool", "arguments": {}}
"""A call of a tool the agent does not have: it fails the same way every time."""

STREAKS: dict[str, list[list[str]]] = {
    # three failures in a row, then a call that works, laid out over the steps' results
    "apart": [["fail"], ["fail"], ["fail"], ["ok"]],
    "within": [["fail", "fail", "fail", "ok"]],
    "across": [["fail", "fail"], ["fail", "ok"]],
}


def streak_turns(shapes: list[str]) -> list[dict[str, Any]]:
    """A script with one streak of three identical failures per shape, then a plain answer."""
    turns: list[dict[str, Any]] = []
    note = ""
    for shape in shapes:
        for step in STREAKS[shape]:
            calls = []
            for kind in step:
                if kind == "fail":
                    calls.append(FAIL)
                else:  # a notebook edit that works
                    new = f"note {len(turns)}"
                    calls.append({"name": "notebook_replace", "arguments": {"old_text": note, "new_text": new}})
                    note = new
            turns.append({"text": "", "tool_calls": calls})
    return [*turns, {"text": "done"}]


def notes_of(records: list[tuple[int, str, Message]]) -> list[str]:
    return [p.notification.text for _, s, p in records
            if isinstance(p, NotificationPosted) and s == "analyzer/t.failures"]


@asynccontextmanager
async def agent_log(thread_id: str = "t") -> AsyncIterator[Any]:
    async with await open_store("memory:") as store:
        yield await store.open_thread(thread_id, owner="test")


async def spawn_watched_agent(rt: Runtime, log: Any, shapes: list[str], **settings: Any) -> Any:
    """An agent on a scripted model that answers at once, with a ``repeated_failures`` analyzer."""
    agent_settings = AgentSettings(thread_id="t", analyzers=(AnalyzerSettings("failures", threshold=3),),
                                   **settings)
    return await spawn_agent(rt, log, scripted(streak_turns(shapes)), agent_settings,
                             converter=CONVERTER, counter=COUNTER, inputs=["go"])


async def test_repeated_failures_report_every_streak_of_an_agent_running_with_no_model_latency() -> None:
    shapes = ["apart", "within", "across"] * 10  # 30 streaks, 80 steps, nothing waits between them
    async with agent_log() as log:
        async with open_runtime() as rt:
            agent = await spawn_watched_agent(rt, log, shapes)
            idle = await rt.client("test").ask(agent.engine, RunUntilIdle(), timeout=30)
            assert idle.reason is IdleReason.NO_INPUT
            await trio.testing.wait_all_tasks_blocked()
            notes = notes_of(decode(await log.read(1)))
    # one note per streak, in order, each saying whether the streak was going on when it was seen
    going_on = "the last 3 tool calls failed the same way (no_such_tool: "
    ended = "3 tool calls in a row failed the same way (no_such_tool: "
    expected = [going_on if shape == "apart" else ended for shape in shapes]
    assert [n[:len(going_on)] if n.startswith(going_on) else n[:len(ended)] for n in notes] == expected
    assert notes[1].endswith("then one did not; if it fails so again, try something different")


STEPPING_SEEDS = range(60)


async def stepped_notes(seed: int) -> list[str]:
    """The notes of one seeded run of an agent with three streaks, a recap folding beside it."""
    async with agent_log() as log:
        async with open_stepping_runtime(seed) as (rt, scheduler):
            idle: list[Message] = []

            async def body() -> None:
                agent = await spawn_watched_agent(rt, log, ["apart", "apart", "apart"],
                                                  limits=HistoryLimits(max_entries=8),
                                                  recap=RecapSettings(window=2, batch=2))
                idle.append(await rt.client("test").ask(agent.engine, RunUntilIdle(), timeout=None))

            with trio.fail_after(20):
                await step_until_settled(scheduler, body)  # (the analyzer may post after the idle)
            return notes_of(decode(await log.read(1)))


async def test_repeated_failures_report_every_streak_under_every_interleaving(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # the scheduler delivers the engine's, the recap's and the analyzer's messages in an
    # order picked by each seed: the engine often runs several steps before the analyzer
    # hears of the first, and the recap folds entries it has not read
    for seed in STEPPING_SEEDS:
        notes = await stepped_notes(seed)
        assert len(notes) == 3, f"seed {seed}: {notes}"


async def test_a_streak_that_began_before_the_analyzer_started_counts_and_is_reported_once() -> None:
    async with open_history() as world:
        await world.input("go")
        await failing_calls(world, 2)
        await spawn(world, AnalyzerSettings("failures", threshold=3))
        await failing_calls(world, 1)  # the third in a row: the two before its start count
        first = await posted(world)
        assert len(first) == 1 and first[0].startswith("the last 3 tool calls failed the same way (flaky")
    async with open_history() as world:
        await world.input("go")
        await failing_calls(world, 3)
        await spawn(world, AnalyzerSettings("failures", threshold=3))
        await failing_calls(world, 1)  # the same streak, going on: judged once, reported once
        assert len(await posted(world)) == 1

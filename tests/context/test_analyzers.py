"""Analyzers: they read a thread's history beside the engine and post notifications to it."""

from __future__ import annotations

import trio
import trio.testing

from livecontext.actors._agent import ANALYZER_CAPABILITIES
from livecontext.actors.analyzers import AnalyzerSettings, make_analyzer
from livecontext.protocol import (
    ActorId,
    EditApplied,
    HistoryChanged,
    FoldIntoRecap,
    ModelReply,
    ModelRequest,
    NotificationPosted,
)
from livecontext.runtime.models import ModelClient, TextCallback

from tests.context._world import HistoryWorld, open_history


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



def test_analyzers_wake_on_appended_entries_and_repeated_failures_only_on_tool_results() -> None:
    history = ActorId("history", "h")
    kinds = ("EntryAppended", "ToolResultsAppended", "ToolResultRecorded", "NotificationPosted", "HistoryEdited")

    def woken_by(settings: AnalyzerSettings) -> list[str]:
        analyzer = make_analyzer("h", history, settings, Judge([]))
        return [k for k in kinds if analyzer.wants(HistoryChanged("h", k, 3, 9))]

    # the other entries (inputs, outputs) hold no tool result: no need to read them
    assert woken_by(AnalyzerSettings("fails")) == ["ToolResultsAppended"]
    assert woken_by(AnalyzerSettings("judge", kind="model", prompt="odd?")) == ["EntryAppended", "ToolResultsAppended"]

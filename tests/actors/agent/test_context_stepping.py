"""The engine, the recap maintainer and two analyzers under the kernel's seeded scheduler.

Each seed runs a small scripted agent (tool calls that succeed and fail, limits small enough
that folds happen) while an analyzer posts a notification on every tool result and another
watches for repeated failures. Whatever the interleaving: no entry is lost, no rendered
context holds an orphan tool call, every notification rides on exactly one entry, and every
fold is a consistent compare-and-swap edit. The same seed gives the same run.
"""

from __future__ import annotations

from collections import Counter

import trio
import trio.testing
from attrs import frozen

from livecontext.actors import AgentSettings, spawn_agent
from livecontext.actors.agent._agent import ANALYZER_CAPABILITIES
from livecontext.actors.analyzers import AnalyzerSettings
from livecontext.actors.history import HistoryLimits, render
from livecontext.actors.recap import RecapSettings
from livecontext.protocol.agent import Idle, IdleReason, NotificationPosted, RunUntilIdle
from livecontext.protocol.kernel import ActorId, Message
from livecontext.runtime.persistence import open_store
from livecontext.runtime.testing import open_stepping_runtime

from tests.support.context_world import (
    CONVERTER,
    COUNTER,
    NoteEachResult,
    RecordingModel,
    Trace,
    agent_turns,
    check_folds,
    check_no_lost_entry,
    check_no_orphan_calls,
    check_notifications,
    decode,
    replay,
    scripted,
    step_until_settled,
    trace_of,
)

SEEDS = range(200)
INPUTS = ["fix the notes", "and again", "one more time"]
BUDGET = 2000
MAX_ENTRIES = 8
LIMITS = (
    HistoryLimits(max_entries=MAX_ENTRIES),
    # the maintainer only hears of the history near its end: the engine must wait for it
    HistoryLimits(max_entries=MAX_ENTRIES, soft=0.9, hard=1.0),
)


@frozen
class SeededRun:
    """What one seeded run left behind."""

    idle: Idle
    records: tuple[tuple[int, str, Message], ...]
    model: RecordingModel
    trace: Trace


async def run_agent(seed: int) -> SeededRun:
    """One seeded run: spawn the agent, run it until idle, let every actor settle."""
    model = scripted(agent_turns(len(INPUTS)))
    settings = AgentSettings(
        thread_id="t", budget=BUDGET, limits=LIMITS[seed % 2],
        recap=RecapSettings(window=2, batch=2, max_summary_chars=600),
        analyzers=(AnalyzerSettings("failures", threshold=2),),
    )
    store = await open_store("memory:")
    async with store:
        log = await store.open_thread("t", owner="test")
        model.watch(log, "t")
        async with open_stepping_runtime(seed) as (rt, scheduler):
            idle: list[Idle] = []

            async def body() -> None:
                agent = await spawn_agent(rt, log, model, settings, converter=CONVERTER,
                                          counter=COUNTER, inputs=INPUTS)
                notes = AnalyzerSettings("notes")
                await rt.spawn(lambda: NoteEachResult("t", agent.history.id, notes),
                               ActorId("analyzer", "t.notes"), capabilities=ANALYZER_CAPABILITIES)
                idle.append(await rt.client("test").ask(agent.engine, RunUntilIdle(), timeout=None))

            with trio.fail_after(20):
                await step_until_settled(scheduler, body)
            records = tuple(decode(await log.read(1)))
            trace = trace_of(scheduler.trace, records)
    return SeededRun(idle[0], records, model, trace)


def check_run(run: SeededRun) -> Counter[str]:
    """Every invariant of the module docstring, on one run; returns what the run exercised."""
    assert run.idle.reason is IdleReason.NO_INPUT, run.idle
    run.model.inner.check_all_used()  # type: ignore[attr-defined]
    check_no_lost_entry("t", run.records, run.model, INPUTS)
    for request in run.model.requests:
        check_no_orphan_calls(request.messages, f"request {request.call_index}")
    state = replay("t", run.records)
    final = render(state.active, state.recaps, BUDGET, system_prompt=state.system_prompt,
                   system_tokens=0, windows="", windows_tokens=0)
    check_no_orphan_calls(final.messages, "the final rendered context")
    # the engine had the maintainer fold at the truncate threshold: no model call saw more
    assert len(run.model.sizes) == len(run.model.requests)
    assert max(entries for entries, _ in run.model.sizes) <= MAX_ENTRIES, run.model.sizes
    notes = check_notifications("t", run.records)
    folds = check_folds("t", run.records, folder="recap/t")
    senders = {s for _, s, p in run.records if isinstance(p, NotificationPosted)}
    return Counter({
        "folds": folds > 0,
        "notifications": notes > 0,
        "both analyzers posted": senders == {"analyzer/t.notes", "analyzer/t.failures"},
        "the engine waited for a fold": any(d.message_type == "FoldNow" for d in run.trace.deliveries),
    })


async def test_engine_recap_and_analyzers_keep_every_invariant_under_every_seed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: Counter[str] = Counter()
    traces = set()
    for seed in SEEDS:
        run = await run_agent(seed)
        try:
            seen += check_run(run)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from exc
        traces.add(run.trace.deliveries)
    # the scenario exercises what it claims to, and the seeds explore different interleavings
    assert seen["folds"] == seen["notifications"] == len(SEEDS), seen
    assert seen["both analyzers posted"] == len(SEEDS), seen
    assert seen["the engine waited for a fold"] >= len(SEEDS) // 4, seen
    assert len(traces) > len(SEEDS) * 0.9


async def test_the_same_seed_gives_the_same_run(autojump_clock: trio.testing.MockClock) -> None:
    for seed in (3, 78):
        first = await run_agent(seed)
        second = await run_agent(seed)
        assert first.trace == second.trace
        assert first.model.sizes == second.model.sizes

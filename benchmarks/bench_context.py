"""Context-management benchmarks (issue 5, "Show"): the cost of folding beside the engine.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_context.py           # about a minute
    .venv/bin/python benchmarks/bench_context.py --quick   # fewer turns and repetitions

It prints, in one run:

1. The engine's turns per second (a turn is one model call and the steps after it) with a
   recap maintainer and two analyzers (``repeated_failures`` and ``usage``) running beside it,
   and without them, on the same zero-delay scripted model, a ``memory:`` store and limits of
   50 entries / 4,000 tokens (so the maintainer folds all along); and the ratio (target >= 0.8).
   Alone, nothing folds and every call renders a full budget of a growing history, so a third
   figure runs the engine alone with a budget as small as the folded context: the ratio to it
   is the maintainer's and analyzers' own cost.
2. Fold latency, from the runtime's audit records: a ``FoldIntoRecap`` ask to its
   ``EditApplied`` reply (median, p95); the maintainer's whole fold (its read, the summary,
   the fold); and how long the engine waited at the truncate threshold (``FoldNow``), for
   each recap strategy (``model_summary`` with a scripted recap model, zero-delay, then
   taking 25 ms a call so the maintainer falls behind the engine and the engine waits).

Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from typing import Any

import trio

from livecontext.actors import AgentSettings, spawn_agent
from livecontext.actors.analyzers import AnalyzerSettings
from livecontext.actors.history import HistoryLimits
from livecontext.actors.recap import RecapSettings
from livecontext.protocol.agent import Idle, IdleReason, RunUntilIdle
from livecontext.protocol.context import EditApplied, FoldDone, FoldIntoRecap, FoldNow, ReadHistory
from livecontext.protocol.wire import make_converter
from livecontext.runtime import AuditEvent, AuditRecord, open_runtime
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import open_store
from livecontext.runtime.tokens import TokenCounter

COUNTER = TokenCounter()
CONVERTER = make_converter()
LIMITS = HistoryLimits(max_entries=50, max_tokens=4000)
TURNS_PER_INPUT = 3
"""A notebook edit, two calls to a tool that does not exist (they fail), an answer."""


def script(inputs: int) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    last = ""
    for i in range(inputs):
        note = f"note {i}: " + " ".join(f"w{(i * 7 + j) % 97}" for j in range(30))
        turns.append({"text": f"editing the notes for task {i}",
                      "tool_calls": [{"name": "notebook_replace", "arguments": {"old_text": last, "new_text": note}}]})
        last = note
        turns.append({"text": f"trying something for task {i}",
                      "tool_calls": [{"name": "no_such_tool", "arguments": {}}] * 2})
        turns.append({"text": f"task {i} done: " + " ".join(f"w{j}" for j in range(20))})
    return turns


SMALL_BUDGET = 1500
"""About what the engine renders when the maintainer folds: the fair "alone" for overhead."""


def settings(helpers: bool, strategy: str = "simple_extract", budget: int = 8000) -> AgentSettings:
    if not helpers:
        return AgentSettings(thread_id="b", budget=budget, limits=LIMITS)
    return AgentSettings(
        thread_id="b", budget=8000, limits=LIMITS,
        recap=RecapSettings(strategy, window=4, batch=4, max_summary_chars=1500),
        analyzers=(AnalyzerSettings("failures"), AnalyzerSettings("usage", kind="usage")),
    )


async def run_agent(inputs: int, agent_settings: AgentSettings, hook: Any = None,
                    recap_delay_s: float = 0.0) -> tuple[float, int, int]:
    """One agent run until idle: (seconds, model calls, unfolded entries at the end)."""
    model = ScriptedModel.from_turns(script(inputs))
    recap_model = ScriptedModel.from_turns([{"text": f"summary {k}: the agent edited its notes",
                                             "delay_s": recap_delay_s} for k in range(inputs * 3)])
    store = await open_store("memory:")
    async with store:
        log = await store.open_thread("b", owner="bench")
        async with open_runtime() as rt:
            if hook is not None:
                rt.add_audit_hook(hook)
            agent = await spawn_agent(rt, log, model, agent_settings, converter=CONVERTER, counter=COUNTER,
                                      inputs=[f"task {i}" for i in range(inputs)], recap_model=recap_model)
            client = rt.client("bench")
            start = time.perf_counter()
            idle = await client.ask(agent.engine, RunUntilIdle(), timeout=None)
            elapsed = time.perf_counter() - start
            view = await client.ask(agent.history, ReadHistory())
    assert isinstance(idle, Idle) and idle.reason is IdleReason.NO_INPUT, idle
    model.check_all_used()
    return elapsed, inputs * TURNS_PER_INPUT, len(view.entries)


class FoldTimes:
    """An audit hook pairing requests with their replies by correlation id (monotonic ns)."""

    def __init__(self) -> None:
        self.sent: dict[str, tuple[type, str, int]] = {}
        self.read_started: dict[str, int] = {}
        self.fold_ask: list[float] = []
        self.fold_whole: list[float] = []
        self.engine_wait: list[float] = []

    def __call__(self, record: AuditRecord) -> None:
        env = record.envelope
        if record.event is AuditEvent.DELIVERED and isinstance(env.payload, (FoldIntoRecap, FoldNow, ReadHistory)):
            self.sent[env.message_id] = (type(env.payload), str(env.sender), env.sent_mono_ns)
            if isinstance(env.payload, ReadHistory):
                self.read_started[str(env.sender)] = env.sent_mono_ns
        elif record.event is AuditEvent.REPLIED and env.correlation_id in self.sent:
            kind, sender, sent = self.sent.pop(env.correlation_id)
            ms = (env.sent_mono_ns - sent) / 1e6
            if kind is FoldIntoRecap and isinstance(env.payload, EditApplied):
                self.fold_ask.append(ms)
                self.fold_whole.append((env.sent_mono_ns - self.read_started[sender]) / 1e6)
            elif kind is FoldNow and isinstance(env.payload, FoldDone):
                self.engine_wait.append(ms)


def pct(xs: Sequence[float], q: float) -> float:
    if not xs:
        return float("nan")
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def throughput(inputs: int, repeats: int) -> None:
    print(f"1. engine turns per second ({inputs * TURNS_PER_INPUT} turns a run, median of {repeats} runs;"
          " wall clock, and per second of the process's CPU time)")
    configs = {"alone": settings(False), "alone, small budget": settings(False, budget=SMALL_BUDGET),
               "beside": settings(True)}
    wall: dict[str, list[float]] = {name: [] for name in configs}
    cpu: dict[str, list[float]] = {name: [] for name in configs}
    left: dict[str, int] = {}
    for _ in range(repeats):
        for name, config in configs.items():  # interleaved, so drift hits all alike
            started = time.process_time()
            elapsed, turns, left[name] = await run_agent(inputs, config)
            wall[name].append(turns / elapsed)
            cpu[name].append(turns / (time.process_time() - started))
    w = {name: statistics.median(xs) for name, xs in wall.items()}
    c = {name: statistics.median(xs) for name, xs in cpu.items()}
    print(f"   engine alone                          {w['alone']:6.0f} /s  {c['alone']:6.0f} /s cpu  "
          f"({left['alone']} unfolded entries at the end: calls render up to 8,000 tokens)")
    print(f"   engine alone, {SMALL_BUDGET:,}-token budget     {w['alone, small budget']:6.0f} /s  "
          f"{c['alone, small budget']:6.0f} /s cpu  (a context as small as folding keeps it)")
    print(f"   with recap maintainer + 2 analyzers   {w['beside']:6.0f} /s  {c['beside']:6.0f} /s cpu  "
          f"({left['beside']} unfolded entries at the end)")
    for name in ("alone", "alone, small budget"):
        ratios = (w["beside"] / w[name], c["beside"] / c[name])
        verdict = "meets" if min(ratios) >= 0.8 else "MISSES"
        print(f"   beside / {name + ':':21s} {ratios[0]:.2f}x wall, {ratios[1]:.2f}x cpu "
              f"({verdict} the >= 0.8x target)")


async def latency(inputs: int) -> None:
    print("2. fold latency (ms)                     median     p95   count")
    for strategy, delay in (("simple_extract", 0.0), ("structured", 0.0), ("model_summary", 0.0),
                            ("model_summary", 0.025)):
        times = FoldTimes()
        await run_agent(inputs, settings(True, strategy), hook=times, recap_delay_s=delay)
        rows = (("FoldIntoRecap -> EditApplied", times.fold_ask),
                ("maintainer read -> fold applied", times.fold_whole),
                ("engine waits at truncate (FoldNow)", times.engine_wait))
        print(f"   {strategy}" + (f", recap model taking {delay * 1000:g} ms a call" if delay else ""))
        for label, xs in rows:
            figures = f"{statistics.median(xs):7.3f} {pct(xs, 0.95):7.3f}" if xs else f"{'-':>7s} {'-':>7s}"
            print(f"     {label:36s} {figures} {len(xs):7d}")


async def main(quick: bool) -> None:
    inputs = 60 if quick else 200
    await throughput(inputs, 3 if quick else 5)
    await latency(inputs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer turns and repetitions")
    trio.run(main, parser.parse_args().quick)

"""What OpenTelemetry tracing costs a turn (issue 18, point 3): CPU per turn traced vs not.

Run it from the repository root (the ``otel`` extra installed, as ``.[test]`` does)::

    .venv/bin/python benchmarks/bench_otel.py            # about half a minute
    .venv/bin/python benchmarks/bench_otel.py --quick    # a few seconds, rougher

A turn is :meth:`Agent.send` on an agent of :func:`livecontext.open_agent` with a zero-delay
scripted model and one function tool, on a ``memory:`` store: input -> model output with a
tool call -> the tool -> tool-results entry -> model answer (5 engine steps; traced, 4 spans:
the turn, two model calls, the tool call, plus their events). Traced runs give the agent a
``tracer_provider`` whose spans go to the SDK's in-memory exporter through a
``SimpleSpanProcessor``: the cost of making the spans, not of shipping them. Untraced and
traced runs alternate in one process, so both see the same machine load; each figure is the
median over the runs of the process CPU time per turn, and the ratio is traced / untraced.

Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import time

import trio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import livecontext
from livecontext.runtime.models import ScriptedModel

WARM_TURNS = 5
"""Turns taken before timing (first-call costs: tool schemas, imports, caches)."""


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


def script(turns: int) -> ScriptedModel:
    per_turn = [{"tool_calls": [{"name": "add", "arguments": json.dumps({"a": 2, "b": 3})}]}, {"text": "five"}]
    return ScriptedModel.from_turns(per_turn * turns, name="bench")


async def cpu_per_turn(turns: int, traced: bool) -> tuple[float, int]:
    """CPU seconds per timed turn, and the spans the traced run made (0 untraced)."""
    exporter = InMemorySpanExporter()
    provider: TracerProvider | None = None
    if traced:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with livecontext.open_agent(model=script(WARM_TURNS + turns), tools=[add], budget=8000,
                                      tracer_provider=provider) as agent:
        for n in range(WARM_TURNS):
            await agent.send(f"warm {n}")
        c0 = time.process_time()
        for n in range(turns):
            await agent.send(f"add 2 and 3, turn {n}")
        cpu = time.process_time() - c0
    return cpu / turns, len(exporter.get_finished_spans())


async def main(runs: int, turns: int) -> None:
    off: list[float] = []
    on: list[float] = []
    spans = 0
    for _ in range(runs):
        off.append((await cpu_per_turn(turns, traced=False))[0])
        per_turn, spans = await cpu_per_turn(turns, traced=True)
        on.append(per_turn)
    med_off, med_on = statistics.median(off), statistics.median(on)
    print(f"bench_otel {dt.date.today()}: {runs} runs of {turns} turns each way, alternating; "
          f"a traced run made {spans} spans")
    print(f"  {'CPU per turn, untraced':<34}{med_off * 1e3:>9.3f} ms  (runs: {min(off) * 1e3:.3f}-{max(off) * 1e3:.3f})")
    print(f"  {'CPU per turn, traced (in-memory)':<34}{med_on * 1e3:>9.3f} ms  (runs: {min(on) * 1e3:.3f}-{max(on) * 1e3:.3f})")
    print(f"  {'ratio traced / untraced':<34}{med_on / med_off:>9.2f}x  (+{(med_on - med_off) * 1e6:.0f} µs a turn)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter runs")
    args = parser.parse_args()
    trio.run(main, 3 if args.quick else 9, 50 if args.quick else 200)

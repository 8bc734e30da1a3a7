"""One hour of simulated agent time in a system of 10 agents, under a virtual clock.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_virtual_time.py              # 10 agents, one hour
    .venv/bin/python benchmarks/bench_virtual_time.py --agents 3 --hours 0.5 --tool-s 28

The benchmark writes a system blueprint into a temporary folder: ``--agents`` agents, each with
a scripted model whose every turn has ``delay_s = 2`` (two seconds of model latency a call) and
asks for the tool ``work(seconds)``, which sleeps (``trio.sleep``: a build, a test run) for
``--tool-s`` seconds; the last turn answers. One model call and one tool run make a *round*;
each agent gets as many rounds as fill ``--hours`` of simulated time (its last round shortened to
end on the hour). The system runs on a ``memory:`` store with a
:class:`~livecontext.runtime.VirtualClock`, inside ``trio.run(...,
clock=trio.testing.MockClock(autojump_threshold=0))``: every sleep and every latency passes
at once, in virtual time.

It prints the simulated span (the first and last stamps of the agents' records), the wall
time of the run beside the target (<= 1 s for 10 agents and an hour), its CPU time, and the
cost per model call; then runs the same seed again and says whether the records are the same
(apart from the system seqs, whose order between agents acting at the same virtual instant
follows Trio's scheduling, random by design).

Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

import trio
import trio.testing

from livecontext.actors import open_system
from livecontext.runtime import VirtualClock
from livecontext.runtime.persistence import open_store

TARGET_S = 1.0
LATENCY_S = 2

TOOLS = '''
import trio


async def work(seconds: int) -> str:
    """Work for ``seconds`` (a build, a test run)."""
    await trio.sleep(seconds)
    return f"worked {seconds} s"
'''


def write_system(folder: Path, agents: int, hours: float, tool_s: int) -> tuple[Path, int]:
    """The blueprint of ``agents`` agents, each working ``hours`` of simulated time; and the
    model calls each makes."""
    span = round(hours * 3600)
    per_round = LATENCY_S + tool_s
    rounds = max(1, (span - LATENCY_S) // per_round + (1 if (span - LATENCY_S) % per_round else 0))
    last = span - LATENCY_S - (rounds - 1) * per_round - LATENCY_S  # (the last round ends on the hour)
    turns = [{"delay_s": LATENCY_S, "tool_calls": [{"name": "work", "arguments": {
        "seconds": tool_s if k < rounds - 1 else max(last, 0)}}]} for k in range(rounds)]
    turns.append({"delay_s": LATENCY_S, "text": "done"})
    (folder / "worker.json").write_text(json.dumps({"turns": turns}), encoding="utf-8")
    (folder / "vt_tools.py").write_text(TOOLS, encoding="utf-8")
    tables = "".join(f'''
[[agents]]
name = "a{k}"
model = "scripted:worker.json"
inputs = ["Work through your hour."]
max_steps = {4 * rounds + 10}

[[agents.tools]]
use = "vt_tools:work"
''' for k in range(agents))
    path = folder / "system.toml"
    path.write_text(f'system = "vt"\nstore = "memory:"\n{tables}', encoding="utf-8")
    return path, rounds + 1


async def run(blueprint: Path, seed: int) -> tuple[float, float, list[tuple[str, str, dt.datetime, str, str, int | None]]]:
    """Run the system once; wall and CPU seconds of the run, and every agent's records."""
    store = await open_store("memory:")
    async with store:
        async with open_system(blueprint, store=store, clock=VirtualClock(seed=seed)) as system:
            wall, cpu = time.perf_counter(), time.process_time()
            done = await system.run_inputs()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert all(a.text == "done" for a in done.answers.values()), done.answers
            threads = [a.thread_id for a in system.agents.values()]
        found = []
        for thread in threads:
            async with await store.open_reader(thread) as reader:
                found += [(thread, r.sender, r.sent_at, r.kind, r.payload, r.system_seq) for r in await reader.read()]
    return wall, cpu, found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--tool-s", type=int, default=58, help="seconds each tool run sleeps (default 58)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        blueprint, calls = write_system(folder, args.agents, args.hours, args.tool_s)  # (its tools are
        # imported from its folder, as every blueprint's)

        def once() -> tuple[float, float, list[tuple[str, str, dt.datetime, str, str, int | None]]]:
            return trio.run(run, blueprint, args.seed, clock=trio.testing.MockClock(autojump_threshold=0))

        wall, cpu, found = once()
        again = once()[2]
    stamps = [r[2] for r in found]
    span = max(stamps) - min(stamps)
    total_calls = calls * args.agents
    goal = f"target <= {TARGET_S:g} s: {'met' if wall <= TARGET_S else 'MISSED'}" if (
        args.agents == 10 and args.hours == 1) else "(the target is for 10 agents and one hour)"
    print(f"virtual time: {args.agents} agents, {calls} model calls each ({LATENCY_S} s latency), "
          f"tools sleeping {args.tool_s} s; memory: store; python {sys.version.split()[0]}, trio {trio.__version__}")
    print(f"  simulated span (records' stamps)   {span} ({span.total_seconds():,.0f} s)")
    print(f"  wall time of the run               {wall:.3f} s   {goal}")
    print(f"  CPU time of the run                {cpu:.3f} s   ({cpu / total_calls * 1000:.2f} ms per model call, "
          f"{total_calls:,} calls, {len(found):,} records)")
    same = [r[:5] for r in found] == [r[:5] for r in again]
    seqs = sum(a[5] != b[5] for a, b in zip(found, again, strict=True)) if len(found) == len(again) else -1
    print(f"  same seed again: stamps, senders, kinds and payloads {'identical' if same else 'DIFFERENT'} "
          f"({len(again):,} records); system seqs differ in {seqs:,} (agents acting at the same virtual "
          "instant take them in Trio's scheduling order, random by design)")


if __name__ == "__main__":
    main()

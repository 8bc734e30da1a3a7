"""The fleet driven from asyncio through ``livecontext.aio`` against the same fleet from Trio.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_aio.py              # 1,000 agents x 5 turns, 3 rounds: ~1.5 minutes
    .venv/bin/python benchmarks/bench_aio.py --agents 200 --rounds 1

Each agent is opened through the front door (``livecontext.open_agent`` under ``trio.run``;
``livecontext.aio.open_agent`` under ``asyncio.run``, where every agent of the loop shares one
Trio guest run), on a ``memory:`` store, with the scripted model of ``bench_agent.py``'s fleet
(5 turns, 3 of them with a notebook edit: 8 model calls an agent, 50 ms of simulated latency
each), and all agents are driven at once: one task (Trio) or coroutine (asyncio) per agent
opens it, sends its 5 inputs and closes it. The two ways alternate, a round each, and the
figures are medians over the rounds: wall time of the whole fleet, CPU time, and the ratio
asyncio / Trio, whose target is at most 1.2.

What the ratio measures is the bridge: every ``send`` from asyncio crosses into the guest
(a task in the guest's nursery, an ``asyncio.Future``) and its answer crosses back, and the
guest's Trio run is driven by the asyncio loop's callbacks rather than by Trio's own loop.

Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from pathlib import Path
from statistics import median
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

import livecontext  # noqa: E402
import livecontext.aio  # noqa: E402
from benchmarks.bench_agent import FLEET_TURNS, fleet_script, user_text  # noqa: E402
from livecontext.runtime.models import ScriptedModel  # noqa: E402

TARGET = 1.2


def keywords(i: int) -> dict[str, Any]:
    return {"model": ScriptedModel.from_turns(fleet_script(), name=f"a{i}"), "store": "memory:", "thread": f"a{i}"}


def check(reply: Any) -> None:
    assert reply.reason == "no_input" and reply.text.startswith("Step "), reply


async def trio_fleet(n: int) -> tuple[float, float]:
    async def one(i: int) -> None:
        async with livecontext.open_agent(**keywords(i)) as agent:
            for k in range(FLEET_TURNS):
                check(await agent.send(user_text(k)))

    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    async with trio.open_nursery() as nursery:
        for i in range(n):
            nursery.start_soon(one, i)
    return time.perf_counter() - t0, time.process_time() - c0


async def aio_fleet(n: int) -> tuple[float, float]:
    async def one(i: int) -> None:
        async with livecontext.aio.open_agent(**keywords(i)) as agent:
            for k in range(FLEET_TURNS):
                check(await agent.send(user_text(k)))

    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each way, alternating (medians)")
    args = parser.parse_args()
    calls = len(fleet_script())
    print(f"the fleet: {args.agents:,} agents x {FLEET_TURNS} turns ({calls} model calls an agent, "
          f"50 ms each), opened and driven at once through the front door; {args.rounds} rounds each way")
    runs: dict[str, list[tuple[float, float]]] = {"trio": [], "asyncio": []}
    for r in range(args.rounds):
        runs["trio"].append(trio.run(trio_fleet, args.agents))
        runs["asyncio"].append(asyncio.run(aio_fleet(args.agents)))
        print(f"  round {r + 1}: trio {runs['trio'][-1][0]:.2f} s, asyncio {runs['asyncio'][-1][0]:.2f} s (wall)")
    wall = {way: median(w for w, _ in rs) for way, rs in runs.items()}
    cpu = {way: median(c for _, c in rs) for way, rs in runs.items()}
    turns = args.agents * FLEET_TURNS
    print(f"  {'':<28} {'Trio':>10} {'asyncio':>10} {'ratio':>7}")
    print(f"  {'wall, s (median)':<28} {wall['trio']:>10.2f} {wall['asyncio']:>10.2f} {wall['asyncio'] / wall['trio']:>7.2f}"
          f"  target <= {TARGET}: {'ok' if wall['asyncio'] / wall['trio'] <= TARGET else 'MISSED'}")
    print(f"  {'CPU, s (median)':<28} {cpu['trio']:>10.2f} {cpu['asyncio']:>10.2f} {cpu['asyncio'] / cpu['trio']:>7.2f}")
    print(f"  {'CPU per turn, ms':<28} {cpu['trio'] / turns * 1e3:>10.2f} {cpu['asyncio'] / turns * 1e3:>10.2f}")


if __name__ == "__main__":
    main()

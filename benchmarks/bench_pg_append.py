"""Append throughput of the PostgreSQL store beside SQLite's, and what it means for a fleet
(issue 19, "Show").

Run it from the repository root (Debian's ``postgresql`` installed: it starts a throwaway
cluster, see ``tests/support/postgres.py``, with ``fsync=on``: every commit is on the disk)::

    .venv/bin/python benchmarks/bench_pg_append.py                 # under a minute
    .venv/bin/python benchmarks/bench_pg_append.py --threads 100 --steps 50 --batch 6
    .venv/bin/python benchmarks/bench_pg_append.py --only engine --cpu-per-step-ms 2 --machines 100 --cores 16

Three parts, in one run:

1. ``plain``: ``--threads`` threads (agents) append concurrently from one process and one Trio
   run, each ``--steps`` times a batch of ``--batch`` records of about 450 bytes (one append
   each, as the history store commits a step; the store commits the appends waiting at once
   in one transaction: group commit), through ``open_store`` as the engine does. It prints appends (steps) and records per second for each store.
2. ``engine``: first a small batch run in this process (``--engine-tasks`` agents of
   ``--turns`` turns, a scripted model with no delay, ``--concurrency`` at once, the real
   ``run_batch`` of ``livecontext batch`` on a fresh PostgreSQL database), which measures the
   CPU an agent step costs this process (the engine, the store's client side; not the
   server's) and how the engine commits: appends per step, records per append, bytes per
   record (the PostgreSQL writer's appends are counted on the way). Then ``--agents``
   threads in one process each commit ``--steps`` steps of ``--step-records`` records of
   that size, as many agents of a worker do at once: each step one append from a worker
   thread (the store writes the appends waiting at once in one transaction, one group at a
   time per process). It prints records/s and steps/s.
3. ``on paper``: from those measured figures (or ``--cpu-per-step-ms``), the agent steps per
   second of ``--machines`` machines of ``--cores`` cores, the agent steps per second one
   PostgreSQL primary takes, how many machines one primary serves, and so where sharding by
   thread (a hash of the thread id picks the database) starts. The primary's figure is a lower
   bound: here the server shares two cores with the Python process feeding it.

Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_scale import CAN_SAMPLE, TreeCpu, write_inputs  # noqa: E402
from livecontext.actors.batch import BatchTask, run_batch  # noqa: E402
from livecontext.actors.blueprint import load_blueprint  # noqa: E402
from livecontext.runtime.persistence import NewRecord, open_store  # noqa: E402
from livecontext.runtime.persistence.postgres import _postgres  # noqa: E402
from tests.support.postgres import Cluster, throwaway_cluster  # noqa: E402


async def measure(url: str, threads: int, steps: int, batch: int, payload_bytes: int = 450,
                  server: TreeCpu | None = None) -> dict[str, float]:
    """``appends``/s and ``records``/s of ``threads`` writers appending ``steps`` batches of
    ``batch`` each; the CPU seconds an append cost this process (``client_cpu``) and the
    processes ``server`` watches (``server_cpu``, NaN without one)."""
    text = "x" * max(0, payload_bytes - len(json.dumps({"text": ""})))
    async with await open_store(url) as store:
        logs = [await store.open_thread(f"t{i}", owner="bench") for i in range(threads)]

        def records() -> list[NewRecord]:
            now = dt.datetime.now(dt.timezone.utc)
            return [NewRecord(sender="engine/t", sent_at=now, sent_mono_ns=time.monotonic_ns(), kind="entry",
                              payload=json.dumps({"text": text})) for _ in range(batch)]

        async def write(log: Any) -> None:
            for _ in range(steps):
                await log.append(records())

        if server is not None:
            server.start()
        start, cpu = time.perf_counter(), time.process_time()
        async with trio.open_nursery() as nursery:
            for log in logs:
                nursery.start_soon(write, log)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        server_cpu = server.stop() if server is not None else math.nan
        for log in logs:
            await log.aclose()
    appends = threads * steps
    return {"appends": appends / elapsed, "records": appends * batch / elapsed, "client_cpu": cpu / appends,
            "server_cpu": server_cpu / appends}


class Commits:
    """What the PostgreSQL writer was asked to append: transactions, records, payload bytes."""

    def __init__(self) -> None:
        self.appends = 0
        self.records = 0
        self.payload_bytes = 0


@contextmanager
def counting_appends() -> Iterator[Commits]:
    """Count every append of the PostgreSQL store's writers while the block runs (the store
    commits the appends waiting at once in one transaction: an append is a share of one)."""
    seen = Commits()
    original = _postgres._PostgresWriter.append

    def append(self: Any, records: list[Any]) -> None:
        seen.appends += 1
        seen.records += len(records)
        seen.payload_bytes += sum(len(r.payload.encode()) for r in records)
        original(self, records)

    _postgres._PostgresWriter.append = append  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        _postgres._PostgresWriter.append = original  # type: ignore[method-assign]


def engine_profile(url: str, folder: Path, tasks: int, turns: int, concurrency: int) -> dict[str, float]:
    """A zero-latency batch of ``tasks`` agents in this process on ``url``: CPU per agent step,
    appends per step, records per append, bytes per record."""
    work = write_inputs(folder / "profile", tasks, turns, 0.0)
    blueprint = load_blueprint(work / "agent.toml")
    given = [BatchTask(f"t{i}", tuple(f"question {k} of task {i}" for k in range(turns))) for i in range(tasks)]
    with counting_appends() as seen:
        cpu, wall = time.process_time(), time.perf_counter()
        results = trio.run(lambda: run_batch(blueprint, given, url, batch="profile", concurrency=concurrency))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    steps = sum(r.steps for r in results)
    wrong = [r for r in results if r.status != "answered" or r.steps != turns]
    if wrong:
        sys.exit(f"bench_pg_append: the profile batch's task {wrong[0].id} ended {wrong[0].status} after "
                 f"{wrong[0].steps} steps (expected answered after {turns}): {wrong[0].error}")
    return {"steps": steps, "cpu_ms": cpu / steps * 1000, "wall": wall, "appends_per_step": seen.appends / steps,
            "records_per_append": seen.records / seen.appends, "bytes_per_record": seen.payload_bytes / seen.records}


def server_cpu(cluster: Cluster) -> TreeCpu | None:
    """A sampler of the server's processes (its main process and each connection's), on Linux."""
    if not CAN_SAMPLE:
        return None
    return TreeCpu(int((cluster.folder / "data" / "postmaster.pid").read_text().split()[0]))


def on_paper(cpu_ms: float, cpu_source: str, primary_appends: float, appends_per_step: float,
             machines: int, cores: int) -> None:
    """Print the fleet arithmetic, each figure from the ones before it."""
    per_core = 1000 / cpu_ms
    per_machine = per_core * cores
    fleet = per_machine * machines
    primary = primary_appends / appends_per_step
    served = primary / per_machine
    shards = math.ceil(fleet / primary)
    print(f"\non paper ({machines} machines x {cores} cores, every core running agents, the model elsewhere):")
    print(f"  CPU per agent step           {cpu_ms:.2f} ms ({cpu_source})")
    print(f"  one core                     1000 / {cpu_ms:.2f} = {per_core:,.0f} agent steps/s")
    print(f"  one machine                  {per_core:,.0f} x {cores} = {per_machine:,.0f} agent steps/s")
    print(f"  the fleet                    {per_machine:,.0f} x {machines} = {fleet:,.0f} agent steps/s, "
          f"{fleet * appends_per_step:,.0f} appends/s")
    print(f"  one PostgreSQL primary       {primary_appends:,.0f} appends/s measured / {appends_per_step:.2f} "
          f"appends a step = {primary:,.0f} agent steps/s (a lower bound: a shared 2-core box, server and client)")
    print(f"  machines one primary serves  {primary:,.0f} / {per_machine:,.0f} = {served:.2f}")
    if shards <= 1:
        print(f"  so one primary takes the whole fleet; sharding by thread would start past {served:.0f} machines")
    else:
        print(f"  so sharding by thread (hash(thread id) -> database) starts past {served:.2f} machines; "
              f"{machines} machines need {fleet:,.0f} / {primary:,.0f} -> {shards} primaries (at this lower bound)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("plain", "engine"), default=None, help="run one part (default: both)")
    parser.add_argument("--threads", type=int, default=20, help="plain: threads appending at once (default 20)")
    parser.add_argument("--steps", type=int, default=100, help="appends per thread (default 100)")
    parser.add_argument("--batch", type=int, default=4, help="plain: records an append (default 4)")
    parser.add_argument("--agents", type=int, default=200, help="engine: threads committing steps at once (default 200)")
    parser.add_argument("--step-records", type=int, default=3, help="engine: records a step (default 3)")
    parser.add_argument("--engine-tasks", type=int, default=200, help="engine: agents of the profile batch (default 200)")
    parser.add_argument("--turns", type=int, default=5, help="engine: turns an agent of the profile batch (default 5)")
    parser.add_argument("--concurrency", type=int, default=200, help="engine: profile batch tasks at once (default 200)")
    parser.add_argument("--cpu-per-step-ms", type=float, default=None,
                        help="on paper: CPU an agent step costs (default: measured by the profile batch)")
    parser.add_argument("--machines", type=int, default=100, help="on paper: machines (default 100)")
    parser.add_argument("--cores", type=int, default=16, help="on paper: cores a machine (default 16)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, throwaway_cluster(fsync=True) as cluster:
        if args.only in (None, "plain"):
            for name, url in (("sqlite", f"sqlite:{folder}/bench.db"),
                              ("postgresql", cluster.url(cluster.new_database()))):
                got = trio.run(measure, url, args.threads, args.steps, args.batch)
                print(f"{name:<11} {got['appends']:8.0f} appends/s {got['records']:9.0f} records/s "
                      f"({args.batch} records an append, {args.threads} threads at once)", flush=True)
        if args.only in (None, "engine"):
            profile = engine_profile(cluster.url(cluster.new_database()), Path(folder), args.engine_tasks,
                                     args.turns, args.concurrency)
            print(f"\nprofile batch: {args.engine_tasks} agents x {args.turns} turns, no model delay, "
                  f"{args.concurrency} at once, postgresql: {profile['steps']:.0f} steps in {profile['wall']:.2f} s, "
                  f"{profile['cpu_ms']:.2f} ms of this process's CPU a step; {profile['appends_per_step']:.2f} "
                  f"appends a step, {profile['records_per_append']:.2f} records an append, "
                  f"{profile['bytes_per_record']:.0f} bytes a record", flush=True)
            size = round(profile["bytes_per_record"])
            got = trio.run(measure, cluster.url(cluster.new_database()), args.agents, args.steps,
                           args.step_records, size, server_cpu(cluster))
            steps = got["appends"]
            print(f"engine-like: {args.agents} agents each committing {args.steps} steps of {args.step_records} "
                  f"records of {size} bytes (one append a step; the appends waiting at once commit together): "
                  f"{steps:,.0f} steps/s, "
                  f"{got['records']:,.0f} records/s; CPU a step: {got['client_cpu'] * 1000:.2f} ms in this process, "
                  f"{got['server_cpu'] * 1000:.2f} ms in the server; this one process was busy "
                  f"{got['client_cpu'] * steps:.0%} of the time (near 100%: the client, not the primary, was the limit)",
                  flush=True)
            cpu_ms, source = ((args.cpu_per_step_ms, "given") if args.cpu_per_step_ms is not None
                              else (profile["cpu_ms"], "measured by the profile batch"))
            on_paper(cpu_ms, source, steps, profile["appends_per_step"], args.machines, args.cores)
            if got["server_cpu"] == got["server_cpu"]:  # (not NaN: the server's CPU was sampled)
                ceiling = args.cores / got["server_cpu"]
                print(f"  beyond the lower bound: the server spent {got['server_cpu'] * 1000:.2f} ms of CPU a commit, "
                      f"so a {args.cores}-core primary's CPU alone would stop near {args.cores} / "
                      f"{got['server_cpu'] * 1000:.2f} ms = {ceiling:,.0f} commits/s = "
                      f"{ceiling / profile['appends_per_step']:,.0f} agent steps/s (disk and locks not counted)")


if __name__ == "__main__":
    main()

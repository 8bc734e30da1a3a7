"""Append throughput of the PostgreSQL store beside SQLite's (issue 19, "Show").

Run it from the repository root (Debian's ``postgresql`` installed: it starts a throwaway
cluster, see ``tests/support/postgres.py``, with ``fsync=on``: every commit is on the disk)::

    .venv/bin/python benchmarks/bench_pg_append.py                 # a few seconds
    .venv/bin/python benchmarks/bench_pg_append.py --threads 100 --steps 50 --batch 6

``--threads`` threads (agents) append concurrently from one process and one Trio run, each
``--steps`` times a batch of ``--batch`` records of about 450 bytes (one transaction each, as
the history store commits a step), through ``open_store`` as the engine does. It prints
appends (steps) and records per second for each store; the server runs on this machine.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from livecontext.runtime.persistence import NewRecord, open_store  # noqa: E402
from tests.support.postgres import throwaway_cluster  # noqa: E402


async def measure(url: str, threads: int, steps: int, batch: int) -> tuple[float, float]:
    """(appends/s, records/s) of ``threads`` writers appending ``steps`` batches each."""
    async with await open_store(url) as store:
        logs = [await store.open_thread(f"t{i}", owner="bench") for i in range(threads)]

        def records() -> list[NewRecord]:
            now = dt.datetime.now(dt.timezone.utc)
            return [NewRecord(sender="engine/t", sent_at=now, sent_mono_ns=time.monotonic_ns(), kind="entry",
                              payload=json.dumps({"text": "x" * 430})) for _ in range(batch)]

        async def write(log: object) -> None:
            for _ in range(steps):
                await log.append(records())  # type: ignore[attr-defined]

        start = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for log in logs:
                nursery.start_soon(write, log)
        elapsed = time.perf_counter() - start
        for log in logs:
            await log.aclose()
    return threads * steps / elapsed, threads * steps * batch / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, throwaway_cluster(fsync=True) as cluster:
        for name, url in (("sqlite", f"sqlite:{folder}/bench.db"),
                          ("postgresql", cluster.url(cluster.new_database()))):
            appends, records = trio.run(measure, url, args.threads, args.steps, args.batch)
            print(f"{name:<11} {appends:8.0f} appends/s {records:9.0f} records/s "
                  f"({args.batch} records an append, {args.threads} threads at once)")


if __name__ == "__main__":
    main()

"""Building a trace of a long thread (issue 18): records -> seconds to build, JSON and SVG sizes.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_trace.py                  # ~1 minute: writes the thread first
    .venv/bin/python benchmarks/bench_trace.py --records 5000   # rougher, faster

It writes a thread of ``--records`` records with ``tests/support/trace_threads.py`` (a real
agent with a scripted model, a notebook, a recap maintainer and two analyzers: about one
model call every three records) into a temporary SQLite store, then builds its trace as
``livecontext trace`` does (the CLI's garbage-collector settings), ``--repeat`` times, and
prints for the fastest: the wall and CPU seconds to build it (read every record once, replay
it with the history store's code, render each model call), to make its JSON and to draw its
SVG, and their sizes. The target: a few seconds for 20,000 records.

Not a test: pytest does not collect it (its name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

from livecontext.actors.cli._main import tune_gc  # noqa: E402
from livecontext.actors.trace import Trace, build_trace, trace_json, trace_svg  # noqa: E402
from livecontext.protocol import dump_json  # noqa: E402
from tests.support.trace_threads import LONG_THREAD, make_long_thread  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:{Path(tmp) / 'trace.db'}"
        t0 = time.perf_counter()
        records = make_long_thread(url, args.records)
        print(f"wrote a thread of {records:,} records in {time.perf_counter() - t0:.1f} s")
        tune_gc()
        best: tuple[float, float, Trace] | None = None
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            built = trio.run(build_trace, url, LONG_THREAD)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if best is None or wall < best[0]:
                best = (wall, cpu, built)
        assert best is not None
        wall, cpu, built = best
        t1 = time.perf_counter()
        data = trace_json(built)
        text = dump_json(data)
        t2 = time.perf_counter()
        svg = trace_svg(data)
        t3 = time.perf_counter()
        counts = data["counts"]
        print(f"trace of {counts['records']:,} records ({counts['messages']:,} messages, "
              f"{counts['model_calls']:,} model calls): built in {wall:.2f} s ({cpu:.2f} s CPU), best of {args.repeat}")
        print(f"  JSON: {len(text.encode()) / 1e6:.1f} MB in {t2 - t1:.2f} s "
              f"({len(data['texts']):,} texts, {sum(len(c['entries']) for c in data['model_calls']):,} context entries)")
        print(f"  SVG:  {len(svg.encode()) / 1e3:.0f} kB in {t3 - t2:.2f} s (the first and last rows)")


if __name__ == "__main__":
    main()

"""What ``--live`` costs a run (issue 18: at most 5%).

Run it from the repository root::

    .venv/bin/python benchmarks/bench_live.py                 # about 40 s
    .venv/bin/python benchmarks/bench_live.py --rounds 3 --inputs 40
    .venv/bin/python benchmarks/bench_live.py --target stringio

One offline run, as ``livecontext run examples/offline.toml`` makes it (the blueprint's
notebook, limits, recap maintainer and two analyzers, a ``memory:`` store), on a scripted model
with no delay and many turns (``--inputs`` tasks of three turns each: a notebook edit, two
calls to a tool that does not exist, an answer), so that the recap folds and the analyzers
notify all along. Each round runs it twice, alternately first: without a view (the run's own
subscriptions, as ``run --json`` makes them) and with the live view drawing its panel at its
usual rate, on a real pseudo-terminal whose other end a separate ``cat`` reads (the terminal's
own work is not ours), or (``--target stringio``) on rich's ``Console(file=io.StringIO(),
force_terminal=True)``. It prints each run's wall and CPU time (the whole process, the view's
drawing thread included), the frames drawn, the overhead (the median with-view time over the
median without, and the same of the best runs), and the view's own CPU time (``LiveView.cpu_s``)
against the run's: on a busy machine the runs vary more than the view costs.

Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import trio
from attrs import evolve
from rich.console import Console

from livecontext.actors.agent import open_session, run_until_idle
from livecontext.actors.blueprint import Blueprint, load_any_blueprint
from livecontext.actors.cli._live import REFRESH_HZ, LiveView, open_live_view
from livecontext.actors.cli._live_gauge import Watched

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout too

from benchmarks.bench_context import script  # noqa: E402  (the same three-turn tasks)


@contextlib.contextmanager
def terminal(target: str) -> Iterator[Console]:
    """The console the view draws on: a pseudo-terminal read by ``cat``, or a string."""
    if target == "stringio":
        yield Console(file=io.StringIO(), force_terminal=True, width=120, height=40)
        return
    master, slave = os.openpty()
    reader = subprocess.Popen(["cat"], stdin=master, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with open(slave, "w", encoding="utf-8", closefd=True) as tty:
            yield Console(file=tty, width=120, height=40)
    finally:
        os.close(master)
        reader.wait(timeout=10)


@contextlib.asynccontextmanager
async def maybe_view(live: Console | None, session: Any, watched: Watched) -> AsyncIterator[LiveView | None]:
    if live is None:
        yield None
        return
    async with open_live_view(session.rt, [watched], live) as view:
        yield view


async def one_run(bp: Blueprint, model: str, inputs: list[str], live: Console | None) -> dict[str, float]:
    settings = evolve(bp.settings, thread_id="bench")
    async with open_session("memory:", settings, model, inputs=inputs, apps=bp.make_apps()) as session:
        watched = Watched("bench", session.agent, settings.budget, None, len(inputs))
        wall, cpu = time.perf_counter(), time.process_time()
        async with maybe_view(live, session, watched) as view:
            idle = await run_until_idle(session, None)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert idle.reason.value == "no_input", idle
        return {"wall": wall, "cpu": cpu, "steps": idle.steps, "view_cpu": view.cpu_s if view else 0.0,
                "frames": view.frames if view else 0, "dropped": view.dropped if view else 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="pairs of runs (default 10)")
    parser.add_argument("--inputs", type=int, default=150, help="tasks fed to each run (three turns each; default 150)")
    parser.add_argument("--target", choices=("pty", "stringio"), default="pty")
    args = parser.parse_args()

    loaded = load_any_blueprint(str(ROOT / "examples" / "offline.toml"))
    assert isinstance(loaded, Blueprint)
    inputs = [f"task {i}: note it, try it, say it is done" for i in range(args.inputs)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "script.json"
        path.write_text(json.dumps({"turns": script(args.inputs)}))
        model = f"scripted:{path}"
        trio.run(one_run, loaded, model, inputs[:2], None)  # warm up: imports, the tokenizer
        runs: dict[str, list[dict[str, float]]] = {"without": [], "live": []}
        with terminal(args.target) as console:
            for r in range(args.rounds):
                order = ["without", "live"] if r % 2 == 0 else ["live", "without"]
                for kind in order:
                    got = trio.run(one_run, loaded, model, inputs, console if kind == "live" else None)
                    runs[kind].append(got)
                    view = (f"  frames {got['frames']:.0f} (dropped {got['dropped']:.0f}), the view's own CPU "
                            f"{got['view_cpu'] * 1000:.1f} ms" if kind == "live" else "")
                    print(f"round {r + 1} {kind:<8} wall {got['wall'] * 1000:6.0f} ms  cpu {got['cpu'] * 1000:6.0f} ms  "
                          f"{got['steps']:.0f} steps{view}", flush=True)
    print(f"\n{args.inputs} inputs, {runs['live'][0]['steps']:.0f} steps a run, view at {REFRESH_HZ:g} Hz on "
          f"{'a pseudo-terminal' if args.target == 'pty' else 'a StringIO console'}; of {args.rounds} rounds:")
    for measure in ("wall", "cpu"):
        for name, pick in (("median", statistics.median), ("best", min)):
            without = pick(run[measure] for run in runs["without"])
            live = pick(run[measure] for run in runs["live"])
            print(f"  {measure:<4} {name:<6} without {without * 1000:6.0f} ms   live {live * 1000:6.0f} ms   "
                  f"overhead {(live / without - 1) * 100:+5.1f}%  (target <= +5%)")
    share = statistics.median(run["view_cpu"] / run["cpu"] for run in runs["live"])
    print(f"  the view's own CPU (taking events, sampling, drawing; both threads), of the run's: "
          f"median {share * 100:.1f}%")


if __name__ == "__main__":
    main()

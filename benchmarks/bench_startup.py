"""How long the ``livecontext`` command takes to start: ``--version``, ``--help`` and ``threads``
(of a ``memory:`` store, and of a SQLite store holding a few threads), each run ``--runs`` times
in a fresh process.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_startup.py                  # about half a minute
    .venv/bin/python benchmarks/bench_startup.py --runs 3         # rougher, faster (--threads N: in the store)
    .venv/bin/python benchmarks/bench_startup.py --python OTHER/.venv/bin/python   # beside another install

It prints, per command, the median wall time and the median CPU time of the process (the CPU
time says more on a busy machine, where the wall time also counts the waits for a core),
beside the targets: ``--version`` at most 0.3 s, ``threads`` at most 0.6 s, on an idle machine.
The first line is the interpreter alone (``python -c pass``), the floor under every command.

Each ``--python`` (this interpreter by default; give it twice or more to compare installs, e.g.
a checkout before a change) runs the command as installed beside it (its ``livecontext``
script), else as ``python -c 'from livecontext._command import main; main()'``; the installs'
runs alternate, so that a busy spell slows them alike.

Not a test: pytest does not collect it (its name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS_S = {"--version": 0.3, "threads": 0.6}
"""The start-up each command should not exceed on an idle machine (wall time)."""

def command_of(python: str) -> list[str]:
    """The ``livecontext`` command of the install ``python`` belongs to."""
    script = Path(python).parent / "livecontext"
    if script.is_file():
        return [str(script)]
    return [python, "-c", "from livecontext._command import main; main()"]


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LIVECONTEXT_STORE", None)
    return env


def time_once(argv: list[str]) -> tuple[float, float]:
    """Run ``argv`` to its end: its wall time and its CPU time (user + system), in seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment(), check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"bench_startup: {' '.join(argv)} failed ({done.returncode}): {done.stderr.decode().strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def make_store(python: str, folder: Path, threads: int) -> str:
    """A SQLite store holding ``threads`` threads (an echo model answered one input in each)."""
    url = f"sqlite:{folder / 'threads.db'}"
    for n in range(threads):
        argv = [*command_of(python), "run", "--store", url, "--model", "echo", "--thread", f"t{n}", "--input", "hi"]
        subprocess.run(argv, stdout=subprocess.DEVNULL, env=environment(), check=True)
    return url


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=11, help="fresh processes per command (default 11)")
    parser.add_argument("--threads", type=int, default=3, help="threads in the SQLite store (default 3)")
    parser.add_argument("--python", action="append", default=None,
                        help="an interpreter whose livecontext install to time (repeatable; default: this one)")
    args = parser.parse_args(argv)
    pythons: list[str] = args.python or [sys.executable]
    with tempfile.TemporaryDirectory() as folder:
        stores = {}
        for i, python in enumerate(pythons):
            (Path(folder) / str(i)).mkdir()
            stores[python] = make_store(python, Path(folder) / str(i), args.threads)
        cases = [
            ("python -c pass (the interpreter alone)", None, lambda py: [py, "-c", "pass"]),
            ("livecontext --version", "--version", lambda py: [*command_of(py), "--version"]),
            ("livecontext --help", None, lambda py: [*command_of(py), "--help"]),
            ("livecontext threads --store memory:", "threads",
             lambda py: [*command_of(py), "threads", "--store", "memory:"]),
            (f"livecontext threads --store sqlite: ({args.threads} thread{'s' if args.threads != 1 else ''})", "threads",
             lambda py: [*command_of(py), "threads", "--store", stores[py]]),
        ]
        print(f"start-up, median of {args.runs} fresh processes: wall / CPU (seconds)")
        for i, python in enumerate(pythons):
            print(f"  [{i}] {' '.join(command_of(python))}")
        for label, target_key, argv_of in cases:
            timings: dict[str, list[tuple[float, float]]] = {python: [] for python in pythons}
            for _ in range(args.runs):
                for python in pythons:
                    timings[python].append(time_once(argv_of(python)))
            cells = []
            for i, python in enumerate(pythons):
                wall = statistics.median(w for w, _ in timings[python])
                cpu = statistics.median(c for _, c in timings[python])
                cells.append(f"[{i}] {wall:5.2f} / {cpu:4.2f}")
            target = TARGETS_S.get(target_key or "")
            said = f"   target <= {target:.1f} s" if target is not None else ""
            print(f"{label:<48} {'   '.join(cells)}{said}")


if __name__ == "__main__":
    main()

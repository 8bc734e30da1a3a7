"""``livecontext batch`` on one worker and on two (issue 19, "Show": two workers >= 1.6x one).

Run it from the repository root (with the ``ray`` extra, and Debian's ``postgresql`` for the
PostgreSQL store: it starts a throwaway cluster, see ``tests/support/postgres.py``, fsync on)::

    .venv/bin/python benchmarks/bench_scale.py             # 2,000 agents x 5 turns, 3 rounds: several minutes
    .venv/bin/python benchmarks/bench_scale.py --quick     # 200 agents, 1 round: about a minute
    .venv/bin/python benchmarks/bench_scale.py --tasks 100 --stores sqlite --rounds 1

It writes, in a temporary folder, a blueprint whose model is a script of ``--turns`` answers,
each taking ``--latency-ms`` (``delay_s``), and a tasks file of ``--tasks`` tasks of ``--turns``
inputs each: every task is one agent answering ``--turns`` inputs, so ``turns`` model calls.
Then it runs the real command line (the ``livecontext`` script beside this Python) in a
subprocess, as a user would::

    livecontext batch agent.toml --tasks tasks.jsonl --store URL --concurrency C --workers 1
    livecontext batch agent.toml --tasks tasks.jsonl --store URL --concurrency C --workers 2 --ray ADDR

the first in one process (no Ray), the second on a local Ray head this benchmark starts once,
before any timing (``ray start --head --block`` on 127.0.0.1, 2 CPUs, a 100 MB object store;
stopped at the end, also on error, by ending that one process, which stops its cluster:
``ray stop`` would stop every Ray cluster of the machine, other people's too). Each run gets a
fresh store: a new SQLite file, or a new database of one PostgreSQL cluster. Rounds alternate
which of the two runs first; the figures printed are medians over rounds.

``--concurrency`` (tasks at once per worker) defaults to 200: at 50 ms a call, 200 agents ask
for 4,000 steps/s, far more than one core's worth of agent steps (a step costs milliseconds of
CPU: the tiny in-process batch that this prints first measures it), so one worker is
CPU-bound and the second worker has a core's worth of work to take. The printed latency floor
(waves of ``concurrency`` tasks x turns x latency) shows how far above it each run is.

Printed per store: wall seconds, agent turns (model calls) per second for 1 and 2 workers, the
ratio 2w/1w against the 1.6 target, and the CPU of the run: the ``batch`` process tree's
(``getrusage`` of waited children), on Ray the Ray cluster's processes' (sampled from
``/proc``: the workers run there, not under ``batch``, and end unwaited with their job), and
on PostgreSQL the server's (sampled too; it shares the two cores with the workers). Ray's own start-up (joining
the cluster, starting worker processes, importing livecontext there) is inside each 2-worker
timing; it is measured apart as the extra wall time of a batch of 2 zero-latency tasks on Ray
over the same in one process.

Each run's results file is checked: one line per task, status ``answered``, ``steps`` equal to
``--turns``; anything else stops the benchmark (a benchmark that measures failures measures
nothing).

Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout too

from tests.support.postgres import Cluster, free_port, throwaway_cluster  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
CAN_SAMPLE = Path("/proc/self/stat").exists()
"""Whether other processes' CPU can be read (Linux's ``/proc``)."""
TARGET = 1.6
"""Issue 19: two workers on two cores at least 1.6x the throughput of one."""


class BenchFailure(Exception):
    """A run did not do what it was asked: the figures would mean nothing."""


def write_inputs(folder: Path, tasks: int, turns: int, latency_ms: float) -> Path:
    """``folder`` (made), holding the blueprint, its script and the tasks file."""
    folder.mkdir()
    script = {"turns": [{"text": f"answer {k}", "delay_s": latency_ms / 1000} for k in range(turns)]}
    (folder / "script.json").write_text(json.dumps(script), encoding="utf-8")
    (folder / "agent.toml").write_text('model = "scripted:script.json"\n', encoding="utf-8")
    lines = (json.dumps({"id": f"t{i}", "inputs": [f"question {k} of task {i}" for k in range(turns)]})
             for i in range(tasks))
    (folder / "tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def check_results(path: Path, tasks: int, turns: int) -> None:
    """Raise :class:`BenchFailure` unless every task has one line, ``answered``, ``turns`` steps."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    seen: dict[str, int] = {}
    for line in lines:
        seen[line["id"]] = seen.get(line["id"], 0) + 1
        if line["status"] != "answered" or line["steps"] != turns:
            raise BenchFailure(f"{path.name}: task {line['id']} ended {line['status']} after {line['steps']} steps "
                               f"(expected answered after {turns}): {line.get('error')}")
    twice = sorted(i for i, n in seen.items() if n > 1)
    if twice:
        raise BenchFailure(f"{path.name}: {len(twice)} tasks have more than one line, {', '.join(twice[:5])} among them")
    if len(seen) != tasks:
        raise BenchFailure(f"{path.name}: {len(seen)} of {tasks} tasks have a line; the others never ended")


class TreeCpu:
    """CPU seconds used by the processes under ``root_pid`` since :meth:`start`, sampled every
    ``every_s`` by a thread (a process that ends loses at most one interval; Ray's workers end
    with their job, so they cannot be waited on for an exact count)."""

    def __init__(self, root_pid: int, every_s: float = 0.2) -> None:
        self._root = root_pid
        self._every = every_s
        self._base: dict[tuple[int, float], float] = {}
        self._last: dict[tuple[int, float], float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> dict[tuple[int, float], float]:
        """CPU seconds of each process under the root now, by (pid, start time)."""
        stats = proc_stats()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in stats.items():
            children.setdefault(ppid, []).append(pid)
        got: dict[tuple[int, float], float] = {}
        todo = [self._root]
        while todo:
            pid = todo.pop()
            if pid in stats:
                _, started, cpu = stats[pid]
                got[(pid, started)] = cpu
            todo.extend(children.get(pid, ()))
        return got

    def start(self) -> None:
        """Take the baseline and start sampling."""
        self._base = self._sample()
        self._last = dict(self._base)
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            self._last.update(self._sample())

    def stop(self) -> float:
        """Stop sampling; the CPU seconds used since :meth:`start`."""
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        self._last.update(self._sample())
        return sum(cpu - self._base.get(key, 0.0) for key, cpu in self._last.items())


RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token"}
"""For the head and for ``batch``: ``ray start`` turns token authentication on (the token in
``~/.ray/auth_token``), and ``ray.init`` sends the token only in token mode."""


def proc_stats() -> dict[int, tuple[int, float, float]]:
    """``pid: (parent pid, start time, CPU seconds)`` of every process, from ``/proc`` (Linux;
    empty elsewhere: the Ray cluster's CPU is then not shown)."""
    got: dict[int, tuple[int, float, float]] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                text = Path(f"/proc/{name}/stat").read_text()
                fields = text[text.rindex(")") + 2:].split()  # (the name in parentheses may hold spaces)
                cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime
                got[int(name)] = (int(fields[1]), float(fields[19]), cpu)
    return got


class RayHead:
    """A local Ray head in the foreground (``ray start --block``): ending this one process
    stops the cluster's processes, and only this cluster's."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self._log = folder / "ray-head.log"
        ray = Path(sys.executable).with_name("ray")
        env = {**os.environ, **RAY_ENV}
        with self._log.open("wb") as log:
            self.proc = subprocess.Popen(
                [str(ray), "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(self.port),
                 "--include-dashboard", "false", "--num-cpus", "2", "--object-store-memory", "100000000",
                 "--disable-usage-stats"],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def wait_ready(self, timeout_s: float = 120) -> None:
        """Return once the head says it started; raise :class:`BenchFailure` if it does not."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self._log.read_text(errors="replace")
            if "Ray runtime started" in text:
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        raise BenchFailure(f"the Ray head did not start; its output:\n{self._log.read_text(errors='replace')[-2000:]}")

    def stop(self) -> None:
        """End the head (SIGTERM: ``--block`` then stops its processes), then its stragglers."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)  # (its own session: start_new_session)
                self.proc.wait(timeout=10)


@contextlib.contextmanager
def ray_head(folder: Path) -> Iterator[RayHead]:
    """A started :class:`RayHead`, stopped when the block ends (also on error)."""
    head = RayHead(folder)
    try:
        head.wait_ready()
        yield head
    finally:
        head.stop()


def run_batch(folder: Path, tasks: int, turns: int, store: str, workers: int, concurrency: int,
              ray: RayHead | None, server_pid: int | None = None) -> dict[str, float]:
    """Run ``livecontext batch`` once in ``folder`` (see :func:`write_inputs`) and check its
    results file; wall and CPU seconds: ``batch_cpu`` (its process tree), ``ray_cpu`` (the Ray
    cluster's processes, on Ray), ``db_cpu`` (the processes under ``server_pid``, if given)."""
    out = folder / f"run-{time.monotonic_ns()}.results.jsonl"
    command = [str(Path(sys.executable).with_name("livecontext")), "batch", "agent.toml", "--tasks", "tasks.jsonl",
               "--store", store, "--out", str(out), "--concurrency", str(concurrency), "--workers", str(workers)]
    if workers > 1:
        assert ray is not None
        command += ["--ray", ray.address]
    roots = {"ray_cpu": ray.proc.pid if ray is not None and workers > 1 else None, "db_cpu": server_pid}
    samplers = {name: TreeCpu(pid) for name, pid in roots.items() if pid is not None and CAN_SAMPLE}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for sampler in samplers.values():
        sampler.start()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=3600,
                          env={**os.environ, **RAY_ENV})
    wall = time.perf_counter() - start
    sampled = {name: samplers[name].stop() if name in samplers else float("nan") for name in roots}
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise BenchFailure(f"batch --workers {workers} on {store} exited {done.returncode}: "
                           f"{(done.stderr.strip().splitlines() or ['(no output)'])[-1]}")
    check_results(out, tasks, turns)
    batch_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "batch_cpu": batch_cpu, **sampled}


class Stores:
    """A fresh store URL per run: a new SQLite file, or a new database of one PostgreSQL cluster."""

    def __init__(self, folder: Path, cluster: Cluster | None) -> None:
        self._folder = folder
        self._cluster = cluster
        self._made: list[str] = []

    def fresh(self, kind: str) -> str:
        """A new, empty store of ``kind`` (``sqlite`` or ``postgresql``)."""
        if kind == "sqlite":
            return f"sqlite:{self._folder / f'store-{time.monotonic_ns()}.db'}"
        assert self._cluster is not None
        name = self._cluster.new_database()
        self._made.append(name)
        return self._cluster.url(name)

    def server_pid(self, kind: str) -> int | None:
        """The PostgreSQL server's main process (its connections' processes are its children)."""
        if kind != "postgresql" or self._cluster is None:
            return None
        return int((self._cluster.folder / "data" / "postmaster.pid").read_text().split()[0])

    def drop_all(self) -> None:
        """Drop the databases made (a full run makes a few GB of WAL otherwise)."""
        for name in self._made:
            assert self._cluster is not None
            self._cluster.drop_database(name)
        self._made.clear()


def per_turn_ms(cpu_s: float, steps: int) -> str:
    return "n/a" if cpu_s != cpu_s else f"{cpu_s / steps * 1000:.2f} ms/turn"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=None, help="agents, one a task (default 2000; --quick 200)")
    parser.add_argument("--turns", type=int, default=5, help="inputs (model calls) a task (default 5)")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="each model call's delay (default 50)")
    parser.add_argument("--concurrency", type=int, default=200, help="tasks at once per worker (default 200)")
    parser.add_argument("--stores", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql")
    parser.add_argument("--rounds", type=int, default=None, help="pairs of 1w/2w runs (default 3; --quick 1)")
    parser.add_argument("--quick", action="store_true", help="200 tasks, 1 round: rougher figures")
    args = parser.parse_args()
    tasks = args.tasks if args.tasks is not None else (200 if args.quick else 2000)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    kinds = [k.strip() for k in args.stores.split(",") if k.strip()]
    unknown = sorted(set(kinds) - {"sqlite", "postgresql"})
    if unknown or not kinds:
        parser.error(f"--stores takes sqlite and/or postgresql, got {args.stores!r}")
    steps = tasks * args.turns
    try:
        with contextlib.ExitStack() as stack:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-scale-")))
            cluster = stack.enter_context(throwaway_cluster(fsync=True)) if "postgresql" in kinds else None
            stores = Stores(folder, cluster)
            stack.callback(stores.drop_all)
            work = write_inputs(folder / "work", tasks, args.turns, args.latency_ms)
            probe = write_inputs(folder / "probe", 2, args.turns, 0.0)
            started = time.perf_counter()
            head = stack.enter_context(ray_head(folder))
            print(f"Ray head at {head.address} started in {time.perf_counter() - started:.1f} s (not timed)",
                  flush=True)
            report_startup(probe, stores, kinds[0], args.turns, head)
            waves = -(-tasks // args.concurrency)
            for kind in kinds:
                runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
                for r in range(rounds):
                    for workers in ((1, 2) if r % 2 == 0 else (2, 1)):
                        got = run_batch(work, tasks, args.turns, stores.fresh(kind), workers, args.concurrency,
                                        head, stores.server_pid(kind))
                        runs[workers].append(got)
                        ray_cpu = "" if workers == 1 else f", Ray cluster {got['ray_cpu']:.1f} s"
                        ray_cpu += f", PostgreSQL server {got['db_cpu']:.1f} s" if kind == "postgresql" else ""
                        print(f"{kind:<10} round {r + 1} {workers}w  wall {got['wall']:6.2f} s  "
                              f"{steps / got['wall']:7.0f} turns/s  CPU: batch {got['batch_cpu']:.1f} s{ray_cpu}",
                              flush=True)
                    stores.drop_all()
                summarize(kind, runs, steps, tasks, args, waves)
    except BenchFailure as exc:
        print(f"bench_scale: {exc}", file=sys.stderr)
        sys.exit(1)


def report_startup(probe: Path, stores: Stores, kind: str, turns: int, head: RayHead) -> None:
    """Print the fixed cost of a batch in one process and on Ray (``probe``: 2 tasks, no model latency)."""
    one = run_batch(probe, 2, turns, stores.fresh(kind), 1, 2, None)["wall"]
    two = run_batch(probe, 2, turns, stores.fresh(kind), 2, 2, head)["wall"]
    print(f"fixed cost of a 2-task batch ({kind}): {one:.2f} s in one process, {two:.2f} s on Ray with 2 workers; "
          f"Ray start-up (joining, worker processes) ~{two - one:.2f} s, inside every 2-worker timing below",
          flush=True)


def summarize(kind: str, runs: dict[int, list[dict[str, float]]], steps: int, tasks: int,
              args: argparse.Namespace, waves: int) -> None:
    """Print a store's medians, the ratio against the target, and the CPU per turn."""
    med = {w: {m: statistics.median(run[m] for run in runs[w]) for m in ("wall", "batch_cpu", "ray_cpu", "db_cpu")}
           for w in (1, 2)}
    rate = {w: steps / med[w]["wall"] for w in (1, 2)}
    ratio = rate[2] / rate[1]
    print(f"\n{kind}: {tasks} agents x {args.turns} turns at {args.latency_ms:g} ms, concurrency "
          f"{args.concurrency} per worker, medians of {len(runs[1])} rounds:")
    for w in (1, 2):
        floor = -(-waves // w) * args.turns * args.latency_ms / 1000
        cpu = med[w]["batch_cpu"] + (med[w]["ray_cpu"] if w == 2 else 0.0)
        where = "batch process" if w == 1 else "batch driver + Ray cluster"
        print(f"  {w} worker{'s' if w > 1 else ' '}  wall {med[w]['wall']:6.2f} s (latency floor {floor:.2f} s)  "
              f"{rate[w]:7.0f} turns/s  CPU {cpu:.1f} s ({where}; {per_turn_ms(cpu, steps)})"
              + (f"; PostgreSQL server {per_turn_ms(med[w]['db_cpu'], steps)}" if kind == "postgresql" else ""))
    verdict = "meets" if ratio >= TARGET else "misses"
    print(f"  ratio 2w/1w {ratio:.2f}x: {verdict} the target (>= {TARGET}x)\n", flush=True)


if __name__ == "__main__":
    main()

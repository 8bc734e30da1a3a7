"""Bytes stored per agent step (issue 14, "Store each text once"), on SQLite and JSONL.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_storage_bytes.py            # under a minute
    .venv/bin/python benchmarks/bench_storage_bytes.py --steps 20 # rougher, faster

A step is what a shell-like agent does: the model says a sentence and calls ``bash`` with a
command; the tool returns plain text (so the runtime makes its RECENT and GIST). Its raw
text is the model's text plus the call's arguments plus the tool's output, in UTF-8 bytes.
Outputs come in three sizes (about 300 B, 1.5 kB and 12 kB) of grep- and test-like lines.

For each backend and size, a thread runs ``--steps`` steps and a second thread the same
input with no step; bytes per step is the difference of their stores' sizes divided by the
steps (SQLite: the file once its WAL is checkpointed; JSONL: every file of the store). No
snapshot is written (``snapshot_every`` is larger than the run). The target is at most
1.5x the raw text plus about 400 bytes.

It also prints, for JSONL, the bytes of each record kind per step (whole lines), which is
where the rest goes; then what writing and reading those records costs on SQLite with
fsync off (so that the disk does not hide the CPU): the records of each size's steps are
appended again to a new thread, one record per ``append`` as an agent's history does, until
``--appends`` records; then read back in one ``read``. It prints records per second (wall
time) and the CPU time per record of the whole process (its worker threads included).

Not a test: pytest does not collect it (its name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

from livecontext.actors import AgentSettings, spawn_agent  # noqa: E402
from livecontext.actors.apps import App, ToolOutcome, tool  # noqa: E402
from livecontext.protocol.agent import Idle, ProvideInput, RunUntilIdle  # noqa: E402
from livecontext.protocol.wire import make_converter  # noqa: E402
from livecontext.runtime import open_runtime  # noqa: E402
from livecontext.runtime.models import ScriptedModel  # noqa: E402
from livecontext.runtime.persistence import FsyncLevel, NewRecord, open_store  # noqa: E402
from livecontext.runtime.tokens import TokenCounter  # noqa: E402

SIZES = {"small": 300, "medium": 1_500, "large": 12_000}
"""Target output size of each step, in bytes."""
CONVERTER = make_converter()
COUNTER = TokenCounter()
WORDS = ("self", "return", "value", "config", "assert", "None", "import", "def", "items", "result",
         "path", "error", "count", "update", "test", "data", "for", "in", "if", "not")


def output_text(rng: random.Random, size: int) -> str:
    """Shell output of about ``size`` bytes: grep hits, then a test summary line."""
    lines: list[str] = []
    total = 0
    while total < size - 60:
        n = rng.randrange(1, 400)
        code = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 9)))
        line = f"src/pkg/mod_{rng.randrange(40)}.py:{n}:    {code}"
        lines.append(line)
        total += len(line) + 1
    lines.append(f"{rng.randrange(1, 9)} failed, {rng.randrange(20, 300)} passed in {rng.random() * 9:.2f}s")
    return "\n".join(lines)


class Shell(App):
    """One tool, ``bash``, returning the next prepared output as plain text."""

    name = "shell"

    def __init__(self, outputs: list[str] | None = None) -> None:
        self.outputs = outputs if outputs is not None else []

    def fresh(self) -> Shell:
        return Shell(self.outputs)

    @tool(idempotent=True)
    def bash(self, command: str) -> ToolOutcome:
        """Run a shell command.

        Args:
            command: The command line.
        """
        return ToolOutcome.ok(self.outputs.pop(0))


def steps_script(size: int, steps: int, seed: int) -> tuple[list[dict[str, object]], list[str], int]:
    """The model's turns, the tool's outputs, and the raw bytes of the steps."""
    rng = random.Random(seed)
    turns: list[dict[str, object]] = []
    outputs: list[str] = []
    raw = 0
    for k in range(steps):
        text = f"Step {k}: let me check where {rng.choice(WORDS)} is used before changing it."
        arguments = {"command": f"grep -rn '{rng.choice(WORDS)}' src/pkg | head -{rng.randrange(5, 80)}"}
        out = output_text(rng, size)
        turns.append({"text": text, "tool_calls": [{"name": "bash", "arguments": arguments}]})
        outputs.append(out)
        raw += len(text.encode()) + len(json.dumps(arguments).encode()) + len(out.encode())
    turns.append({"text": "Done: the change is safe."})
    return turns, outputs, raw


async def run_thread(url: str, thread_id: str, turns: list[dict[str, object]], outputs: list[str]) -> None:
    async with await open_store(url) as store:
        async with await store.open_thread(thread_id, owner="bench") as log, open_runtime() as rt:
            model = ScriptedModel.from_turns(turns)
            agent = await spawn_agent(
                rt, log, model, AgentSettings(thread_id, snapshot_every=100_000),
                converter=CONVERTER, counter=COUNTER, apps=[Shell(list(outputs))])
            client = rt.client("bench")
            await client.ask(agent.input, ProvideInput("Find every use of the helper and tell me if it is safe."))
            idle = await client.ask(agent.engine, RunUntilIdle(), timeout=None)
            assert isinstance(idle, Idle) and idle.reason == "no_input" and model.unused_turns() == (), idle
            await rt.aclose()


def store_bytes(path: Path) -> int:
    """A store's size: a SQLite file once its WAL is checkpointed, or a JSONL folder's files."""
    if path.is_file():
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and p.name != "lock")


def kinds_per_step(folder: Path, steps: int) -> dict[str, float]:
    """JSONL: bytes of each record kind's lines, per step."""
    sizes: collections.Counter[str] = collections.Counter()
    for line in (folder / "records.jsonl").read_bytes().splitlines(keepends=True):
        sizes[json.loads(line)["kind"]] += len(line)
    return {kind: total / steps for kind, total in sorted(sizes.items())}


async def measure(backend: str, size: int, steps: int, root: Path) -> tuple[float, float, dict[str, float]]:
    """``(raw bytes per step, stored bytes per step, JSONL bytes per kind per step)``."""
    turns, outputs, raw = steps_script(size, steps, seed=size)
    sizes = []
    for name, (t, o) in (("none", ([turns[-1]], [])), ("steps", (turns, outputs))):
        path = root / f"{backend}-{size}-{name}"
        url = f"sqlite:{path}" if backend == "sqlite" else f"jsonl:{path}"
        await run_thread(url, "t", t, o)
        sizes.append(store_bytes(path))
    kinds = kinds_per_step(root / f"{backend}-{size}-steps" / "t", steps) if backend == "jsonl" else {}
    return raw / steps, (sizes[1] - sizes[0]) / steps, kinds


async def stored_records(url: str) -> list[NewRecord]:
    """The records of thread ``t`` of a store, as new records to append elsewhere."""
    async with await open_store(url) as store:
        async with await store.open_reader("t") as reader:
            records = await reader.read(1)
    return [NewRecord(r.sender, r.sent_at, r.sent_mono_ns, r.kind, r.payload) for r in records]


async def time_appends(records: list[NewRecord], count: int, path: Path) -> tuple[float, float, float, float]:
    """Append ``records`` over and over, one per call, until ``count``, then read them back.

    Returns ``(appends per second, CPU us per append, records read per second, CPU us per
    record read)``, on SQLite with fsync off.
    """
    batch = [records[k % len(records)] for k in range(count)]
    async with await open_store(f"sqlite:{path}", fsync=FsyncLevel.OFF) as store:
        async with await store.open_thread("t", owner="bench") as log:
            wall, cpu = time.perf_counter(), time.process_time()
            for record in batch:
                await log.append([record])
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            read_wall, read_cpu = time.perf_counter(), time.process_time()
            back = await log.read(1)
            read_wall, read_cpu = time.perf_counter() - read_wall, time.process_time() - read_cpu
    assert [r.payload for r in back] == [r.payload for r in batch]
    return count / wall, cpu / count * 1e6, count / read_wall, read_cpu / count * 1e6


async def main(steps: int, appends: int) -> None:
    print(f"Bytes per step, {steps} shell-like steps per thread (target: 1.5x raw + ~400 B)")
    print(f"  {'backend':<8}{'output':<8}{'raw B':>8}{'stored B':>10}{'ratio':>7}{'target B':>10}  over raw")
    with tempfile.TemporaryDirectory() as tmp:
        breakdown = {}
        for backend in ("sqlite", "jsonl"):
            for label, size in SIZES.items():
                raw, stored, kinds = await measure(backend, size, steps, Path(tmp))
                target = 1.5 * raw + 400
                mark = "ok" if stored <= target else "OVER"
                print(f"  {backend:<8}{label:<8}{raw:>8.0f}{stored:>10.0f}{stored / raw:>7.2f}{target:>10.0f}"
                      f"  {stored - raw:>+6.0f} {mark}")
                if kinds:
                    breakdown[label] = kinds
        print("JSONL bytes per step by record kind (whole lines)")
        for label, kinds in breakdown.items():
            print(f"  {label:<8}" + "  ".join(f"{k} {v:.0f}" for k, v in kinds.items()))
        print(f"SQLite, fsync off: {appends} records appended one per call, then read back in one call")
        print(f"  {'output':<8}{'B/record':>9}{'appends/s':>11}{'CPU us':>8}{'reads/s':>10}{'CPU us':>8}")
        for label in SIZES:
            records = await stored_records(f"sqlite:{Path(tmp) / f'sqlite-{SIZES[label]}-steps'}")
            mean = sum(len(r.payload.encode()) for r in records) / len(records)
            rate, cpu, read_rate, read_cpu = await time_appends(records, appends, Path(tmp) / f"timing-{label}")
            print(f"  {label:<8}{mean:>9.0f}{rate:>11,.0f}{cpu:>8.0f}{read_rate:>10,.0f}{read_cpu:>8.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="steps per thread (default 60)")
    parser.add_argument("--appends", type=int, default=3000, help="records appended in the timing (default 3000)")
    args = parser.parse_args()
    trio.run(main, args.steps, args.appends)

"""Durability benchmarks (issue 4, "Show"): the cost of a durable step, storage, opening.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_durability.py           # about two minutes
    .venv/bin/python benchmarks/bench_durability.py --quick   # 10,000 records to open, not 100,000

It prints, in one run, on an SQLite store with the default fsync level (``FULL`` unless
``$LIVECONTEXT_FSYNC`` says otherwise):

1. Time per durable step as the history grows (10, 1,000 and 10,000 existing entries): a
   step through the history store alone (``AppendInput`` / ``AppendOutput``: one committed
   record each) and a full engine step (a zero-delay scripted model; a turn is an input step
   and a model step; each thread takes :data:`ENGINE_WINDOW` steps, so that "10 entries"
   means 10 to 60). The big histories are built by appending records in batches; the
   history store then opens them as on a resume (from a snapshot).
2. Bytes stored per step at each size: the database file's growth (after a WAL checkpoint)
   divided by the steps, and the snapshot written every ``snapshot_every`` records,
   amortized: as the history store writes it, after ~1,000 more records (only the blocks of
   entries that changed: see ``actors/history/_blocks.py``), and the first, full one.
3. Time to open a thread of 100,000 records (``load_state``) without a snapshot (replay
   everything) and with one (the latest multiple of 1,000: replay the last ≤ 1,000).
4. LangGraph's figures from the issue next to ours.
5. The targets of issue 16, each with PASS or FAIL: opening a 100,000-record thread in at
   most 0.2 s; an incremental snapshot (dump + write) at 100,000 entries within 2x of one at
   1,000.

Not a test: pytest does not collect it (its name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

from livecontext.actors import AgentSettings, spawn_agent  # noqa: E402
from livecontext.actors.history import HistoryState, HistoryStore, load_state, write_snapshot  # noqa: E402
from livecontext.actors.history._lod import input_content, output_content  # noqa: E402
from livecontext.protocol import (  # noqa: E402
    ActorId,
    AppendInput,
    AppendOutput,
    EntryAppended,
    Idle,
    Message,
    ModelInputEntry,
    ModelOutputEntry,
    ProvideInput,
    Retention,
    RunUntilIdle,
    SystemPromptSet,
    Tail,
    make_converter,
)
from livecontext.runtime import open_runtime  # noqa: E402
from livecontext.runtime.models import ScriptedModel  # noqa: E402
from livecontext.runtime.persistence import NewRecord, ThreadReader, open_store  # noqa: E402
from livecontext.runtime._gc import gc_tuned  # noqa: E402
from livecontext.runtime.persistence.base._fsync import resolve_fsync  # noqa: E402
from livecontext.runtime.tokens import TokenCounter  # noqa: E402

LANGGRAPH_BYTES_1000 = 169e6
"""The issue: LangGraph + SqliteSaver stored 169 MB for one 1,000-message thread."""
LANGGRAPH_MS_PER_STEP_1000 = 27.0
"""The issue: LangGraph took 27 ms per step at 1,000 messages."""
SIZES = (10, 1_000, 10_000)
STEPS = 200
"""Durable steps timed per pass at each size (a window that holds no snapshot point)."""
PASSES = 3
"""Timing passes per size, alternating the history store and the engine; medians over all."""
ENGINE_WINDOW = 50
"""Engine steps timed on one thread, each pass's :data:`STEPS` spread over fresh threads of
the size measured: the context rendered at every model step grows with the history until
it fills the budget (about 185 of these entries at 8,000 tokens), so timing all the steps on
one thread would measure the "10 entries" row at up to 600."""
SNAPSHOT_EVERY = 1000
"""AgentSettings' default."""
BATCH = 1000

CONVERTER = make_converter()
COUNTER = TokenCounter()
AUTHOR = ActorId("engine", "bench")
SENDER = "engine/bench"


# -- building histories ------------------------------------------------------------------------


def user_text(k: int) -> str:
    return (f"Turn {k}: please record in your notebook that step {k} of the migration is done, "
            f"then tell me what is left. We moved table t{k} and checked its row counts.")


def answer_text(k: int) -> str:
    return (f"Step {k} is recorded. What is left: verify the indexes of t{k + 1}, switch the read "
            f"traffic, and watch the error rates for an hour; I will keep the notebook up to date.")


def entry_payloads(n: int, first: int = 1) -> list[Message]:
    """``n`` entries ``e<first>..``: alternately a user input and a model answer."""
    now = dt.datetime.now(dt.timezone.utc)
    common: dict[str, Any] = {"revision": 1, "author": AUTHOR, "created_at": now, "retention": Retention.COMPRESSIBLE}
    out: list[Message] = []
    for i in range(first, first + n):
        k = i // 2
        if i % 2:
            text = user_text(k)
            entry: Any = ModelInputEntry(id=f"e{i}", content=input_content(text, (), COUNTER), text=text, **common)
        else:
            text = answer_text(k)
            entry = ModelOutputEntry(id=f"e{i}", content=output_content(text, (), COUNTER), model="scripted", **common)
        out.append(EntryAppended(entry))
    return out


def new_record(payload: Message) -> NewRecord:
    text = json.dumps(CONVERTER.dump_message(payload), separators=(",", ":"), ensure_ascii=False)
    return NewRecord(SENDER, dt.datetime.now(dt.timezone.utc), time.monotonic_ns(), type(payload).__name__, text)


async def build_thread(store: Any, thread_id: str, entries: int, *, snapshot: bool) -> HistoryState:
    """A thread of a system prompt and ``entries`` entries, appended in batches.

    With ``snapshot``, a snapshot is written at every multiple of :data:`SNAPSHOT_EVERY` before
    the end (as
    the history store would have, the same way: each writes the blocks changed since the one
    before), so opening it replays only the tail.
    """
    payloads: list[Message] = [SystemPromptSet("You are a helpful agent.")] + entry_payloads(entries)
    state = HistoryState(thread_id)
    async with await store.open_thread(thread_id, owner="bench") as log:
        for start in range(0, len(payloads), BATCH):
            chunk = payloads[start : start + BATCH]
            stored = await log.append([new_record(p) for p in chunk])
            for rec, p in zip(stored, chunk, strict=True):
                state.apply(rec.seq, p)
                if snapshot and rec.seq % SNAPSHOT_EVERY == 0 and rec.seq < len(payloads):
                    await write_snapshot(log, CONVERTER, state)
    return state


def db_bytes(path: Path) -> int:
    """The database's size once its WAL is checkpointed into it."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


# -- 1 and 2: steps ----------------------------------------------------------------------------------


async def history_steps(url: str, thread_id: str, steps: int) -> list[float]:
    """Seconds per history-store commit: alternately AppendInput and AppendOutput."""
    async with await open_store(url) as store:
        async with await store.open_thread(thread_id, owner="bench") as log, open_runtime() as rt:
            ref = await rt.spawn(lambda: HistoryStore(thread_id, log, CONVERTER, COUNTER, snapshot_every=SNAPSHOT_EVERY),
                                 ActorId("history", thread_id))
            client = rt.client("bench")
            times = []
            for k in range(steps):
                msg: Message = AppendInput(user_text(k)) if k % 2 == 0 else AppendOutput(answer_text(k), model="bench")
                t0 = time.perf_counter()
                tail = await client.ask(ref, msg)
                times.append(time.perf_counter() - t0)
                assert isinstance(tail, Tail)
            await rt.aclose()
    return times


async def engine_steps(url: str, thread_id: str, turns: int, outputs_before: int) -> list[float]:
    """Seconds per engine step over full turns (input, then model answer) with a scripted model."""
    model = ScriptedModel.from_turns([{"text": answer_text(k)} for k in range(outputs_before + turns + 1)])
    async with await open_store(url) as store:
        async with await store.open_thread(thread_id, owner="bench") as log, open_runtime() as rt:
            agent = await spawn_agent(rt, log, model, AgentSettings(thread_id, snapshot_every=SNAPSHOT_EVERY),
                                      converter=CONVERTER, counter=COUNTER)
            client = rt.client("bench")
            times = []
            for k in range(turns):
                await client.ask(agent.input, ProvideInput(user_text(k)))
                t0 = time.perf_counter()
                idle = await client.ask(agent.engine, RunUntilIdle(), timeout=None)
                assert isinstance(idle, Idle) and idle.steps == 2, idle
                times.extend([(time.perf_counter() - t0) / 2] * 2)
            await rt.aclose()
    return times


async def snapshot_cost(url: str, thread_id: str, *, full: bool = False) -> tuple[float, int]:
    """Seconds to dump and write one snapshot of the thread's state as the history store does
    (after ~1,000 more records than the last one; ``full``: as if it were the first), and the
    bytes it wrote (its head and new parts)."""
    async with await open_store(url) as store:
        async with await store.open_thread(thread_id, owner="bench") as log:
            state = await load_state(log, CONVERTER, thread_id)
            if full:
                state.changed |= set(state.parts)
                state.parts.clear()
            draft = state.snapshot()
            t0 = time.perf_counter()
            snap = await write_snapshot(log, CONVERTER, state, draft)
            return time.perf_counter() - t0, len(snap.state.encode()) + draft.new_bytes


async def grown_snapshot_costs(url: str, thread_id: str, rounds: int = 3) -> tuple[list[float], list[int]]:
    """Seconds and bytes of the snapshot the history store writes after :data:`SNAPSHOT_EVERY`
    more records, ``rounds`` times over (each round appends them first, untimed)."""
    times, sizes = [], []
    async with await open_store(url) as store:
        async with await store.open_thread(thread_id, owner="bench") as log:
            state = await load_state(log, CONVERTER, thread_id)
            for _ in range(rounds):
                payloads = entry_payloads(SNAPSHOT_EVERY, state.next_entry)
                stored = await log.append([new_record(p) for p in payloads])
                for rec, p in zip(stored, payloads, strict=True):
                    state.apply(rec.seq, p)
                draft = state.snapshot()
                t0 = time.perf_counter()
                snap = await write_snapshot(log, CONVERTER, state, draft)
                times.append(time.perf_counter() - t0)
                sizes.append(len(snap.state.encode()) + draft.new_bytes)
    return times, sizes


def ms(xs: Sequence[float], how: str = "median") -> float:
    if how == "median":
        return statistics.median(xs) * 1e3
    if how == "p99":
        return sorted(xs)[int(len(xs) * 0.99) - 1] * 1e3
    return statistics.fmean(xs) * 1e3


async def bench_steps(tmp: Path) -> dict[int, dict[str, float]]:
    print(f"== 1-2. durable steps on SQLite as the history grows ({PASSES} x {STEPS} steps timed at each size) ==")
    out: dict[int, dict[str, float]] = {}
    for n in SIZES:
        path = tmp / f"steps-{n}.db"
        url = f"sqlite:{path}"
        async with await open_store(url) as store:
            built = await build_thread(store, "h", n, snapshot=True)
        h: list[float] = []
        e: list[float] = []
        grown_h = grown_e = 0
        for p in range(PASSES):
            engine_threads = [f"e{p}-{k}" for k in range(STEPS // ENGINE_WINDOW)]
            async with await open_store(url) as store:
                for thread_id in engine_threads:
                    await build_thread(store, thread_id, n, snapshot=True)
            before = db_bytes(path)
            h += await history_steps(url, "h", STEPS)
            after_h = db_bytes(path)
            for thread_id in engine_threads:
                e += await engine_steps(url, thread_id, ENGINE_WINDOW // 2, built.model_outputs)
            grown_h += after_h - before
            grown_e += db_bytes(path) - after_h
        snap_s, snap_bytes = await snapshot_cost(url, "h")
        out[n] = {"h_med": ms(h), "h_mean": ms(h, "mean"), "h_p99": ms(h, "p99"),
                  "e_med": ms(e), "e_mean": ms(e, "mean"),
                  "bytes_h": grown_h / len(h), "bytes_e": grown_e / len(e),
                  "snap_ms": snap_s * 1e3, "snap_bytes": snap_bytes}
        print(f"  (built and measured {n:,} entries)", flush=True)
    first, last = out[SIZES[0]], out[SIZES[-1]]

    def row(label: str, key: str, fmt: str, ratio: bool = True) -> None:
        cells = "".join(f"{format(out[n][key], fmt):>14}" for n in SIZES)
        tail = f"{last[key] / first[key]:>10.2f}" if ratio and first[key] else ""
        print(f"  {label:<46}{cells}{tail}")

    print(f"  {'existing entries':<46}" + "".join(f"{n:>14,}" for n in SIZES) + f"{'10k / 10':>10}")
    row("history-store step, ms (median)", "h_med", ".3f")
    row("history-store step, ms (mean)", "h_mean", ".3f")
    row("history-store step, ms (p99)", "h_p99", ".3f")
    row("engine step (full turn / 2), ms (median)", "e_med", ".3f")
    row("engine step, ms (mean)", "e_mean", ".3f")
    row("bytes per step: file growth, history store", "bytes_h", ",.0f")
    row("bytes per step: file growth, engine", "bytes_e", ",.0f")
    row("snapshot: size, bytes", "snap_bytes", ",.0f")
    row("snapshot: dump + write, ms", "snap_ms", ".1f")
    for n in SIZES:
        out[n]["snap_amortized_ms"] = out[n]["snap_ms"] / SNAPSHOT_EVERY
        out[n]["snap_amortized_bytes"] = out[n]["snap_bytes"] / SNAPSHOT_EVERY
    row(f"snapshot amortized per step (1 per {SNAPSHOT_EVERY:,}), ms", "snap_amortized_ms", ".3f")
    row("snapshot amortized per step, bytes", "snap_amortized_bytes", ",.0f")
    print("  (a snapshot writes its head and the blocks of entries changed since the one before: here the")
    print("   600 timed steps' (at 10 entries, no snapshot before: the whole state). Every store keeps the")
    print("   newest two per thread and the parts they use. The timed windows hold no snapshot point; the")
    print("   amortized rows add the writing back)")
    return out


# -- 3: opening ----------------------------------------------------------------------------------------


class _NoSnapshots(ThreadReader):
    """A reader that hides the thread's snapshots (opening replays every record)."""

    def __init__(self, inner: ThreadReader) -> None:
        self._inner = inner

    @property
    def thread_id(self) -> str:
        return self._inner.thread_id

    async def last_seq(self) -> int:
        return await self._inner.last_seq()

    async def read(self, from_seq: int = 1, to_seq: int | None = None) -> list[Any]:
        return await self._inner.read(from_seq, to_seq)

    async def latest_snapshot(self, at_or_before: int | None = None) -> None:
        return None

    async def aclose(self) -> None:
        pass


async def bench_open(tmp: Path, records: int) -> dict[str, float]:
    print(f"\n== 3. opening a thread of {records:,} records (load_state) ==")
    path = tmp / "open.db"
    url = f"sqlite:{path}"
    t0 = time.perf_counter()
    async with await open_store(url) as store:
        state = await build_thread(store, "big", records - 1, snapshot=True)
    print(f"  (built in {time.perf_counter() - t0:.1f} s; {path.stat().st_size / 1e6:,.1f} MB with one snapshot)")
    out: dict[str, float] = {}
    async with await open_store(url) as store:
        async with await store.open_reader("big") as reader:
            snap = await reader.latest_snapshot()
            assert snap is not None
            for label, source, runs in (("without", _NoSnapshots(reader), 1), ("with", reader, 3)):
                walls, cpus = [], []
                for _ in range(runs):
                    t0, c0 = time.perf_counter(), time.process_time()
                    loaded = await load_state(source, CONVERTER, "big")
                    walls.append(time.perf_counter() - t0)
                    cpus.append(time.process_time() - c0)
                    assert loaded.seq == state.seq and len(loaded.entries) == len(state.entries)
                out[label], out[f"{label}_cpu"] = statistics.median(walls), statistics.median(cpus)
            with gc_tuned():  # (a history store opens its thread in a runtime, which tunes the collector)
                walls = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    await load_state(reader, CONVERTER, "big")
                    walls.append(time.perf_counter() - t0)
                out["in_runtime"] = statistics.median(walls)
            t0 = time.perf_counter()
            await reader.read(1)
            out["read_only"] = time.perf_counter() - t0
    out["snap_bytes"] = len(snap.state.encode())
    out["parts"] = len(snap.parts)
    out["tail"] = state.seq - snap.seq
    print(f"  without a snapshot (replay {state.seq:,} records):        {out['without']:>8.2f} s")
    print(f"  with the snapshot at seq {snap.seq:,} (replay {out['tail']:,}):  {out['with']:>8.3f} s"
          f"   ({out['without'] / out['with']:.1f}x faster; median of 3; CPU {out['with_cpu']:.3f} s)")
    print(f"  the same with the collector tuned as in a runtime:    {out['in_runtime']:>8.3f} s   (median of 3; "
          "how a history store opens its thread)")
    print(f"  of which reading the {state.seq:,} records alone takes:      {out['read_only']:>8.2f} s")
    print(f"  the snapshot: a head of {out['snap_bytes'] / 1e3:,.1f} kB and {int(out['parts']):,} parts (blocks of entries:"
          " their index is read, their texts inflated on first use)")
    return out


async def bench_snapshots(tmp: Path, big: int) -> dict[int, dict[str, float]]:
    """Section 5: the snapshot the history store writes after 1,000 more records, at 1,000
    entries and at ``big`` (the thread :func:`bench_open` built), and the first, full one."""
    print(f"\n== 5. snapshots as the history store writes them (every {SNAPSHOT_EVERY:,} records) ==")
    async with await open_store(f"sqlite:{tmp / 'small.db'}") as store:
        await build_thread(store, "big", 1_000 - 1, snapshot=True)
    out: dict[int, dict[str, float]] = {}
    for n, path in ((1_000, tmp / "small.db"), (big, tmp / "open.db")):
        url = f"sqlite:{path}"
        times, sizes = await grown_snapshot_costs(url, "big")
        full_s, full_bytes = await snapshot_cost(url, "big", full=True)
        out[n] = {"ms": statistics.median(times) * 1e3, "bytes": statistics.median(sizes),
                  "full_ms": full_s * 1e3, "full_bytes": full_bytes}
    print(f"  {'entries before the 1,000 new records':<46}" + "".join(f"{n:>14,}" for n in out) + f"{'ratio':>10}")
    first, last = out[1_000], out[big]
    for label, key, fmt in (("after 1,000 more records: dump + write, ms", "ms", ".1f"),
                            ("after 1,000 more records: bytes written", "bytes", ",.0f"),
                            ("the first (every block): dump + write, ms", "full_ms", ".1f"),
                            ("the first (every block): bytes written", "full_bytes", ",.0f")):
        print(f"  {label:<46}" + "".join(f"{format(out[n][key], fmt):>14}" for n in out)
              + f"{last[key] / first[key]:>10.2f}")
    print("  (medians of 3 rounds; each round appends 1,000 records, untimed, then writes the snapshot)")
    return out


ENGINE_STEP_TARGET = 1.2
"""Issue 16: the engine step at 10,000 entries costs at most this many times the step at 10."""


def engine_step_line(steps: dict[int, dict[str, float]]) -> str:
    """The summary line of the engine step's growth, with the target and whether it is met."""
    flat = steps[10_000]["e_med"] / steps[10]["e_med"]
    verdict = "PASS" if flat <= ENGINE_STEP_TARGET else "FAIL"
    return (f"engine step, 10,000 vs 10 entries: {flat:.2f}x (target <= {ENGINE_STEP_TARGET}x) {verdict} "
            f"(median); history-store step: {steps[10_000]['h_med'] / steps[10]['h_med']:.2f}x")


async def main(quick: bool, only: str | None) -> None:
    level = resolve_fsync(None)
    print(f"SQLite, fsync {level.value} (${'LIVECONTEXT_FSYNC'}: {os.environ.get('LIVECONTEXT_FSYNC') or 'unset'}), "
          f"snapshot every {SNAPSHOT_EVERY:,} records, Python {sys.version.split()[0]}\n")
    with tempfile.TemporaryDirectory(prefix="lc-durability-") as name:
        tmp = Path(name)
        steps = await bench_steps(tmp)
        if only == "steps":
            print(f"\n{engine_step_line(steps)}")
            return
        big = 10_000 if quick else 100_000
        opened = await bench_open(tmp, big)
        snaps = await bench_snapshots(tmp, big)
        async with await open_store(f"sqlite:{tmp / 'lg.db'}") as store:
            await build_thread(store, "m", 1000, snapshot=True)
        ours_1000 = db_bytes(tmp / "lg.db")
    print("\n== 4. next to LangGraph (SqliteSaver), the issue's figures ==")
    print(f"  {'':<40}{'LangGraph':>14}{'livecontext':>14}{'ratio':>10}")
    print(f"  {'bytes stored, 1,000-message thread':<40}{LANGGRAPH_BYTES_1000 / 1e6:>12.0f}MB"
          f"{ours_1000 / 1e6:>12.2f}MB{LANGGRAPH_BYTES_1000 / ours_1000:>9.0f}x")
    ours_ms = steps[1_000]["e_med"]
    print(f"  {'ms per step at 1,000 messages (median)':<40}{LANGGRAPH_MS_PER_STEP_1000:>14.1f}{ours_ms:>14.2f}"
          f"{LANGGRAPH_MS_PER_STEP_1000 / ours_ms:>9.1f}x")
    print(f"\n{engine_step_line(steps)}")
    print(f"opening {int(opened['tail']):,}-record tail + snapshot vs full replay: "
          f"{opened['with']:.2f} s vs {opened['without']:.2f} s")
    print("\n== targets (issue 16) ==")
    ratio = snaps[big]["ms"] / snaps[1_000]["ms"]
    flat = steps[10_000]["e_med"] / steps[10]["e_med"]
    # (judged as a history store opens a thread: in a runtime, whose collector thresholds are
    # raised; with the interpreter's defaults, collections of the 100,000 index objects add ~40%)
    for ok, text in ((opened["in_runtime"] <= 0.2, f"opening a {big:,}-record thread in a runtime: "
                                                   f"{opened['in_runtime']:.3f} s ({opened['with']:.3f} s with the "
                                                   "interpreter's collector thresholds) (target <= 0.2 s)"),
                     (flat <= ENGINE_STEP_TARGET, f"durable engine step at 10,000 entries vs at 10: {flat:.2f}x "
                                                  f"(target <= {ENGINE_STEP_TARGET}x)"),
                     (ratio <= 2.0, f"snapshot after 1,000 more records at {big:,} entries vs at 1,000: "
                                    f"{snaps[big]['ms']:.1f} vs {snaps[1_000]['ms']:.1f} ms = {ratio:.2f}x (target <= 2x)")):
        print(f"  {'PASS' if ok else 'FAIL'}  {text}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="open 10,000 records instead of 100,000")
    parser.add_argument("--only", choices=("steps",), help="run part 1-2 (the steps) alone")
    args = parser.parse_args()
    trio.run(main, args.quick, args.only)

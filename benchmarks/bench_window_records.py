"""Payload bytes of a thread's records by kind, for an app whose window grows with each step.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_window_records.py              # 100 tool calls
    .venv/bin/python benchmarks/bench_window_records.py --calls 20   # smaller

The thread has the test app ``tests.support.inventory:Inventory``, whose window lists every
item stocked and whose state text holds them all again: the model stocks one item per call
(``--calls`` of them, then a last answer), so that the thread has about three records per
call (the output, the tool started, its result) and one :class:`AppWindowsRecorded` per
model call. It prints the payload bytes (UTF-8 JSON, as the store is given them) of each
record kind, and the share of the windows' records in them: what recording the windows
costs the log. No snapshot is written (``snapshot_every`` is larger than the run).

Not a test: pytest does not collect it (its name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

from livecontext.actors import AgentSettings, spawn_agent  # noqa: E402
from livecontext.protocol.agent import Idle, ProvideInput, RunUntilIdle  # noqa: E402
from livecontext.protocol.wire import make_converter  # noqa: E402
from livecontext.runtime import open_runtime  # noqa: E402
from livecontext.runtime.models import ScriptedModel  # noqa: E402
from livecontext.runtime.persistence import open_store  # noqa: E402
from livecontext.runtime.tokens import TokenCounter  # noqa: E402
from tests.support.inventory import Inventory  # noqa: E402

WINDOW_KINDS = frozenset({"AppWindowsRecorded", "AppWindowsChanged"})
"""The record kinds that hold the apps' windows."""


async def payload_bytes(calls: int, url: str = "memory:") -> dict[str, tuple[int, int]]:
    """``{kind: (records, payload bytes)}`` of a thread that stocks ``calls`` items."""
    turns: list[dict[str, object]] = [
        {"text": f"Stocking item {k}.", "tool_calls": [{"name": "stock", "arguments": json.dumps({"item": f"crate-{k:03d}"})}]}
        for k in range(calls)]
    turns.append({"text": "Everything is on the shelves."})
    sizes: dict[str, tuple[int, int]] = {}
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="bench") as log, open_runtime() as rt:
            model = ScriptedModel.from_turns(turns)
            agent = await spawn_agent(rt, log, model, AgentSettings("t", snapshot_every=100_000),
                                      converter=make_converter(), counter=TokenCounter(),
                                      apps=[Inventory("north")])
            client = rt.client("bench")
            await client.ask(agent.input, ProvideInput("Stock the crates one by one."))
            idle = await client.ask(agent.engine, RunUntilIdle(), timeout=None)
            assert isinstance(idle, Idle) and model.unused_turns() == (), idle
            await rt.aclose()
        async with await store.open_reader("t") as reader:
            records = await reader.read(1)
    counts: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    for r in records:
        counts[r.kind] += 1
        total[r.kind] += len(r.payload.encode())
    for kind in sorted(total, key=total.__getitem__, reverse=True):
        sizes[kind] = (counts[kind], total[kind])
    return sizes


def report(sizes: dict[str, tuple[int, int]]) -> str:
    """The table the script prints, ending with the windows' share of the payload."""
    everything = sum(b for _, b in sizes.values())
    windows = sum(b for kind, (_, b) in sizes.items() if kind in WINDOW_KINDS)
    lines = [f"{kind:<24} {n:>5} records {b:>9,} bytes" for kind, (n, b) in sizes.items()]
    lines.append(f"{'all':<24} {sum(n for n, _ in sizes.values()):>5} records {everything:>9,} bytes")
    lines.append(f"windows: {windows:,} of {everything:,} payload bytes ({windows / everything:.1%})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="tool calls of the thread (default 100)")
    args = parser.parse_args()
    print(report(trio.run(payload_bytes, args.calls)))


if __name__ == "__main__":
    main()

"""Long threads to trace, written by a real agent with a scripted model (offline, seeded by
nothing: the same records every time but for their times).

``make_long_thread(store_url)`` writes a thread of about 20,000 records through the history
store, engine, app host, a recap maintainer that folds as the history fills its budget and
two analyzers that post notifications: the trace's benchmark and the trace page's browser
test read it.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import trio

import livecontext
from livecontext.actors.analyzers import AnalyzerSettings
from livecontext.actors.history import HistoryLimits
from livecontext.actors.recap import RecapSettings
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import FsyncLevel, NewRecord, open_store

LONG_THREAD = "long"
TURNS_PER_INPUT = 4
"""Per input: a notebook edit, a call of a tool that does not exist (it fails; every third
input calls it twice, and the failures analyzer speaks up), another notebook edit, then an
answer."""


def long_turns(inputs: int) -> list[dict[str, Any]]:
    """The scripted model's turns for ``inputs`` inputs (see :data:`TURNS_PER_INPUT`)."""
    turns: list[dict[str, Any]] = []
    note = ""
    for i in range(inputs):
        for step in range(TURNS_PER_INPUT - 1):
            n = len(turns)
            if step == 1:  # every third input asks twice: two failures in a row
                calls = [{"name": "weather", "arguments": {"day": i % 7 + 1}}] * (2 if i % 3 == 0 else 1)
                turns.append({"text": f"Checking the weather for day {i % 7 + 1}.", "tool_calls": calls})
                continue
            new = f"# plan {i}\n- step {n}: " + " ".join(f"w{(n * 13 + k) % 89}" for k in range(12))
            turns.append({"text": f"Step {n} of input {i}: writing it down.",
                          "tool_calls": [{"name": "notebook_replace", "arguments": {"old_text": note, "new_text": new}}]})
            note = new
        turns.append({"text": f"Input {i} is done: the notebook holds plan {i}."})
    return turns


async def write_long_thread(store_url: str, records: int = 20_000, *, thread: str = LONG_THREAD) -> int:
    """Run an agent in a new thread until its log holds at least ``records`` records, then
    copy them to thread ``thread`` of ``store_url`` (a file store: ``sqlite:`` or ``jsonl:``);
    return how many there are.

    The agent writes to a ``memory:`` store, and the copy is appended in batches with fsync
    off: the records are the history store's own, twice as fast to make as through a file
    store appended one record at a time.
    """
    inputs = records // 10 + 8  # (an input takes about 12 records: more turns than needed)
    model = ScriptedModel.from_turns(long_turns(inputs), name="long")
    scratch = await open_store("memory:")
    async with scratch:
        async with livecontext.open_agent(
                model=model, store=scratch, thread=thread, budget=1500, snapshot_every=0,
                limits=HistoryLimits(max_entries=24, soft=0.6, hard=0.8, truncate=1.0),
                recap=RecapSettings(window=4, batch=4, max_summary_chars=600),
                analyzers=[AnalyzerSettings("failures", threshold=2, window=8)]) as agent:
            seq, n = 0, 0
            while seq < records and n < inputs:
                await agent.send(f"Input {n}: plan the next leg of the trip and keep it in the notebook.")
                n += 1
                async with await scratch.open_reader(thread) as reader:
                    seq = await reader.last_seq()
        async with await scratch.open_reader(thread) as reader:
            written = await reader.read(1)
    store = await open_store(store_url, fsync=FsyncLevel.OFF)
    async with store, await store.open_thread(thread, owner="trace_threads") as log:
        for start in range(0, len(written), 2000):
            await log.append([NewRecord(r.sender, r.sent_at, r.sent_mono_ns, r.kind, r.payload)
                              for r in written[start:start + 2000]])
    return len(written)


def make_long_thread(store_url: str, records: int = 20_000, *, thread: str = LONG_THREAD) -> int:
    """:func:`write_long_thread`, from synchronous code or from inside a Trio test (it runs in
    a thread of its own, with its own Trio loop); returns the thread's record count."""
    result: list[int] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(trio.run(functools.partial(write_long_thread, store_url, records, thread=thread)))
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            errors.append(exc)

    worker = threading.Thread(target=run, name="make_long_thread")
    worker.start()
    worker.join()
    if errors:
        raise errors[0]
    return result[0]

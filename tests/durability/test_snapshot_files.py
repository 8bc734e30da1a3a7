"""Snapshots on disk: JSONL keeps at most two per thread and no part they do not use, and a
process killed (SIGKILL) while writing one leaves a thread that opens as its records say."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from livecontext.actors.history import HistoryState, load_state, write_snapshot
from livecontext.actors.history._blocks import BLOCK
from livecontext.protocol.context import HistoryEdited
from livecontext.protocol.wire import make_converter
from livecontext.runtime.persistence import open_store

from tests.actors.history.test_snapshot_blocks import _Thread

from tests.support.command import cli_env

CONVERTER = make_converter()

_WRITER = """
import datetime as dt, json, sys, trio
from livecontext.actors.history import HistoryState, write_snapshot
from livecontext.protocol.history import ModelInputEntry, Retention
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.records import EntryAppended
from livecontext.protocol.wire import make_converter
from livecontext.runtime.persistence import NewRecord, open_store
from livecontext.runtime.tokens import TokenCounter

CONVERTER, COUNTER = make_converter(), TokenCounter()
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)

async def main(url):
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="writer") as log:
            from livecontext.actors.history import load_state
            state = await load_state(log, CONVERTER, "t")
            for round in range(10**6):
                payloads = []
                for _ in range(150):
                    n = state.next_entry + len(payloads)
                    text = f"entry {n}: " + "x" * (n % 300)
                    payloads.append(EntryAppended(ModelInputEntry(
                        id=f"e{n}", revision=1, author=ActorId("engine", "t"), created_at=NOW,
                        retention=Retention.COMPRESSIBLE, content=COUNTER.content(text, text, text), text=text)))
                stored = await log.append([NewRecord("engine/t", NOW, 0, "EntryAppended",
                                                     json.dumps(CONVERTER.dump_message(p))) for p in payloads])
                for rec, p in zip(stored, payloads):
                    state.apply(rec.seq, p)
                await write_snapshot(log, CONVERTER, state)
                print(round, flush=True)

trio.run(main, sys.argv[1])
"""


def _snapshot_files(thread: Path) -> list[str]:
    return sorted(p.name for p in thread.iterdir() if p.name.startswith("snapshot-"))


def _unused_parts(thread: Path) -> set[str]:
    used = set()
    for name in _snapshot_files(thread):
        used.update(json.loads((thread / name).read_text()).get("parts", []))
    return {p.name for p in (thread / "parts").iterdir()} - used


async def _folded_from_records(url: str) -> tuple[HistoryState, HistoryState]:
    """The thread opened for writing (repairs done) from its snapshot, and folded from every record."""
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="test") as log:
            opened = await load_state(log, CONVERTER, "t")
            records = await log.read(1)
    folded = HistoryState.replay("t", [(r.seq, CONVERTER.load_message(json.loads(r.payload))) for r in records])
    return opened, folded


async def test_a_jsonl_thread_keeps_two_snapshots_and_only_the_parts_they_use(tmp_path: Path) -> None:
    async with await open_store(f"jsonl:{tmp_path}") as store:
        async with await store.open_thread("t", owner="test") as log:
            thread = _Thread(log)
            for _ in range(6):
                for _ in range(BLOCK // 2):
                    await thread.append()
                await write_snapshot(log, CONVERTER, thread.state)
                assert len(_snapshot_files(tmp_path / "t")) <= 2
                assert _unused_parts(tmp_path / "t") == set()
            await thread.commit(HistoryEdited((), tuple(e.id for e in thread.state.entries[: 2 * BLOCK])))
            await write_snapshot(log, CONVERTER, thread.state)
            await write_snapshot(log, CONVERTER, thread.state)  # (the same seq: replaces it)
    files = _snapshot_files(tmp_path / "t")
    assert len(files) == 2 and _unused_parts(tmp_path / "t") == set()
    assert (tmp_path / "t" / "snapshots.jsonl").read_bytes() == b""
    assert len(list((tmp_path / "t" / "parts").iterdir())) <= 4 + 2  # blocks 0-1 gone from the newest


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
async def test_a_process_killed_while_writing_snapshots_leaves_a_thread_that_opens_as_its_records_say(
        backend: str, tmp_path: Path) -> None:
    url = f"jsonl:{tmp_path / 'store'}" if backend == "jsonl" else f"sqlite:{tmp_path / 'db'}"
    rng = random.Random(16)
    env = {**cli_env(), "PYTHONPATH": os.pathsep.join(sys.path)}
    for kill in range(4):
        child = subprocess.Popen([sys.executable, "-c", _WRITER, url], stdout=subprocess.PIPE, env=env)
        assert child.stdout is not None
        for _ in range(rng.randint(1, 3)):  # a few snapshots written, then killed in a later one
            assert child.stdout.readline(), "the writer died before writing its snapshots"
        time.sleep(rng.uniform(0.0, 0.05))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        opened, folded = await _folded_from_records(url)
        assert list(opened.entries) == list(folded.entries) and opened.seq == folded.seq, f"kill {kill}"
        assert (opened.active_tokens, opened.pos) == (folded.active_tokens, folded.pos)
        if backend == "jsonl":
            thread = tmp_path / "store" / "t"
            assert len(_snapshot_files(thread)) <= 2 and _unused_parts(thread) == set()
            assert not [p for p in thread.rglob("*.tmp")]

"""Checking a whole store: every record, every kept snapshot, and the file's own structure.

Opening a thread checks what opening relies on (its latest snapshot, the record that
snapshot covers, the records after it); a record older than the snapshot is checked when it
is read (``history --at``, ``audit``, ``fork``, a replay). :func:`verify_store` reads
everything, as ``PRAGMA integrity_check`` does for SQLite's pages, and lists each problem
instead of stopping at the first.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from contextlib import aclosing

from attrs import frozen
from livecontext.protocol import UnsupportedSchemaVersionError

from .base import CorruptRecordError, StoreCorruptError
from ._interface import EventStore, ThreadReader
from ._salvage import CHUNK, Damage, read_past_damage

MAX_PROBLEMS_PER_THREAD = 20
"""Problems listed for one thread before the rest are counted only."""


@frozen
class Problem:
    """One thing found wrong."""

    thread_id: str | None
    """The thread it is in (``None``: the store's file itself)."""
    seq: int | None
    """The seq of the damaged record or snapshot (``None``: not tied to one)."""
    text: str
    """What is wrong and what to do, in one line."""


@frozen
class StoreCheck:
    """What :func:`verify_store` found."""

    threads: int
    """Threads checked."""
    records: int
    """Records read and checked."""
    snapshots: int
    """Snapshots read and checked."""
    problems: tuple[Problem, ...]
    """Damage found, in the order found (the store's structure first, then thread by thread)."""
    notes: tuple[str, ...] = ()
    """What is not damage but worth saying (a torn tail left by a crash: the next writer drops it)."""

    @property
    def ok(self) -> bool:
        """Whether nothing is damaged."""
        return not self.problems


async def verify_store(store: EventStore, thread_ids: Sequence[str] | None = None) -> StoreCheck:
    """Read and check every record and kept snapshot of ``thread_ids`` (default: every thread),
    and the store's structure (SQLite: ``PRAGMA integrity_check``). Nothing is written.

    Raises:
        ThreadNotFoundError: a thread of ``thread_ids`` does not exist.
    """
    problems = _structure_problems(store.url, await store.check_structure())
    notes: list[str] = []
    records = snapshots = 0
    try:
        ids = list(thread_ids) if thread_ids is not None else [t.thread_id for t in await store.threads()]
    except StoreCorruptError as exc:  # (the list itself sits on a damaged page)
        problems.append(Problem(None, None, f"the store's file is damaged: its list of threads cannot be read "
                                            f"({exc.detail})"))
        ids = []
    for thread_id in ids:
        found: list[Problem] = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                reader = await store.open_reader(thread_id)
            notes.extend(str(w.message) for w in caught)
            async with reader:
                records += await _check_records(reader, found)
                snapshots += await _check_snapshots(reader, found)
        except StoreCorruptError as exc:  # (where the thread's last record or snapshots are)
            found.append(Problem(None, None, f"the store's file is damaged: thread {thread_id!r} cannot be "
                                             f"read whole ({exc.detail})"))
        if len(found) > MAX_PROBLEMS_PER_THREAD:
            more = len(found) - MAX_PROBLEMS_PER_THREAD
            found = found[:MAX_PROBLEMS_PER_THREAD] + [Problem(thread_id, None, f"thread {thread_id!r}: "
                                                               f"{more} more problem(s) not listed")]
        problems.extend(found)
    return StoreCheck(len(ids), records, snapshots, tuple(problems), tuple(notes))


def _structure_problems(url: str, found: list[str]) -> list[Problem]:
    """One problem per line ``check_structure`` found; the first says what to do."""
    lines = [line for text in found for line in text.splitlines()
             if line.strip() and not line.startswith("*** in database")]
    path = url.partition(":")[2]
    advice = (f"; restore {path} from a backup: nothing writes into a damaged file, not even `fork`; or copy "
              f"what can be read into a new store (`livecontext copy --store {url} --to sqlite:NEW.db`); "
              "the lines below name what cannot be read")
    return [Problem(None, None, f"the store's file is damaged: {line}{advice if k == 0 else ''}")
            for k, line in enumerate(lines)]


async def _check_records(reader: ThreadReader, found: list[Problem]) -> int:
    """Read every record of ``reader``'s thread; each damaged one (or stretch a damaged file
    keeps from being read) is a problem. Returns how many were read sound."""
    sound = 0
    async with aclosing(read_past_damage(reader, chunk=CHUNK)) as items:
        async for item in items:
            if isinstance(item, Damage):
                found.append(Problem(reader.thread_id, item.first, item.text))
                if len(found) > MAX_PROBLEMS_PER_THREAD:
                    break
            else:
                sound += len(item)
    return sound


async def _check_snapshots(reader: ThreadReader, found: list[Problem]) -> int:
    """Check every snapshot the thread keeps, newest first (each with the record it covers)."""
    bound: int | None = None
    checked = 0
    while bound is None or bound >= 1:
        try:
            snapshot = await reader.latest_snapshot(bound)
        except (CorruptRecordError, UnsupportedSchemaVersionError) as exc:
            seq = getattr(exc, "seq", -1)
            if getattr(exc, "what", "snapshot") == "snapshot" or not any(p.seq == seq for p in found):
                found.append(Problem(reader.thread_id, seq, _line(reader.thread_id, exc)))
            if seq < 1:
                return checked
            bound = seq - 1 if bound is None or seq <= bound else bound - 1  # (always lower: it ends)
            continue
        if snapshot is None:
            return checked
        checked += 1
        bound = snapshot.seq - 1
    return checked


def _line(thread_id: str, exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if thread_id in text else f"thread {thread_id!r}: {text}"

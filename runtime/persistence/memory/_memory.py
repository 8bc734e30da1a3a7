"""The in-memory backend: every ``memory:`` store is a fresh, private set of threads.

Nothing survives the process; the fsync level is ignored. Records are kept as the sealed
:class:`StoredRecord` objects themselves (immutable), so reads need no decoding.
"""

from __future__ import annotations

import datetime as dt

import attrs

from ..base import (
    Holder,
    KEEP_SNAPSHOTS,
    SeqOutOfRangeError,
    Snapshot,
    StoredRecord,
    ThreadExistsError,
    ThreadInfo,
    ThreadLockedError,
    ThreadNotFoundError,
    current_holder,
    missing_part,
    rehome,
    rehome_snapshot,
    used_parts,
)


@attrs.define
class _Thread:
    info: ThreadInfo
    records: list[StoredRecord] = attrs.Factory(list)
    snapshots: list[Snapshot] = attrs.Factory(list)
    parts: dict[str, bytes] = attrs.Factory(dict)
    """The snapshot parts the kept snapshots use, by key."""
    holder: Holder | None = None

    def summary(self) -> ThreadInfo:
        last = self.records[-1].sent_at if self.records else self.info.created_at
        return attrs.evolve(
            self.info,
            last_seq=len(self.records),
            last_activity=max(last, self.info.created_at),
        )


class MemoryBackend:
    """Threads in a dict; the single-writer lock is a field of each thread."""

    blocking = False

    def __init__(self) -> None:
        self._threads: dict[str, _Thread] = {}

    def list_threads(self) -> list[ThreadInfo]:
        return [self._threads[t].summary() for t in sorted(self._threads)]

    def thread_exists(self, thread_id: str) -> bool:
        return thread_id in self._threads

    def _get(self, thread_id: str) -> _Thread:
        try:
            return self._threads[thread_id]
        except KeyError:
            raise ThreadNotFoundError(thread_id) from None

    def _new(self, thread_id: str, forked_from: str | None, forked_at: int | None) -> _Thread:
        now = dt.datetime.now(dt.timezone.utc)
        thread = _Thread(ThreadInfo(thread_id, 0, now, now, forked_from, forked_at))
        self._threads[thread_id] = thread
        return thread

    def open_writer(self, thread_id: str, create: bool, owner: str) -> _MemoryWriter:
        thread = self._threads.get(thread_id)
        if thread is None:
            if not create:
                raise ThreadNotFoundError(thread_id)
            thread = self._new(thread_id, None, None)
        if thread.holder is not None:
            raise ThreadLockedError(thread_id, thread.holder.describe())
        thread.holder = current_holder(owner)
        return _MemoryWriter(thread_id, thread)

    def open_reader(self, thread_id: str) -> _MemoryReader:
        return _MemoryReader(thread_id, self._get(thread_id))

    def fork(self, src_thread: str, at_seq: int, new_thread: str) -> ThreadInfo:
        src = self._get(src_thread)
        if not 0 <= at_seq <= len(src.records):
            raise SeqOutOfRangeError(src_thread, at_seq, len(src.records), "cannot fork")
        if new_thread in self._threads:
            raise ThreadExistsError(new_thread)
        thread = self._new(new_thread, src_thread, at_seq)
        thread.records = [rehome(r, new_thread) for r in src.records[:at_seq]]
        kept = [s for s in src.snapshots if s.seq <= at_seq]
        thread.snapshots = ([rehome_snapshot(kept[-1], new_thread, thread.records[kept[-1].seq - 1].checksum)]
                            if kept else [])
        thread.parts = {key: src.parts[key] for key in kept[-1].parts} if kept else {}
        return thread.summary()

    def create_thread(self, info: ThreadInfo) -> None:
        if info.thread_id in self._threads:
            raise ThreadExistsError(info.thread_id)
        self._threads[info.thread_id] = _Thread(attrs.evolve(info, last_seq=0, last_activity=info.created_at))

    def close(self) -> None:
        self._threads.clear()


class _MemoryReader:
    def __init__(self, thread_id: str, thread: _Thread) -> None:
        self.thread_id = thread_id
        self._thread = thread

    def last_seq(self) -> int:
        return len(self._thread.records)

    def read(self, from_seq: int, to_seq: int) -> list[StoredRecord]:
        return self._thread.records[from_seq - 1 : to_seq]

    def latest_snapshot(self, at_or_before: int) -> Snapshot | None:
        for snapshot in reversed(self._thread.snapshots):
            if snapshot.seq <= at_or_before:
                return snapshot
        return None

    def ignored(self) -> list[Warning]:
        return []

    def read_parts(self, keys: list[str]) -> list[bytes | None]:
        return [self._thread.parts.get(key) for key in keys]

    def close(self) -> None:
        pass


class _MemoryWriter(_MemoryReader):
    def __init__(self, thread_id: str, thread: _Thread) -> None:
        super().__init__(thread_id, thread)
        self.repairs: list[Warning] = []
        self._closed = False

    def latest_snapshot_seq(self) -> int:
        snapshots = self._thread.snapshots
        return snapshots[-1].seq if snapshots else 0

    def append(self, records: list[StoredRecord]) -> None:
        self._thread.records.extend(records)

    def write_snapshot(self, snapshot: Snapshot, new_parts: dict[str, bytes]) -> None:
        thread = self._thread
        for key in snapshot.parts:
            if key not in new_parts and key not in thread.parts:
                raise missing_part(self.thread_id, key)
        thread.parts.update(new_parts)
        snapshots = thread.snapshots
        if snapshots and snapshots[-1].seq == snapshot.seq:
            snapshots[-1] = snapshot
        else:
            snapshots.append(snapshot)
        del snapshots[:-KEEP_SNAPSHOTS]  # as SQLite: only the newest few are kept
        used = used_parts(s.parts for s in snapshots)
        for key in [k for k in thread.parts if k not in used]:
            del thread.parts[key]

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._thread.holder = None

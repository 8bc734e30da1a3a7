"""The async side shared by every backend: hops, numbering, validation, closing, warnings."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import trio

from .base import (
    Backend,
    CorruptRecordError,
    InvalidRecordError,
    NewRecord,
    SeqOutOfRangeError,
    Snapshot,
    SnapshotOrderError,
    StoreClosedError,
    StoredRecord,
    ThreadHandle,
    ThreadInfo,
    WriterHandle,
    check_new_parts,
    check_thread_id,
    checked_parts,
    seal_records,
    seal_snapshot,
)
from ._clock import SystemClock
from livecontext.protocol import UnsupportedSchemaVersionError

from ._interface import EventStore, ThreadLog, ThreadReader

T = TypeVar("T")

_FAIRNESS_BATCH = 32
"""Appends to a non-blocking backend between two schedule points (see fair_checkpoint)."""


class BackendStore(EventStore):
    """An :class:`EventStore` over a blocking :class:`Backend`."""

    def __init__(self, backend: Backend, url: str) -> None:
        self._backend = backend
        self._url = url
        self._closed = False
        self._open: set[_Reader] = set()
        self._unyielded = 0  # see fair_checkpoint

    @property
    def url(self) -> str:
        return self._url

    @property
    def blocking(self) -> bool:
        """Whether the backend's calls block (and so run in a worker thread)."""
        return self._backend.blocking

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """Call ``fn(*args)`` in a worker thread (blocking backends) or here."""
        if self._backend.blocking:
            return await trio.to_thread.run_sync(fn, *args)
        await trio.lowlevel.checkpoint()
        return fn(*args)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"the store {self._url}")

    async def fair_checkpoint(self) -> None:
        """A cancel point, and a schedule point once every ``_FAIRNESS_BATCH`` calls: an append
        to a backend that does not block need not cost a trip through Trio's scheduler each
        time (its writer, typically an actor's handler, yields soon anyway), but a loop of
        appends must still let others run."""
        self._unyielded += 1
        if self._unyielded >= _FAIRNESS_BATCH:
            self._unyielded = 0
            await trio.lowlevel.checkpoint()
        else:
            await trio.lowlevel.checkpoint_if_cancelled()

    async def threads(self) -> list[ThreadInfo]:
        self._check_open()
        return await self.run(self._backend.list_threads)

    async def check_structure(self) -> list[str]:
        self._check_open()
        check = getattr(self._backend, "check_structure", None)
        return await self.run(check) if check is not None else await super().check_structure()

    async def exists(self, thread_id: str) -> bool:
        self._check_open()
        return await self.run(self._backend.thread_exists, check_thread_id(thread_id))

    async def open_thread(self, thread_id: str, *, create: bool = True, owner: str,
                          clock: SystemClock | None = None) -> ThreadLog:
        self._check_open()
        check_thread_id(thread_id)
        if not isinstance(owner, str) or not owner:
            raise TypeError("owner must be a non-empty str naming the writer (e.g. an actor id)")
        if clock is not None and not isinstance(clock, SystemClock):
            raise TypeError(f"clock must be a SystemClock or None, got {type(clock).__name__}")
        handle = await self.run(self._backend.open_writer, thread_id, create, owner)
        log = _Log(self, handle, clock)
        self._open.add(log)
        try:
            for warning in handle.repairs:
                warnings.warn(warning, stacklevel=2)
        except BaseException:  # warnings turned into errors: do not keep the lock
            await log.aclose()
            raise
        return log

    async def open_reader(self, thread_id: str) -> ThreadReader:
        self._check_open()
        handle = await self.run(self._backend.open_reader, check_thread_id(thread_id))
        reader = _Reader(self, handle)
        self._open.add(reader)
        try:
            for warning in await self.run(handle.ignored):
                warnings.warn(warning, stacklevel=2)
        except BaseException:  # warnings turned into errors
            await reader.aclose()
            raise
        return reader

    async def fork(self, src_thread: str, at_seq: int, new_thread: str) -> ThreadInfo:
        self._check_open()
        check_thread_id(src_thread)
        check_thread_id(new_thread)
        if isinstance(at_seq, bool) or not isinstance(at_seq, int):
            raise TypeError(f"at_seq must be an int, got {type(at_seq).__name__}")
        return await self.run(self._backend.fork, src_thread, at_seq, new_thread)

    async def create_thread(self, info: ThreadInfo) -> None:
        self._check_open()
        if not isinstance(info, ThreadInfo):
            raise TypeError(f"info must be a ThreadInfo, got {type(info).__name__}")
        check_thread_id(info.thread_id)
        await self.run(self._backend.create_thread, info)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            for resource in list(self._open):
                await resource.aclose()
            await self.run(self._backend.close)

    def forget(self, resource: _Reader) -> None:
        """Called by a closing reader or log."""
        self._open.discard(resource)


class _Reader(ThreadReader):
    def __init__(self, store: BackendStore, handle: ThreadHandle) -> None:
        self._store = store
        self._handle = handle
        self._closed = False
        self._lock = trio.Lock()

    @property
    def thread_id(self) -> str:
        return self._handle.thread_id

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"the {self._describe()} of thread {self.thread_id!r}")

    def _describe(self) -> str:
        return "reader"

    async def last_seq(self) -> int:
        self._check_open()
        async with self._lock:
            return await self._store.run(self._handle.last_seq)

    async def read(self, from_seq: int = 1, to_seq: int | None = None) -> list[StoredRecord]:
        self._check_open()
        async with self._lock:
            return await self._store.run(self._read_sync, from_seq, to_seq)

    def _read_sync(self, from_seq: int, to_seq: int | None) -> list[StoredRecord]:
        last = self._handle.last_seq()
        if isinstance(from_seq, bool) or not isinstance(from_seq, int) or from_seq < 1:
            raise SeqOutOfRangeError(self.thread_id, from_seq, last, "cannot read (from_seq >= 1)")
        end = last if to_seq is None else min(to_seq, last)
        if from_seq > end:
            return []
        return self._handle.read(from_seq, end)

    async def latest_snapshot(self, at_or_before: int | None = None) -> Snapshot | None:
        self._check_open()
        async with self._lock:
            return await self._store.run(self._snapshot_sync, at_or_before)

    def _snapshot_sync(self, at_or_before: int | None) -> Snapshot | None:
        last = self._handle.last_seq()
        bound = last if at_or_before is None else min(at_or_before, last)
        return self._handle.latest_snapshot(bound) if bound >= 1 else None

    async def read_snapshot_parts(self, snapshot: Snapshot) -> list[bytes]:
        self._check_open()
        if not snapshot.parts:
            await trio.lowlevel.checkpoint()
            return []
        async with self._lock:
            return await self._store.run(self._parts_sync, snapshot)

    def _parts_sync(self, snapshot: Snapshot) -> list[bytes]:
        keys = list(snapshot.parts)
        return checked_parts(self.thread_id, snapshot.seq, keys, self._handle.read_parts(keys))

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._store.forget(self)
        with trio.CancelScope(shield=True):
            # Wait for a call in flight (its worker thread still uses the handle).
            async with self._lock:
                await self._store.run(self._handle.close)


class _Log(_Reader, ThreadLog):
    _handle: WriterHandle

    def __init__(self, store: BackendStore, handle: WriterHandle, clock: SystemClock | None) -> None:
        super().__init__(store, handle)
        self._blocking = store.blocking  # (a backend's kind: asked at every append)
        self._clock = clock

    @property
    def store(self) -> EventStore:
        return self._store

    @property
    def clock(self) -> SystemClock | None:
        return self._clock

    def _describe(self) -> str:
        return "log"

    async def append(self, records: Sequence[NewRecord]) -> list[StoredRecord]:
        self._check_open()
        batch = list(records)
        if not batch:
            await trio.lowlevel.checkpoint()
            return []
        if not self._blocking:
            # a backend that does not block appends here and now: nothing awaits between the
            # check and the append, so no lock is needed
            await self._store.fair_checkpoint()
            if not self._lock.locked():
                self._check_open()
                return self._append_sync(batch, self._stamps(batch))
        async with self._lock:
            self._check_open()
            # stamped here, in the Trio thread, in this log's order (see _clock)
            return await self._store.run(self._append_sync, batch, self._stamps(batch))

    def append_nowait(self, records: Sequence[NewRecord]) -> list[StoredRecord]:
        self._check_open()
        if self.would_block():
            raise trio.WouldBlock
        batch = list(records)
        return self._append_sync(batch, self._stamps(batch)) if batch else []

    def would_block(self) -> bool:
        return self._blocking or self._lock.locked()

    def _stamps(self, batch: list[NewRecord]) -> int | None:
        """The first system seq of ``batch`` (taken from the clock now), or ``None``."""
        return self._clock.take(len(batch)) if self._clock is not None else None

    def _append_sync(self, batch: list[NewRecord], first_system_seq: int | None) -> list[StoredRecord]:
        handle = self._handle
        sealed = seal_records(handle.thread_id, handle.last_seq() + 1, batch, first_system_seq)
        handle.append(sealed)
        return sealed

    async def append_stored(self, records: Sequence[StoredRecord]) -> None:
        self._check_open()
        batch = list(records)
        if not batch:
            await trio.lowlevel.checkpoint()
            return
        async with self._lock:
            self._check_open()
            await self._store.run(self._append_stored_sync, batch)

    def _append_stored_sync(self, batch: list[StoredRecord]) -> None:
        handle = self._handle
        expected = handle.last_seq() + 1
        for index, record in enumerate(batch):
            if not isinstance(record, StoredRecord):
                raise InvalidRecordError(f"record {index} of the batch is a {type(record).__name__}, "
                                         "not a StoredRecord")
            if record.thread_id != handle.thread_id:
                raise InvalidRecordError(f"record {index} of the batch belongs to thread {record.thread_id!r}, "
                                         f"not {handle.thread_id!r}")
            if record.seq != expected + index:
                raise InvalidRecordError(f"record {index} of the batch has seq {record.seq}, not "
                                         f"{expected + index} (the next of thread {handle.thread_id!r})")
            try:
                record.verify()
            except (CorruptRecordError, UnsupportedSchemaVersionError) as exc:
                raise InvalidRecordError(f"record {index} of the batch fails its checks ({exc})") from None
        handle.append(batch)

    async def write_snapshot(self, seq: int, state: str, *, parts: Sequence[str] = (),
                             new_parts: Mapping[str, bytes] | None = None) -> Snapshot:
        self._check_open()
        async with self._lock:
            self._check_open()
            return await self._store.run(self._snapshot_write_sync, seq, state, tuple(parts), dict(new_parts or {}))

    def _snapshot_write_sync(self, seq: int, state: str, parts: tuple[str, ...],
                             new_parts: dict[str, bytes]) -> Snapshot:
        last = self._handle.last_seq()
        if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= last:
            raise SeqOutOfRangeError(self.thread_id, seq, last, "cannot write a snapshot")
        latest = self._handle.latest_snapshot_seq()
        if seq < latest:
            raise SnapshotOrderError(self.thread_id, seq, latest)
        check_new_parts(parts, new_parts)  # (hashing them here: in the worker thread)
        covered = self._handle.read(seq, seq)[0]  # (checked as it is read)
        snapshot = seal_snapshot(self.thread_id, seq, state, covered.checksum, parts)
        self._handle.write_snapshot(snapshot, {k: v for k, v in new_parts.items() if k in snapshot.parts})
        return snapshot

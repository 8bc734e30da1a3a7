"""The event log's interface: a store of threads, each an append-only log with one writer.

Implementations: SQLite, JSONL files, memory and PostgreSQL (see :func:`open_store`). Every method that
touches the disk is async and runs its blocking part in a worker thread
(``trio.to_thread.run_sync``), one hop per call. Such a hop is not abandoned on
cancellation: a commit that has started finishes (or fails) before the cancellation is
delivered, so a cancelled append either committed completely or not at all.
"""

from __future__ import annotations

import abc
import types
from collections.abc import Mapping, Sequence
from typing import Self

import trio

from ._clock import SystemClock
from .base import NewRecord, Snapshot, StoredRecord, ThreadInfo


class _AsyncResource(abc.ABC):
    """Something closed with ``aclose()``, usable as ``async with``."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Release what this object holds. Closing twice is fine."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        await self.aclose()


class ThreadReader(_AsyncResource):
    """Read-only access to one thread, without its writer's lock (e.g. for inspection).

    A reader sees only committed records: a torn last record, or the part of a batch that is
    being written by another process, is ignored (not repaired: only a writer repairs).
    """

    @property
    @abc.abstractmethod
    def thread_id(self) -> str:
        """The thread this reads."""

    @abc.abstractmethod
    async def last_seq(self) -> int:
        """The seq of the thread's last committed record (0 when it has none)."""

    @abc.abstractmethod
    async def read(self, from_seq: int = 1, to_seq: int | None = None) -> list[StoredRecord]:
        """The records ``from_seq..to_seq`` (inclusive), in ascending seq order.

        ``to_seq=None`` means up to the last record; a ``to_seq`` past the end is clamped to
        it, and an empty range gives an empty list. Every returned record has been checked.

        Raises:
            SeqOutOfRangeError: ``from_seq`` is less than 1.
            CorruptRecordError: a record in the range (before the tail) fails its checksum,
                cannot be decoded, or is missing; the message names its seq.
            UnsupportedSchemaVersionError: a record was written with an unknown schema version.
        """

    @abc.abstractmethod
    async def latest_snapshot(self, at_or_before: int | None = None) -> Snapshot | None:
        """The snapshot with the highest seq not past ``at_or_before`` (default: the end).

        Raises:
            CorruptRecordError: the snapshot that would be returned is damaged.
            UnsupportedSchemaVersionError: it was written with an unknown schema version.
        """

    async def read_snapshot_parts(self, snapshot: Snapshot) -> list[bytes]:
        """The parts of ``snapshot`` (see :attr:`Snapshot.parts`), in its order, each hashed
        again on the way.

        Raises:
            CorruptRecordError: a part is missing or damaged (``what="snapshot part"``; the
                message names the snapshot's seq).
        """
        if snapshot.parts:
            raise NotImplementedError(f"{type(self).__name__} does not read snapshot parts")
        return []


class ThreadLog(ThreadReader):
    """The writer of one thread. Only one exists per thread at a time, across processes.

    Opening it (:meth:`EventStore.open_thread`) takes the thread's single-writer lock;
    :meth:`aclose` releases it. A writer that dies without closing does not keep the thread:
    the lock is recovered once its process is gone.
    """

    @property
    @abc.abstractmethod
    def store(self) -> EventStore:
        """The store this log belongs to (a sub-agent's thread is opened in its parent's)."""

    @property
    @abc.abstractmethod
    def clock(self) -> SystemClock | None:
        """The clock of the system this thread belongs to, which stamps each record appended
        (``None``: the thread belongs to no system; its records carry no system seq)."""

    @abc.abstractmethod
    async def append(self, records: Sequence[NewRecord]) -> list[StoredRecord]:
        """Append ``records`` as one transaction, numbered from ``last_seq() + 1`` (and, if the
        log has a :attr:`clock`, stamped with its next system seqs).

        When this returns, the whole batch is committed (durable as the store's
        :class:`FsyncLevel` promises); if it raises, none of it is. Cost does not depend on
        the thread's length.

        Returns:
            The stored records, with their seqs and checksums.

        Raises:
            InvalidRecordError: a record is malformed (e.g. its payload is not JSON text).
            LeaseLostError: another writer took the thread over (SQLite, PostgreSQL: after lease expiry).
            LogWriteError: the disk refused the write.
            StoreClosedError: this log (or its store) was closed.
        """

    def append_nowait(self, records: Sequence[NewRecord]) -> list[StoredRecord]:
        """Like :meth:`append`, here and now: for a log that can append without waiting (a
        backend that does not block, nothing else in progress on the log). No checkpoint.

        Raises:
            trio.WouldBlock: the append would have to wait (see :meth:`would_block`).
            As :meth:`append` otherwise.
        """
        raise trio.WouldBlock

    def would_block(self) -> bool:
        """Whether :meth:`append_nowait` would raise ``trio.WouldBlock`` now (a snapshot taken
        then holds until the caller next yields to Trio)."""
        return True

    @abc.abstractmethod
    async def append_stored(self, records: Sequence[StoredRecord]) -> None:
        """Append ``records`` as they were stored elsewhere (another store's copy of this
        thread): as one transaction, each kept as it is, its seq, sender, times, schema
        version, system seq and checksum included, so that the copy is the same log.

        Unlike :meth:`append`, nothing is numbered or stamped (not by :attr:`clock` either).

        Raises:
            InvalidRecordError: a record belongs to another thread, its seq does not follow on
                (``last_seq() + 1``, …), or it fails its checks (:meth:`StoredRecord.verify`);
                nothing of the batch was written.
            As :meth:`append` otherwise.
        """

    @abc.abstractmethod
    async def write_snapshot(self, seq: int, state: str, *, parts: Sequence[str] = (),
                             new_parts: Mapping[str, bytes] | None = None) -> Snapshot:
        """Store ``state`` (JSON text) as the thread's folded state as of ``seq``.

        Snapshots are written in seq order; one at the same seq as the latest replaces it.
        Only the newest :data:`~.base._records.KEEP_SNAPSHOTS` are kept, with the parts they use.

        Args:
            parts: the keys of the parts the state is split into besides ``state`` (see
                :mod:`.base._parts`), in order; the snapshot's checksum covers them.
            new_parts: the bytes of those parts the thread may not hold yet, by key (a part
                the thread holds is not written again): what makes a snapshot after a few
                changes cost as much as they do.

        Raises:
            SeqOutOfRangeError: ``seq`` is not in ``1..last_seq()``.
            SnapshotOrderError: ``seq`` is before the latest snapshot's seq.
            InvalidRecordError: ``state`` is not JSON text, a part's bytes do not hash to its
                key, or a part is neither given nor held by the thread.
        """


class EventStore(_AsyncResource):
    """A set of threads, each with its own append-only event log.

    Open one with :func:`open_store`; close it with :meth:`aclose` (or ``async with``),
    which also closes the thread logs and readers opened from it.
    """

    @property
    @abc.abstractmethod
    def url(self) -> str:
        """The URL this store was opened with."""

    @abc.abstractmethod
    async def threads(self) -> list[ThreadInfo]:
        """A summary of every thread, sorted by thread id."""

    async def check_structure(self) -> list[str]:
        """What is wrong with the store's medium below its records, one line each (SQLite:
        what ``PRAGMA integrity_check`` reports); empty when nothing is. Reads everything."""
        await trio.lowlevel.checkpoint()
        return []

    @abc.abstractmethod
    async def exists(self, thread_id: str) -> bool:
        """Whether the thread exists (it may have no records yet)."""

    @abc.abstractmethod
    async def open_thread(self, thread_id: str, *, create: bool = True, owner: str,
                          clock: SystemClock | None = None) -> ThreadLog:
        """Open the thread for writing, taking its single-writer lock.

        A damaged last record (or the unfinished part of a batch) left by a crash is dropped
        here, with a :class:`TornRecordWarning`.

        Args:
            thread_id: the thread; created (empty) if missing and ``create`` is true.
            create: whether a missing thread is created.
            owner: who writes, e.g. an actor id; other writers see it in
                :class:`ThreadLockedError` (with this process's pid and host).
            clock: the clock of the system the thread belongs to: every record appended
                through this log is stamped with its next system seq (see :mod:`._clock`).

        Raises:
            ThreadLockedError: another writer holds the thread (here or in another process).
            ThreadNotFoundError: the thread is missing and ``create`` is false.
            CorruptRecordError: a record before the tail is damaged.
            UnsupportedSchemaVersionError: the last record has an unknown schema version.
        """

    @abc.abstractmethod
    async def open_reader(self, thread_id: str) -> ThreadReader:
        """Open the thread for reading only; no lock is taken and nothing is repaired.

        Raises:
            ThreadNotFoundError: the thread does not exist.
        """

    @abc.abstractmethod
    async def create_thread(self, info: ThreadInfo) -> None:
        """Create thread ``info.thread_id``, empty, with ``info``'s ``created_at``,
        ``forked_from`` and ``forked_at`` (its other fields are not used): the start of a copy
        of a thread from another store, whose records follow with
        :meth:`ThreadLog.append_stored`.

        Raises:
            ThreadExistsError: the thread exists; nothing was written.
            InvalidThreadIdError: the store cannot hold this thread id.
        """

    @abc.abstractmethod
    async def fork(self, src_thread: str, at_seq: int, new_thread: str) -> ThreadInfo:
        """Create ``new_thread`` holding a copy of ``src_thread``'s records ``1..at_seq``.

        Seqs (and system seqs) are kept, checksums recomputed for the new thread id; the latest
        snapshot at or before ``at_seq`` is copied too. The copy is all or nothing. ``at_seq=0`` gives an
        empty thread that remembers its origin.

        Raises:
            ThreadNotFoundError: ``src_thread`` does not exist.
            SeqOutOfRangeError: ``at_seq`` is negative or past the source's last seq.
            ThreadExistsError: ``new_thread`` already exists.
            CorruptRecordError: a record to copy is damaged.
        """

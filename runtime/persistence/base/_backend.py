"""What a storage backend provides: plain blocking calls, driven by :mod:`.._frontend`.

The frontend owns everything the backends share (async, worker-thread hops, seq numbering,
validation, checksums, closing, warnings); a backend only moves already-sealed records and
snapshots to and from its medium, and keeps the single-writer lock.
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

from ._records import Snapshot, StoredRecord, ThreadInfo


class ThreadHandle(Protocol):
    """Blocking access to one thread's committed records and snapshots."""

    thread_id: str

    def last_seq(self) -> int:
        """The seq of the last committed record, ignoring a torn tail."""
        ...

    def read(self, from_seq: int, to_seq: int) -> list[StoredRecord]:
        """Records ``from_seq..to_seq``, checked; ``1 <= from_seq <= to_seq <= last_seq()``."""
        ...

    def latest_snapshot(self, at_or_before: int) -> Snapshot | None:
        """The snapshot with the highest seq ``<= at_or_before``, checked (with the record it
        covers: see :func:`~._records.check_snapshot`)."""
        ...

    def ignored(self) -> list[Warning]:
        """What a reader passes over (a torn last record), for the frontend to warn about."""
        ...

    def read_parts(self, keys: list[str]) -> list[bytes | None]:
        """The snapshot parts with these keys, as stored (``None``: not stored); the frontend
        hashes them again."""
        ...

    def close(self) -> None:
        """Release files; for a writer, also its lock. Idempotent."""
        ...


class WriterHandle(ThreadHandle, Protocol):
    """A thread opened for writing: holds the lock; ``last_seq()`` is cached."""

    repairs: list[Warning]
    """What opening dropped (torn records or snapshots), for the frontend to warn about."""

    def latest_snapshot_seq(self) -> int:
        """The seq of the latest snapshot (0 when there is none)."""
        ...

    def append(self, records: list[StoredRecord]) -> None:
        """Commit ``records`` (numbered ``last_seq()+1``, …) as one transaction."""
        ...

    def write_snapshot(self, snapshot: Snapshot, new_parts: dict[str, bytes]) -> None:
        """Store ``snapshot`` (its seq is in range and not before the latest) and those of
        ``new_parts`` (checked: each hashes to its key) the thread does not hold; keep the
        newest :data:`~._records.KEEP_SNAPSHOTS` snapshots and the parts they use.

        Raises:
            InvalidRecordError: a part of ``snapshot.parts`` is neither in ``new_parts`` nor
                held (see :func:`~._parts.missing_part`); nothing was written.
        """
        ...


class Backend(Protocol):
    """A store's medium."""

    blocking: bool
    """Whether calls block (then the frontend runs them in a worker thread)."""

    def list_threads(self) -> list[ThreadInfo]:
        """Every thread, sorted by id."""
        ...

    def thread_exists(self, thread_id: str) -> bool:
        """Whether the thread exists."""
        ...

    def open_writer(self, thread_id: str, create: bool, owner: str) -> WriterHandle:
        """Take the thread's lock, create it if asked, repair its tail."""
        ...

    def open_reader(self, thread_id: str) -> ThreadHandle:
        """Read access without the lock."""
        ...

    def fork(self, src_thread: str, at_seq: int, new_thread: str) -> ThreadInfo:
        """Copy records ``1..at_seq`` (and the latest snapshot up to there, with its parts) to
        a new thread."""
        ...

    def create_thread(self, info: ThreadInfo) -> None:
        """Create thread ``info.thread_id``, empty, with ``info``'s creation time and fork
        link (:class:`ThreadExistsError` if it exists)."""
        ...

    def close(self) -> None:
        """Release the medium. Idempotent."""
        ...


class RowSource(Protocol):
    """An SQL backend's committed reads of one thread at a time (SQLite, PostgreSQL)."""

    def read(self, thread_id: str, from_seq: int, to_seq: int) -> list[StoredRecord]:
        """As :meth:`ThreadHandle.read`, of ``thread_id``."""
        ...

    def committed_last(self, thread_id: str) -> int:
        """As :meth:`ThreadHandle.last_seq`, of ``thread_id``."""
        ...

    def latest_snapshot(self, thread_id: str, at_or_before: int) -> Snapshot | None:
        """As :meth:`ThreadHandle.latest_snapshot`, of ``thread_id``."""
        ...

    def read_parts(self, thread_id: str, keys: list[str]) -> list[bytes | None]:
        """As :meth:`ThreadHandle.read_parts`, of ``thread_id``."""
        ...


B = TypeVar("B", bound=RowSource)


class SqlReader(Generic[B]):
    """A :class:`ThreadHandle` of one thread of an SQL backend ``B``, without its lock (its
    writer subclasses it)."""

    def __init__(self, backend: B, thread_id: str) -> None:
        self.thread_id = thread_id
        self._backend = backend

    def last_seq(self) -> int:
        return self._backend.committed_last(self.thread_id)

    def read(self, from_seq: int, to_seq: int) -> list[StoredRecord]:
        return self._backend.read(self.thread_id, from_seq, to_seq)

    def latest_snapshot(self, at_or_before: int) -> Snapshot | None:
        return self._backend.latest_snapshot(self.thread_id, at_or_before)

    def ignored(self) -> list[Warning]:
        return []  # (a transaction is whole or absent: no torn record to pass over)

    def read_parts(self, keys: list[str]) -> list[bytes | None]:
        return self._backend.read_parts(self.thread_id, keys)

    def close(self) -> None:
        pass

"""Group commit for the SQL backends: the appends waiting to be written share one transaction.

An agent step's append is a small transaction; a process running two hundred agents makes
hundreds a second, and each pays a transaction's fixed costs (a ``BEGIN``/``COMMIT``, an
``fsync``, round trips, for SQLite a wait for another process's write lock). So an append
is queued, and the first thread to take the queue commits every append queued by then in
one transaction (:class:`GroupCommit`); the others find theirs done. Each append still
returns only once the transaction holding its records has committed: nothing of the
durability promise changes, and nothing waits on a timer.

The backend's ``commit`` says, for each append of a group, whether it was written: one whose
lease was lost fails alone (see :mod:`..sqlite._sqlite` and :mod:`..postgres._postgres` for how each isolates
them), and a transaction that fails as a whole fails every append of its group.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from ._errors import LogWriteError
from ._records import StoredRecord


class Appender(Protocol):
    """A writer handle, as a queued append knows it."""

    thread_id: str


W = TypeVar("W", bound=Appender)


class QueuedAppend(Generic[W]):
    """One append waiting in a :class:`GroupCommit`."""

    __slots__ = ("writer", "records", "done", "error")

    def __init__(self, writer: W, records: list[StoredRecord]) -> None:
        self.writer = writer
        self.records = records
        self.done = False
        """Whether a transaction holding it has ended (set while the committer is held)."""
        self.error: Exception | None = None
        """Why it was not written (``done`` and None: committed)."""


class GroupCommit(Generic[W]):
    """Appends queued, committed in groups by whichever waiting thread takes the committer.

    ``hold``: a context manager that takes the committer (the thread holding it is the only
    one committing; for SQLite, the writing connection's lock). ``commit(group)``: write the
    group in one transaction, setting each append's ``error`` if it alone failed, or raise if
    the transaction failed (every append of the group gets ``failed(thread_id, exc)``, or,
    if that is None, a :class:`LogWriteError` naming ``exc``).
    """

    def __init__(self, hold: Callable[[], contextlib.AbstractContextManager[object]],
                 commit: Callable[[list[QueuedAppend[W]]], None],
                 failed: Callable[[str, BaseException], Exception | None]) -> None:
        self._hold = hold
        self._commit = commit
        self._failed = failed
        self._queue_lock = threading.Lock()
        self._queued: list[QueuedAppend[W]] = []

    def waiting(self) -> int:
        """How many appends are queued (taken by no committer yet)."""
        with self._queue_lock:
            return len(self._queued)

    def append(self, writer: W, records: list[StoredRecord]) -> None:
        """Return once ``records`` are committed; raise what kept them from it.

        Raises:
            What ``commit`` found for this append (a lost lease...), what ``failed`` makes of
            the failure of the transaction it shared, or, in the thread that committed it,
            that failure itself.
        """
        mine: QueuedAppend[W] = QueuedAppend(writer, records)
        with self._queue_lock:
            self._queued.append(mine)
        with self._hold():
            if not mine.done:
                self._commit_queued()
        assert mine.done
        if mine.error is not None:
            raise mine.error

    def _commit_queued(self) -> None:
        with self._queue_lock:
            group, self._queued = self._queued, []
        try:
            self._commit(group)
        except BaseException as exc:  # (the transaction failed: nothing of the group was written)
            for queued in group:
                thread_id = queued.writer.thread_id
                queued.error = self._failed(thread_id, exc) or LogWriteError(
                    thread_id, f"the transaction it shared with other appends failed: {exc!r}")
            raise  # (in the thread that committed: as its own append's failure)
        finally:
            for queued in group:
                queued.done = True

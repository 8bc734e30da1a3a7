"""The event log's errors and its one warning.

Every error derives from :class:`PersistenceError`. Those the caller can fix (a bad URL, a
thread that does not exist, a seq past the end) also derive from
:class:`~livecontext.runtime.UsageError`; those that mean the data on disk is damaged
(:class:`CorruptRecordError`) or that the disk failed us (:class:`LogWriteError`) do not.
A record of an unknown schema version is reported with
:class:`UnsupportedRecordVersionError`, a kind of the protocol's own
:class:`~livecontext.protocol.UnsupportedSchemaVersionError` that names its thread and seq.
"""

from __future__ import annotations

from livecontext.protocol import UnsupportedSchemaVersionError

from ... import LivecontextError, UsageError


class PersistenceError(LivecontextError):
    """Base class of every error raised by :mod:`livecontext.runtime.persistence`."""


class StoreUrlError(PersistenceError, UsageError):
    """A store URL has an unknown scheme or lacks its path; nothing was opened or created."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"{detail}; accepted store URLs are sqlite:PATH, jsonl:DIR, memory: and postgresql://USER@HOST:PORT/DB")


class FsyncLevelError(PersistenceError, UsageError):
    """``LIVECONTEXT_FSYNC`` (or a string given as a level) names no :class:`FsyncLevel`."""

    def __init__(self, value: str) -> None:
        self.value = value
        super().__init__(f"unknown fsync level {value!r}: use one of full, normal, off")


class StoreOpenError(PersistenceError, UsageError):
    """The store's path cannot be created, opened or written; nothing was written there.

    Contrast with :class:`StoreFormatError`: the path is fine but holds something else.
    """

    def __init__(self, path: str, detail: str,
                 advice: str = "choose a path you can write to (or fix its permissions)") -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"cannot open the store at {path}: {_one_line(detail)}; {advice}")


class StoreFormatError(StoreOpenError):
    """The path holds a store of an unknown format version, or no store at all."""

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        PersistenceError.__init__(self, f"cannot use the store at {path}: {_one_line(detail)}")


class StoreReadOnlyError(StoreOpenError):
    """The store, or a thread's files, can be read but not written (permissions, a read-only
    file system); nothing was written.

    Reading it still works: :func:`open_store` with ``read_only=True`` opens such a store.
    """

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        PersistenceError.__init__(
            self,
            f"the store at {path} is read-only ({_one_line(detail)}): it can be read (threads, "
            "history, state, audit, render) but not written; make it writable, or copy it to a "
            "folder you can write to",
        )


class InvalidThreadIdError(PersistenceError, UsageError):
    """A thread id is empty, too long or holds control characters."""

    def __init__(self, thread_id: object, detail: str) -> None:
        self.thread_id = thread_id
        super().__init__(f"invalid thread id {thread_id!r}: {detail}")


class InvalidRecordError(PersistenceError, UsageError):
    """A record or snapshot given to the log is malformed; nothing of its batch was written."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"{detail}; nothing was written")


class ThreadNotFoundError(PersistenceError, UsageError):
    """The thread does not exist in this store (and was not created)."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(
            f"thread {thread_id!r} does not exist in this store; nothing was written "
            "(open it with create=True to start it, or list the threads with threads())"
        )


class ThreadExistsError(PersistenceError, UsageError):
    """A fork's target thread already exists; nothing was written."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(f"thread {thread_id!r} already exists; fork into a new thread id")


class ThreadLockedError(PersistenceError, UsageError):
    """Another writer holds the thread's single-writer lock (in this process or another).

    Contrast with :class:`LeaseLostError`: there *you* held the lock and lost it.
    """

    def __init__(self, thread_id: str, holder: str) -> None:
        self.thread_id = thread_id
        self.holder = holder
        super().__init__(
            f"thread {thread_id!r} is locked by another writer: {holder}; "
            "wait for it to close the thread, or open a read-only reader with open_reader()"
        )


class LeaseLostError(PersistenceError):
    """Our writer's lease on a thread expired and another writer took it; nothing was written."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(
            f"this writer no longer holds thread {thread_id!r}: its lease expired and another "
            "writer took it; nothing was written; reopen the thread to continue"
        )


class SeqOutOfRangeError(PersistenceError, UsageError):
    """A seq lies outside the thread's records (``1..last_seq``, or ``0`` where allowed)."""

    def __init__(self, thread_id: str, seq: int, last_seq: int, what: str) -> None:
        self.thread_id = thread_id
        self.seq = seq
        self.last_seq = last_seq
        super().__init__(
            f"{what}: seq {seq} is out of range for thread {thread_id!r}, "
            f"whose last seq is {last_seq}"
        )


class SnapshotOrderError(PersistenceError, UsageError):
    """A snapshot's seq is before the thread's latest snapshot; snapshots go in seq order."""

    def __init__(self, thread_id: str, seq: int, latest: int) -> None:
        self.thread_id = thread_id
        self.seq = seq
        self.latest = latest
        super().__init__(
            f"cannot write a snapshot of thread {thread_id!r} at seq {seq}: its latest snapshot "
            f"is at seq {latest}; write snapshots in seq order (or fork the thread at seq {seq})"
        )


class CorruptRecordError(PersistenceError):
    """A stored record or snapshot before the tail fails its checksum or cannot be decoded.

    Only the *last* record may be damaged by a crash; that one is dropped on open with a
    :class:`TornRecordWarning`. Anywhere else, damage is never skipped silently.
    """

    def __init__(self, thread_id: str, seq: int, detail: str, *, what: str = "record") -> None:
        self.thread_id = thread_id
        self.seq = seq
        self.detail = detail
        self.what = what
        if what.startswith("snapshot"):
            advice = ("a snapshot only shortens replay: the state is rebuilt from the records, and the "
                      "thread's next run drops it")
        else:
            advice = _fork_advice(thread_id, seq)
        super().__init__(f"thread {thread_id!r}: the {what} at seq {seq} is corrupt ({_one_line(detail)}); {advice}")


def _fork_advice(thread_id: str, seq: int) -> str:
    before = max(seq - 1, 0)
    return (f"restore the store from a backup, or fork the thread at seq {before} "
            f"(`livecontext fork --thread {thread_id} --at {before} --new-thread NEW`) to go on without it")


class UnsupportedRecordVersionError(UnsupportedSchemaVersionError, PersistenceError):
    """A stored record carries a schema version this build does not read; the message names
    its thread and seq.

    Contrast with :class:`CorruptRecordError`: a record whose checksum shows that its version
    was changed by a damaged byte is reported as corrupt, not as newer. When its checksum
    matches neither (``checksum_matches`` false), it is either a newer build's (which may
    checksum otherwise) or damaged: the message says both.
    """

    def __init__(self, thread_id: str, seq: int, version: object, supported: tuple[int, ...],
                 *, checksum_matches: bool) -> None:
        self.thread_id = thread_id
        self.seq = seq
        self.version = version
        self.supported = supported
        self.checksum_matches = checksum_matches
        """Whether the record's checksum is that of its fields as stored (a newer build's record)."""
        head = (f"thread {thread_id!r}: the record at seq {seq} has unsupported schema version {version!r} "
                f"(this build reads versions {', '.join(map(str, supported))})")
        if checksum_matches:
            tail = "; upgrade livecontext to read it"
        else:
            tail = (f"; its checksum does not match either: a newer livecontext wrote it (upgrade to read it), "
                    f"or it is damaged: {_fork_advice(thread_id, seq)}")
        PersistenceError.__init__(self, head + tail)


class LogWriteError(PersistenceError):
    """The disk refused an append or a snapshot; nothing of that call was committed."""

    def __init__(self, thread_id: str, detail: str) -> None:
        self.thread_id = thread_id
        self.detail = detail
        super().__init__(
            f"writing to thread {thread_id!r} failed ({_one_line(detail)}); nothing of this "
            "call was committed; free disk space or fix the store, then reopen the thread"
        )


class StoreClosedError(PersistenceError, UsageError):
    """The store, thread log or reader was closed (by you, or by closing its store)."""

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(f"{what} is closed; open it again to use it")


class TornRecordWarning(UserWarning):
    """An interrupted write left a damaged last record (or batch); it was dropped on open.

    Records dropped this way were never acknowledged to their writer: an append returns only
    once its whole batch is durable.
    """

    def __init__(self, thread_id: str, first_seq: int, count: int, reason: str) -> None:
        self.thread_id = thread_id
        self.first_seq = first_seq
        """The first dropped seq (the dropped records are ``first_seq .. first_seq+count-1``)."""
        self.count = count
        self.reason = reason
        """What was wrong, e.g. ``"partial last line"``."""
        seqs = f"seq {first_seq}" if count == 1 else f"seqs {first_seq}..{first_seq + count - 1}"
        super().__init__(
            f"thread {thread_id!r}: dropped the torn record at {seqs} ({reason}) left by an "
            f"interrupted write; the log now ends at seq {first_seq - 1}"
        )


class TornSnapshotWarning(UserWarning):
    """An interrupted write left a damaged last snapshot, or one past the log's end; dropped.

    Snapshots only shorten replay: the records still hold the state, so nothing is lost.
    """

    def __init__(self, thread_id: str, count: int, reason: str) -> None:
        self.thread_id = thread_id
        self.count = count
        self.reason = reason
        super().__init__(
            f"thread {thread_id!r}: dropped {count} torn snapshot(s) ({reason}) left by an "
            "interrupted write; replay starts from an earlier snapshot"
        )


class DamagedSnapshotWarning(UserWarning):
    """A snapshot fails its checks though no write was interrupted (its bytes changed on disk,
    or its log was changed under it); a writer dropped it, a reader passed over it.

    Snapshots only shorten replay: the state is rebuilt from an earlier snapshot or from the
    records, which are checked as they are read, so nothing is lost.
    """

    def __init__(self, thread_id: str, seq: int, reason: str, *, dropped: bool = True) -> None:
        self.thread_id = thread_id
        self.seq = seq
        self.reason = reason
        self.dropped = dropped
        done = "dropped it" if dropped else "passed over it"
        super().__init__(
            f"thread {thread_id!r}: the snapshot at seq {seq} is damaged ({_one_line(reason)}), not left by "
            f"an interrupted write; {done}: the state is rebuilt from the records, nothing is lost; "
            "`livecontext verify` checks the rest of the store"
        )


class TornTailWarning(UserWarning):
    """A reader found a torn last record (or an unfinished batch) and reads the log without it.

    A reader repairs nothing: the thread's next writer drops it (with a
    :class:`TornRecordWarning`).
    """

    def __init__(self, thread_id: str, first_seq: int, reason: str) -> None:
        self.thread_id = thread_id
        self.first_seq = first_seq
        self.reason = reason
        super().__init__(
            f"thread {thread_id!r}: ignored a torn record at seq {first_seq} ({_one_line(reason)}) left by an "
            f"interrupted write; read the log up to seq {first_seq - 1} (the next writer drops it)"
        )


class StoreCorruptError(PersistenceError):
    """The store's file is damaged below the records (SQLite reports a malformed database)."""

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(
            f"the store file {path} is damaged ({_one_line(detail)}); nothing was written; "
            f"`livecontext verify --store sqlite:{path}` lists what is readable; restore it from a backup, "
            f"or copy what can be read into a new store (`livecontext copy --store sqlite:{path} --to sqlite:NEW.db`)"
        )


def _one_line(text: str) -> str:
    return " ".join(text.split())

"""The SQLite backend: every thread in one database file, WAL mode, two connections per store.

One connection writes, one reads (WAL lets readers go on beside a writer); each is shared by
the store's handles (``check_same_thread=False``) and used by one worker thread at a time,
under its own lock. Reads must not share the writing connection: a write waits in ``BEGIN
IMMEDIATE`` while another process writes to the same file, and with one connection every
read of this process waited behind it (two batch workers on one file spent half their time
so). A store opened only to read (``mode=ro``, ``immutable=1``) has one connection for both.

Appends are committed in groups (:mod:`..base._group_commit`): the appends waiting for the
writing connection share one ``BEGIN IMMEDIATE`` transaction, each in a savepoint
that renews its writer's lease (and so checks it still holds it) and inserts its batch. The
single-writer lock is a row in ``leases``; it is stale when its holder's process is gone
(same host) or it was not renewed for :data:`~..base._lease.LEASE_TTL_S` (another host). Last
seqs come from the primary-key index, so no call reads more than it returns.

Rows are encoded and decoded (compressed, checksums packed) in the calling worker thread,
never in an actor's task: see :mod:`._tables` and :mod:`._compression`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator

from ..base import (
    CorruptRecordError,
    DamagedSnapshotWarning,
    FsyncLevel,
    GroupCommit,
    KEEP_SNAPSHOTS,
    LeaseLostError,
    LogWriteError,
    QueuedAppend,
    SeqOutOfRangeError,
    Snapshot,
    SqlReader,
    StoreClosedError,
    StoreCorruptError,
    StoreReadOnlyError,
    StoredRecord,
    ThreadExistsError,
    ThreadInfo,
    ThreadNotFoundError,
    TornSnapshotWarning,
    contiguous,
    copy_records,
    format_time,
    missing_part,
    new_lease,
    open_sql_reader,
    parse_time,
    rehome_snapshot,
    repaired,
    snapshot_damage,
    used_parts,
)
from ._tables import (
    INSERT_RECORD,
    INSERT_UNSTAMPED_RECORD,
    PARTS_FORMAT_VERSION,
    STAMPED_FORMAT_VERSION,
    UNSTAMPED_FORMAT_VERSION,
    UPSERT_SNAPSHOT,
    UPSERT_WHOLE_SNAPSHOT,
    has_snapshot_parts,
    has_system_seq,
    record_from_row,
    record_to_row,
    snapshot_from_row,
    select_records,
    select_snapshots,
    snapshot_to_row,
    upgrade_in,
)



BUSY_TIMEOUT_S = 30.0
"""How long a connection waits for a lock another process holds before SQLite says ``database
is locked``."""


def connect(path: str, fsync: FsyncLevel) -> sqlite3.Connection:
    """A connection to ``path`` in WAL mode with the ``synchronous`` level of ``fsync``."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {fsync.name}")
    except BaseException:
        conn.close()
        raise
    return conn


def connect_to_read(path: str) -> sqlite3.Connection:
    """A second connection to ``path``, for reads only (``PRAGMA query_only``)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
    try:
        conn.execute("PRAGMA query_only = 1")
    except BaseException:
        conn.close()
        raise
    return conn


_WRITE_WAIT_S = BUSY_TIMEOUT_S
"""How long a write waits for another process's write before it fails (``database is locked``)."""
_WRITE_POLL_S = 0.0005


def _begin_immediate(conn: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE``, waiting for another process's write in short sleeps.

    SQLite's own busy handler sleeps 10-100 ms at a time once a wait passes a few ms; with two
    processes writing one file (batch workers), each transaction a few ms long, each process
    then slept through most of the other's idle time. A failed attempt costs microseconds.
    """
    deadline = time.monotonic() + _WRITE_WAIT_S
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not (getattr(exc, "sqlite_errorname", "") or "").startswith("SQLITE_BUSY") \
                        or time.monotonic() > deadline:
                    raise
            time.sleep(_WRITE_POLL_S)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")  # (the connection's own)


def damaged(exc: sqlite3.Error) -> bool:
    """Whether SQLite failed because the file's pages are damaged."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in str(exc)


def refused_to_write(exc: sqlite3.Error) -> bool:
    """Whether SQLite failed because it may not write the file, or make its ``-wal``/``-shm``
    files in the folder (permissions, a read-only file system)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM"))


NO_SPACE = "no space left on the device that holds it"
"""Said of a failed write on a full disk (SQLite says ``disk I/O error`` as often as
``database or disk is full``)."""


def disk_full(folder: str | os.PathLike[str]) -> bool:
    """Whether the file system holding ``folder`` has no room left for another page."""
    try:
        return shutil.disk_usage(folder).free < _PAGE
    except OSError:
        return False


_PAGE = 64 * 1024


def _decode(thread_id: str, row: tuple[object, ...]) -> StoredRecord:
    """The checked record in ``row``; raises CorruptRecordError or UnsupportedSchemaVersionError."""
    try:
        record = record_from_row(row)
    except (ValueError, TypeError) as exc:
        raise CorruptRecordError(thread_id, _row_seq(row), f"undecodable row: {exc}") from None
    record.verify()
    return record


def _row_seq(row: tuple[object, ...]) -> int:
    return row[0] if isinstance(row[0], int) else -1


class SqliteBackend:
    """One database file; see the module docstring."""

    blocking = True

    def __init__(self, conn: sqlite3.Connection, path: str, format_version: int,
                 read_conn: sqlite3.Connection | None = None) -> None:
        """``conn`` writes (and reads too if there is no ``read_conn``); both are closed by
        :meth:`close`."""
        self._conn = conn
        self._read_conn = read_conn
        self._path = path
        self._format_version = format_version  # the file's: as opened, or as our last write left it
        self.select = select_records(has_system_seq(conn))
        """How this file's records are read (see :func:`select_records`)."""
        self.select_snapshots = select_snapshots(has_snapshot_parts(conn))
        """How this file's snapshots are read (see :func:`select_snapshots`)."""
        self._lock = threading.Lock()
        self._read_lock = threading.Lock() if read_conn is not None else self._lock
        self.appends: GroupCommit[_SqliteWriter] = GroupCommit(self._using, self._commit_group, self._group_failed)
        """Appends, committed in groups on the writing connection (see :mod:`..base._group_commit`)."""
        self._closed = False
        self._structure_checked = False

    @property
    def format_version(self) -> int:
        """The file's store format: as opened, or as our last write left it."""
        return self._format_version

    @contextlib.contextmanager
    def _using(self, *, to_read: bool = False) -> Iterator[sqlite3.Connection]:
        """The writing connection, or with ``to_read`` the reading one (committed rows only:
        never inside a write's transaction)."""
        with self._read_lock if to_read else self._lock:
            if self._closed:
                raise StoreClosedError(f"the store sqlite:{self._path}")
            try:
                yield self._read_conn if to_read and self._read_conn is not None else self._conn
            except sqlite3.DatabaseError as exc:
                if damaged(exc):
                    raise StoreCorruptError(self._path, f"sqlite: {exc}") from None
                raise

    def check_structure(self) -> list[str]:
        """What ``PRAGMA integrity_check`` finds wrong with the file (empty: nothing)."""
        try:
            with self._using() as conn:
                rows = conn.execute("PRAGMA integrity_check").fetchall()
        except StoreCorruptError as exc:  # (damage it cannot even walk past)
            return [exc.detail]
        return [] if [tuple(r) for r in rows] == [("ok",)] else [str(r[0]) for r in rows]

    def _check_before_writing(self) -> None:
        """Refuse to write into a damaged file (once per store: ``PRAGMA quick_check`` reads
        the whole file, ~70 ms for 100 MB): SQLite itself would write on into the pages it
        can still use, and damage may spread."""
        if self._structure_checked:
            return
        with self._using() as conn:
            rows = conn.execute("PRAGMA quick_check(1)").fetchall()
        if [tuple(r) for r in rows] != [("ok",)]:
            raise StoreCorruptError(self._path, f"PRAGMA quick_check: {rows[0][0]}")
        self._structure_checked = True

    @contextlib.contextmanager
    def transaction(self, *, writes: int = 0) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back if the body raises.

        ``writes``: the store format the rows the body writes need (see
        :func:`format_for`; 0: it writes none); an older file is upgraded in the same
        transaction (and stays as it was if the transaction is rolled back).
        """
        with self._using() as conn, self._begun(conn, writes):
            yield conn

    @contextlib.contextmanager
    def _begun(self, conn: sqlite3.Connection, writes: int) -> Iterator[None]:
        """:meth:`transaction` on ``conn``, whose lock the caller holds (the body may end it
        with ``ROLLBACK``: then nothing is committed, the file's format included)."""
        _begin_immediate(conn)
        upgrading = writes > self._format_version
        try:
            if upgrading:
                upgrade_in(conn, writes)
            yield
            if not conn.in_transaction:
                return  # (the body rolled back: the file is as it was)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if upgrading:
            self._format_version = writes
            self.select = select_records(has_system_seq(conn))
            self.select_snapshots = select_snapshots(has_snapshot_parts(conn))

    def _commit_group(self, group: list[QueuedAppend[_SqliteWriter]]) -> None:
        """Write ``group`` in one transaction on the writing connection (held: see
        :attr:`appends`), each append in a savepoint of its own."""
        conn = self._conn
        with self._begun(conn, max(format_for(queued.records) for queued in group)):
            for queued in group:
                queued.error = self._append_one(conn, queued)
            if all(queued.error is not None for queued in group):
                conn.execute("ROLLBACK")  # (nothing written: nor is the file's format upgraded)

    def _append_one(self, conn: sqlite3.Connection, queued: QueuedAppend[_SqliteWriter]) -> Exception | None:
        """Renew ``queued``'s lease and insert its records in a savepoint of the open
        transaction; what failed (the savepoint rolled back: the others' rows stay), or None."""
        thread_id = queued.writer.thread_id
        conn.execute("SAVEPOINT one_append")
        try:
            queued.writer.renew(conn)
            self.insert(conn, queued.records)
        except (LeaseLostError, sqlite3.IntegrityError):
            error: Exception = LeaseLostError(thread_id)
        except sqlite3.DatabaseError as exc:
            if damaged(exc):
                raise  # (the file, not this append: the whole group fails)
            error = LogWriteError(thread_id, f"sqlite: {exc}")
        else:
            conn.execute("RELEASE one_append")
            return None
        conn.execute("ROLLBACK TO one_append")
        conn.execute("RELEASE one_append")
        return error

    def _group_failed(self, thread_id: str, exc: BaseException) -> Exception | None:
        """The error of an append whose group's transaction failed with ``exc`` (None: not
        the store's; see :class:`GroupCommit`)."""
        if isinstance(exc, sqlite3.DatabaseError) and damaged(exc):
            return StoreCorruptError(self._path, f"sqlite: {exc}")
        if isinstance(exc, sqlite3.Error):
            return LogWriteError(thread_id, f"sqlite: {exc}")
        return None

    def insert(self, conn: sqlite3.Connection, records: list[StoredRecord]) -> None:
        """Insert ``records`` in a transaction that made the file the format they need."""
        if self._format_version >= STAMPED_FORMAT_VERSION or format_for(records) == STAMPED_FORMAT_VERSION:
            conn.executemany(INSERT_RECORD, [record_to_row(r) for r in records])
        else:  # (a file of an older format, kept so: no column system_seq, and no value for it)
            conn.executemany(INSERT_UNSTAMPED_RECORD, [record_to_row(r)[:-1] for r in records])

    # -- store level -------------------------------------------------------------------

    def list_threads(self) -> list[ThreadInfo]:
        infos = []
        with self._using(to_read=True) as conn:
            threads = conn.execute(
                "SELECT thread_id, created_at, forked_from, forked_at FROM threads"
                " ORDER BY thread_id"
            ).fetchall()
            for thread_id, created, forked_from, forked_at in threads:
                created_at = parse_time(created)
                try:
                    last_seq, last_sent = _committed_tail(conn, self.select, thread_id)
                except sqlite3.DatabaseError as exc:
                    if not damaged(exc):
                        raise
                    # its last record sits on a damaged page: list it anyway (reading it says
                    # what is damaged), its last seq taken from the index, which holds no record
                    last_seq = conn.execute("SELECT max(seq) FROM records WHERE thread_id = ?",
                                            (thread_id,)).fetchone()[0] or 0
                    last_sent = None
                activity = max(last_sent, created_at) if last_sent else created_at
                infos.append(
                    ThreadInfo(thread_id, last_seq, created_at, activity, forked_from, forked_at)
                )
        return infos

    def thread_exists(self, thread_id: str) -> bool:
        with self._using(to_read=True) as conn:
            return _exists(conn, thread_id)

    def _refused(self, thread_id: str, exc: sqlite3.Error) -> StoreReadOnlyError | LogWriteError:
        """What a failed write to ``thread_id`` means: a store that may only be read, or a
        write that failed (a full disk...)."""
        if refused_to_write(exc):
            return StoreReadOnlyError(self._path, f"sqlite: {exc}")
        if disk_full(os.path.dirname(self._path)):
            return LogWriteError(thread_id, f"sqlite: {exc}; {NO_SPACE}")
        return LogWriteError(thread_id, f"sqlite: {exc}")

    def open_writer(self, thread_id: str, create: bool, owner: str) -> _SqliteWriter:
        try:
            return self._open_writer(thread_id, create, owner)
        except sqlite3.Error as exc:
            raise self._refused(thread_id, exc) from None

    def _open_writer(self, thread_id: str, create: bool, owner: str) -> _SqliteWriter:
        self._check_before_writing()
        with self.transaction() as conn:  # (BEGIN IMMEDIATE: two processes taking a stale lease over wait here)
            if not _exists(conn, thread_id):
                if not create:
                    raise ThreadNotFoundError(thread_id)
                conn.execute(
                    "INSERT INTO threads (thread_id, created_at) VALUES (?, ?)",
                    (thread_id, format_time(dt.datetime.now(dt.timezone.utc))),
                )
            held = conn.execute(
                "SELECT owner, host, pid, start, renewed_at FROM leases WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
            token, me, now = new_lease(thread_id, owner, held)
            conn.execute(
                "INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (thread_id, token, me.owner, me.host, me.pid, me.start, now, now),
            )
        return repaired(_SqliteWriter(self, thread_id, token))

    def open_reader(self, thread_id: str) -> SqlReader[SqliteBackend]:
        return open_sql_reader(self, thread_id, self.thread_exists)

    def fork(self, src_thread: str, at_seq: int, new_thread: str) -> ThreadInfo:
        try:
            return self._fork(src_thread, at_seq, new_thread)
        except sqlite3.Error as exc:
            raise self._refused(new_thread, exc) from None

    def _fork(self, src_thread: str, at_seq: int, new_thread: str) -> ThreadInfo:
        self._check_before_writing()
        now = dt.datetime.now(dt.timezone.utc)
        with self._using(to_read=True) as conn:  # (the rows to copy are committed: they will not change)
            stamped = (self._format_version >= STAMPED_FORMAT_VERSION and conn.execute(
                "SELECT 1 FROM records WHERE thread_id = ? AND seq <= ? AND system_seq IS NOT NULL LIMIT 1",
                (src_thread, at_seq)).fetchone() is not None)
            parted = self._format_version >= PARTS_FORMAT_VERSION and conn.execute(
                "SELECT 1 FROM snapshots WHERE thread_id = ? AND seq <= ? AND parts != '' LIMIT 1",
                (src_thread, at_seq)).fetchone() is not None
        needs = PARTS_FORMAT_VERSION if parted else STAMPED_FORMAT_VERSION if stamped else UNSTAMPED_FORMAT_VERSION
        with self.transaction(writes=needs) as conn:
            if not _exists(conn, src_thread):
                raise ThreadNotFoundError(src_thread)
            last = _committed_last(conn, self.select, src_thread)
            if not 0 <= at_seq <= last:
                raise SeqOutOfRangeError(src_thread, at_seq, last, "cannot fork")
            if _exists(conn, new_thread):
                raise ThreadExistsError(new_thread)
            conn.execute(
                "INSERT INTO threads VALUES (?, ?, ?, ?)",
                (new_thread, format_time(now), src_thread, at_seq),
            )
            last_sent = copy_records(lambda start, end: _read_range(conn, self.select, src_thread, start, end),
                                     lambda records: self.insert(conn, records), new_thread, at_seq) or now
            snapshot = _latest_snapshot(conn, self.select, self.select_snapshots, src_thread, at_seq)
            if snapshot is not None:
                covered = _read_range(conn, self.select, new_thread, snapshot.seq, snapshot.seq)[0]
                copy_parts(conn, src_thread, new_thread, snapshot)
                self.upsert_snapshot(conn, rehome_snapshot(snapshot, new_thread, covered.checksum))
        activity = max(now, last_sent)
        return ThreadInfo(new_thread, at_seq, now, activity, src_thread, at_seq)

    def create_thread(self, info: ThreadInfo) -> None:
        try:
            self._check_before_writing()
            with self.transaction() as conn:
                if _exists(conn, info.thread_id):
                    raise ThreadExistsError(info.thread_id)
                conn.execute("INSERT INTO threads VALUES (?, ?, ?, ?)",
                             (info.thread_id, format_time(info.created_at), info.forked_from, info.forked_at))
        except sqlite3.Error as exc:
            raise self._refused(info.thread_id, exc) from None

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._read_conn is not None:
                with self._read_lock:  # (after a read under way)
                    self._read_conn.close()
            self._conn.close()  # (last: the last connection to close checkpoints the -wal away)

    # -- used by the handles -------------------------------------------------------------

    def read(self, thread_id: str, from_seq: int, to_seq: int) -> list[StoredRecord]:
        with self._using(to_read=True) as conn:
            return _read_range(conn, self.select, thread_id, from_seq, to_seq)

    def committed_last(self, thread_id: str) -> int:
        with self._using(to_read=True) as conn:
            return _committed_last(conn, self.select, thread_id)

    def latest_snapshot(self, thread_id: str, at_or_before: int) -> Snapshot | None:
        with self._using(to_read=True) as conn:
            return _latest_snapshot(conn, self.select, self.select_snapshots, thread_id, at_or_before)

    def read_parts(self, thread_id: str, keys: list[str]) -> list[bytes | None]:
        with self._using(to_read=True) as conn:
            return read_parts(conn, thread_id, keys) if self._format_version >= PARTS_FORMAT_VERSION else [None] * len(keys)

    def upsert_snapshot(self, conn: sqlite3.Connection, snapshot: Snapshot) -> None:
        """Write ``snapshot``'s row, in a transaction that made the file the format it needs."""
        if snapshot.parts or self._format_version >= PARTS_FORMAT_VERSION:  # (parts: made format 4)
            conn.execute(UPSERT_SNAPSHOT, snapshot_to_row(snapshot))
        else:  # (a file of an older format, kept so: no column parts, and a snapshot without)
            conn.execute(UPSERT_WHOLE_SNAPSHOT, snapshot_to_row(snapshot)[:-1])


def _exists(conn: sqlite3.Connection, thread_id: str) -> bool:
    row = conn.execute("SELECT 1 FROM threads WHERE thread_id = ?", (thread_id,)).fetchone()
    return row is not None


def format_for(records: list[StoredRecord]) -> int:
    """The store format ``records`` need: 3 if one has a system seq, else 2."""
    for record in records:
        if record.system_seq is not None:
            return STAMPED_FORMAT_VERSION
    return UNSTAMPED_FORMAT_VERSION


def _committed_tail(conn: sqlite3.Connection, select: str, thread_id: str) -> tuple[int, dt.datetime | None]:
    """The last seq and its ``sent_at`` (a transaction is whole or absent: every row is
    committed; a damaged one is reported when read)."""
    row = conn.execute(f"{select} ORDER BY seq DESC LIMIT 1", (thread_id,)).fetchone()
    if row is None:
        return 0, None
    try:
        sent = parse_time(row[3])
    except (ValueError, TypeError):
        sent = None  # damage: reported when read
    return _row_seq(row), sent


def _committed_last(conn: sqlite3.Connection, select: str, thread_id: str) -> int:
    """The last seq, not counting a torn last row (readers ignore it; writers drop it)."""
    return _committed_tail(conn, select, thread_id)[0]


def _read_range(
    conn: sqlite3.Connection, select: str, thread_id: str, from_seq: int, to_seq: int
) -> list[StoredRecord]:
    rows = conn.execute(
        f"{select} AND seq BETWEEN ? AND ? ORDER BY seq", (thread_id, from_seq, to_seq)
    ).fetchall()
    return contiguous(thread_id, from_seq, to_seq, (_decode(thread_id, row) for row in rows))


def _latest_snapshot(
    conn: sqlite3.Connection, select: str, select_snapshots: str, thread_id: str, at_or_before: int
) -> Snapshot | None:
    """The latest snapshot at or before ``at_or_before``, checked with the record it covers
    (``select``: how this file's records are read; ``select_snapshots``: its snapshots)."""
    row = conn.execute(
        f"{select_snapshots} AND seq <= ? ORDER BY seq DESC LIMIT 1",
        (thread_id, at_or_before),
    ).fetchone()
    if row is None:
        return None
    try:
        snapshot = snapshot_from_row(row)
    except (ValueError, TypeError) as exc:
        raise CorruptRecordError(thread_id, _snapshot_seq(row), str(exc), what="snapshot") from None
    snapshot.verify(_covered(conn, select, thread_id, snapshot.seq))
    return snapshot


def _covered(conn: sqlite3.Connection, select: str, thread_id: str, seq: int) -> StoredRecord | None:
    """The record at ``seq`` as stored (unchecked: :func:`check_snapshot` checks it), if any."""
    row = conn.execute(f"{select} AND seq = ?", (thread_id, seq)).fetchone()
    if row is None:
        return None
    try:
        return record_from_row(row)
    except (ValueError, TypeError) as exc:
        raise CorruptRecordError(thread_id, seq, f"undecodable row: {exc}") from None


def _snapshot_seq(row: tuple[object, ...]) -> int:
    return row[1] if isinstance(row[1], int) else -1


class _SqliteWriter(SqlReader[SqliteBackend]):
    def __init__(self, backend: SqliteBackend, thread_id: str, token: str) -> None:
        super().__init__(backend, thread_id)
        self._token = token
        self._last = 0
        self._snapshot_seq = 0
        self._closed = False
        self.repairs: list[Warning] = []

    def repair(self) -> None:
        """Check the last row, drop snapshots past the end; learn the last seqs."""
        with self._backend.transaction() as conn:
            self._last = self._repair_records(conn)
            self._snapshot_seq = self._repair_snapshots(conn)

    def _repair_records(self, conn: sqlite3.Connection) -> int:
        thread_id = self.thread_id
        last_record = f"{self._backend.select} ORDER BY seq DESC LIMIT 1"
        row = conn.execute(last_record, (thread_id,)).fetchone()
        if row is None:
            return 0
        # a transaction is whole or absent, so a last row that fails its checks was damaged
        # after it was committed: an error like any other damaged record, never dropped (and
        # never appended after: nor after a record of an unknown schema version)
        return _decode(thread_id, row).seq

    def _repair_snapshots(self, conn: sqlite3.Connection) -> int:
        thread_id = self.thread_id
        dropped = conn.execute(
            "DELETE FROM snapshots WHERE thread_id = ? AND seq > ?", (thread_id, self._last)
        ).rowcount
        if dropped:
            self.repairs.append(TornSnapshotWarning(thread_id, dropped, "past the log's end"))
        row = conn.execute(
            f"{self._backend.select_snapshots} ORDER BY seq DESC LIMIT 1",
            (thread_id,),
        ).fetchone()
        reason = None if row is None else _snapshot_problem(conn, self._backend.select, thread_id, row)
        if reason is not None:
            conn.execute(
                "DELETE FROM snapshots WHERE thread_id = ? AND seq = ?", (thread_id, row[1])
            )
            # (a transaction does not tear: a snapshot that fails its checks was damaged after)
            self.repairs.append(DamagedSnapshotWarning(thread_id, _snapshot_seq(row), reason))
        if (dropped or reason is not None) and self._backend.format_version >= PARTS_FORMAT_VERSION:
            drop_unused_parts(conn, thread_id)
        latest = conn.execute(
            "SELECT coalesce(max(seq), 0) FROM snapshots WHERE thread_id = ?", (thread_id,)
        ).fetchone()[0]
        return int(latest)

    def last_seq(self) -> int:
        return self._last

    def latest_snapshot_seq(self) -> int:
        return self._snapshot_seq

    def append(self, records: list[StoredRecord]) -> None:
        try:
            self._backend.appends.append(self, records)
        except sqlite3.Error as exc:
            raise LogWriteError(self.thread_id, f"sqlite: {exc}") from None
        self._last = records[-1].seq

    def write_snapshot(self, snapshot: Snapshot, new_parts: dict[str, bytes]) -> None:
        writes = PARTS_FORMAT_VERSION if snapshot.parts else UNSTAMPED_FORMAT_VERSION
        try:
            with self._backend.transaction(writes=writes) as conn:
                self.renew(conn)
                if snapshot.parts:
                    add_parts(conn, self.thread_id, snapshot.parts, new_parts)
                self._backend.upsert_snapshot(conn, snapshot)
                # a snapshot stands for the whole state: keeping every one would make storage
                # grow with the square of the thread; older seqs replay from an older kept one
                # or seq 1
                dropped = conn.execute(
                    "DELETE FROM snapshots WHERE thread_id = ? AND seq NOT IN "
                    "(SELECT seq FROM snapshots WHERE thread_id = ? ORDER BY seq DESC LIMIT ?)",
                    (self.thread_id, self.thread_id, KEEP_SNAPSHOTS),
                ).rowcount
                if dropped and writes >= PARTS_FORMAT_VERSION:
                    drop_unused_parts(conn, self.thread_id)
        except sqlite3.Error as exc:
            raise LogWriteError(self.thread_id, f"sqlite: {exc}") from None
        self._snapshot_seq = snapshot.seq

    def renew(self, conn: sqlite3.Connection) -> None:
        """Renew the lease in the open transaction; raise LeaseLostError if another took it."""
        renewed = conn.execute(
            "UPDATE leases SET renewed_at = ? WHERE thread_id = ? AND token = ?",
            (time.time(), self.thread_id, self._token),
        ).rowcount
        if renewed != 1:
            raise LeaseLostError(self.thread_id)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(StoreClosedError, sqlite3.Error):
            with self._backend.transaction() as conn:
                conn.execute(
                    "DELETE FROM leases WHERE thread_id = ? AND token = ?",
                    (self.thread_id, self._token),
                )


def _snapshot_problem(conn: sqlite3.Connection, select: str, thread_id: str,
                      row: tuple[object, ...]) -> str | None:
    """Why the latest snapshot's row is damaged, or None if it is sound (or the fault is the
    record it covers: reported when that record is read)."""
    try:
        snapshot = snapshot_from_row(row)
    except (ValueError, TypeError) as exc:
        return f"undecodable snapshot row: {exc}"
    try:
        covered = _covered(conn, select, thread_id, snapshot.seq)
    except CorruptRecordError:
        return None
    return snapshot_damage(snapshot, covered)


_KEYS_PER_QUERY = 400
"""Part keys bound per ``IN (...)`` (SQLite's limit of bound values is 999 in old builds)."""


def read_parts(conn: sqlite3.Connection, thread_id: str, keys: list[str]) -> list[bytes | None]:
    """The parts of ``thread_id`` with these keys (``None``: not stored), in ``keys``' order."""
    found: dict[str, bytes] = {}
    for start in range(0, len(keys), _KEYS_PER_QUERY):
        chunk = keys[start : start + _KEYS_PER_QUERY]
        found.update(conn.execute(
            f"SELECT key, data FROM snapshot_parts WHERE thread_id = ? AND key IN ({','.join('?' * len(chunk))})",
            (thread_id, *chunk)).fetchall())
    return [found.get(key) for key in keys]


def _held_parts(conn: sqlite3.Connection, thread_id: str) -> set[str]:
    return {key for (key,) in conn.execute("SELECT key FROM snapshot_parts WHERE thread_id = ?", (thread_id,))}


def add_parts(conn: sqlite3.Connection, thread_id: str, keys: tuple[str, ...], new_parts: dict[str, bytes]) -> None:
    """Store those of ``new_parts`` the thread does not hold, after checking that every one of
    ``keys`` will be held (in the caller's transaction)."""
    held = _held_parts(conn, thread_id)
    for key in keys:
        if key not in held and key not in new_parts:
            raise missing_part(thread_id, key)
    conn.executemany("INSERT INTO snapshot_parts (thread_id, key, data) VALUES (?, ?, ?)",
                     [(thread_id, key, data) for key, data in new_parts.items() if key not in held])


def drop_unused_parts(conn: sqlite3.Connection, thread_id: str) -> None:
    """Delete the parts of ``thread_id`` that none of its snapshots uses (in the caller's
    transaction)."""
    used = used_parts(parts.split(",") for (parts,) in conn.execute(
        "SELECT parts FROM snapshots WHERE thread_id = ? AND parts != ''", (thread_id,)))
    conn.executemany("DELETE FROM snapshot_parts WHERE thread_id = ? AND key = ?",
                     [(thread_id, key) for key in _held_parts(conn, thread_id) - used])


def copy_parts(conn: sqlite3.Connection, src_thread: str, new_thread: str, snapshot: Snapshot) -> None:
    """Copy the parts ``snapshot`` of ``src_thread`` uses to ``new_thread`` (in the caller's
    transaction, which made the file format 4 if the snapshot has parts).

    Raises:
        CorruptRecordError: a part is missing.
    """
    for key in snapshot.parts:
        copied = conn.execute(
            "INSERT OR IGNORE INTO snapshot_parts (thread_id, key, data) SELECT ?, key, data FROM snapshot_parts"
            " WHERE thread_id = ? AND key = ?", (new_thread, src_thread, key)).rowcount
        if not copied and not conn.execute("SELECT 1 FROM snapshot_parts WHERE thread_id = ? AND key = ?",
                                           (new_thread, key)).fetchone():
            raise CorruptRecordError(src_thread, snapshot.seq, f"its part {key} is missing", what="snapshot part")

"""The PostgreSQL backend: every thread in one database, shared by processes and machines.

It mirrors the SQLite backend (:mod:`..sqlite._sqlite`): the same tables (created on first use,
``CREATE TABLE IF NOT EXISTS`` under an advisory lock so that two processes opening a new
database do not race), the same single-writer lease, the same checks. Calls are blocking
psycopg 3 calls, run by the frontend in a worker thread, each on a connection borrowed from
a :class:`psycopg_pool.ConnectionPool`. Appends are committed in groups
(:mod:`..base._group_commit`): the appends of this process waiting to be written share one
transaction, and each is durable when it has committed (PostgreSQL's ``synchronous_commit``,
on by default).

The lease is a row in ``leases`` with a random token (the fencing token). Every append and
snapshot first renews the row *where the token is still ours* inside its transaction (a
group's appends renew theirs in one ``UPDATE``; only those renewed insert); the ``UPDATE``
locks the row until commit, so a writer that lost its lease (another took the
thread over after its holder died or stopped renewing) cannot append, not even once. A lease
is stale when its holder's process is gone (same host) or it was not renewed for
:data:`~..base._lease.LEASE_TTL_S` (another host), as with SQLite.

Payloads are stored as text: PostgreSQL compresses long values itself (TOAST).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import psycopg_pool
from psycopg.conninfo import conninfo_to_dict

from ..base import (
    CorruptRecordError,
    DamagedSnapshotWarning,
    GroupCommit,
    KEEP_SNAPSHOTS,
    LeaseLostError,
    LogWriteError,
    QueuedAppend,
    SeqOutOfRangeError,
    Snapshot,
    SqlReader,
    StoreClosedError,
    StoreFormatError,
    StoreOpenError,
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

STORE_FORMAT_VERSION = 1
"""The PostgreSQL store format this build writes (table ``livecontext_meta``)."""

_POOL_MAX = 4
"""Connections per store: one per worker thread that may be in a call at once (a step's
batch, a reader, a snapshot); more would only queue inside PostgreSQL."""
_CONNECT_TIMEOUT_S = 10

_TABLES = """
CREATE TABLE IF NOT EXISTS livecontext_meta (format_version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    forked_from TEXT,
    forked_at BIGINT
);
CREATE TABLE IF NOT EXISTS records (
    thread_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    sender TEXT NOT NULL,
    sent_at TEXT NOT NULL,
    sent_mono_ns BIGINT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    checksum TEXT NOT NULL,
    system_seq BIGINT,
    PRIMARY KEY (thread_id, seq)
);
CREATE TABLE IF NOT EXISTS snapshots (
    thread_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    state TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    checksum TEXT NOT NULL,
    parts TEXT,
    PRIMARY KEY (thread_id, seq)
);
CREATE TABLE IF NOT EXISTS snapshot_parts (
    thread_id TEXT NOT NULL,
    key TEXT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (thread_id, key)
);
CREATE TABLE IF NOT EXISTS leases (
    thread_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    start TEXT NOT NULL,
    acquired_at DOUBLE PRECISION NOT NULL,
    renewed_at DOUBLE PRECISION NOT NULL
)
"""

_SCHEMA_LOCK = 0x6C697665  # ("live"): the advisory lock held while creating the tables

_RECORD_COLUMNS = "seq, thread_id, sender, sent_at, sent_mono_ns, kind, payload, schema_version, checksum, system_seq"
_SELECT_RECORDS = f"SELECT {_RECORD_COLUMNS} FROM records WHERE thread_id = %s"
_INSERT_RECORD = f"INSERT INTO records ({_RECORD_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
_SNAPSHOT_COLUMNS = "thread_id, seq, state, schema_version, checksum, parts"
_SELECT_SNAPSHOTS = f"SELECT {_SNAPSHOT_COLUMNS} FROM snapshots WHERE thread_id = %s"
_UPSERT_SNAPSHOT = (
    f"INSERT INTO snapshots ({_SNAPSHOT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (thread_id, seq) DO UPDATE SET state = EXCLUDED.state,"
    " schema_version = EXCLUDED.schema_version, checksum = EXCLUDED.checksum, parts = EXCLUDED.parts"
)

Conn = psycopg.Connection[tuple[Any, ...]]


def describe_url(url: str) -> str:
    """``url`` with its password left out (it is shown in messages and ``store.url``)."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return url
    user = params.get("user")
    host = params.get("host") or "localhost"
    port = params.get("port") or "5432"
    db = params.get("dbname") or ""
    return f"postgresql://{f'{user}@' if user else ''}{host}:{port}/{db}"


def connect_error(url: str, exc: psycopg.Error) -> StoreOpenError:
    """One line saying why connecting to ``url`` failed and what to do."""
    text = " ".join(str(exc).split())
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:  # (libpq cannot read the URL itself)
        return StoreOpenError(url, f"not a PostgreSQL URL ({text})",
                              "write it as postgresql://USER@HOST:PORT/DATABASE ([::1] for an IPv6 host)")
    host = params.get("host") or "localhost"
    port = params.get("port") or "5432"
    where = describe_url(url)
    lowered = text.lower()
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        return StoreOpenError(where, f"PostgreSQL refused the password of user {params.get('user', '')!r}",
                              "check the password in the URL or in $PGPASSWORD / ~/.pgpass")
    if "does not exist" in lowered and "database" in lowered:
        return StoreOpenError(where, f"PostgreSQL at {host}:{port} has no database {params.get('dbname', '')!r}",
                              f"create it (createdb -h {host} -p {port} {params.get('dbname', '')}) or name another")
    if "role" in lowered and "does not exist" in lowered:
        user = params.get("user", "")
        return StoreOpenError(where, f"PostgreSQL at {host}:{port} has no role {user!r}",
                              f"create it (createuser -h {host} -p {port} {user}) or name another user in the URL")
    if "connection refused" in lowered or "could not connect" in lowered or "timeout" in lowered \
            or "no such file" in lowered or "resolve host" in lowered or "translate host name" in lowered:
        return StoreOpenError(where, f"cannot reach PostgreSQL at {host}:{port} ({_reason(text)})",
                              "start the server or check the host and port in the URL")
    return StoreOpenError(where, f"PostgreSQL: {text}")


def _reason(text: str) -> str:
    """Why libpq could not connect, in a few words (its message runs over several lines)."""
    lowered = text.lower()
    for marker, reason in (("connection refused", "connection refused"), ("timeout", "timed out"),
                           ("resolve host", "unknown host name"), ("translate host name", "unknown host name"),
                           ("no such file", "no server socket there")):
        if marker in lowered:
            return reason
    return text


def open_postgres(url: str) -> PostgresBackend:
    """Connect to ``url`` (a libpq URI; its password, or ``PG*`` variables), create the
    tables if the database has none, and return the backend.

    Raises:
        StoreOpenError: the server is unreachable, refuses the user or password, or has no
            such database (one line naming which).
        StoreFormatError: the database holds a store of another format.
    """
    try:
        probe = psycopg.connect(url, connect_timeout=_CONNECT_TIMEOUT_S, autocommit=True)
    except psycopg.Error as exc:
        raise connect_error(url, exc) from None
    with probe:
        _ensure_schema(probe, describe_url(url))
    pool = psycopg_pool.ConnectionPool(
        url, min_size=1, max_size=_POOL_MAX, open=False,
        kwargs={"connect_timeout": _CONNECT_TIMEOUT_S, "autocommit": True},  # (reads: one round trip)
        name="livecontext-store")
    try:
        pool.open(wait=True, timeout=_CONNECT_TIMEOUT_S)
    except psycopg_pool.PoolTimeout:
        pool.close()
        raise StoreOpenError(describe_url(url), "the connection pool could not connect in time") from None
    return PostgresBackend(pool, describe_url(url))


def _ensure_schema(conn: Conn, where: str) -> None:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        for statement in _TABLES.split(";"):
            conn.execute(statement)
        row = conn.execute("SELECT format_version FROM livecontext_meta").fetchone()
        if row is None:
            conn.execute("INSERT INTO livecontext_meta VALUES (%s)", (STORE_FORMAT_VERSION,))
        elif row[0] != STORE_FORMAT_VERSION:
            raise StoreFormatError(where, f"its store format is version {row[0]}, this build reads version "
                                          f"{STORE_FORMAT_VERSION}; use the livecontext that wrote it")


def _record_from_row(thread_id: str, row: tuple[Any, ...]) -> StoredRecord:
    seq, tid, sender, sent_at, mono, kind, payload, version, checksum, system_seq = row
    try:
        record = StoredRecord(seq=seq, thread_id=tid, sender=sender, sent_at=parse_time(sent_at),
                              sent_mono_ns=mono, kind=kind, payload=payload, schema_version=version,
                              checksum=checksum, system_seq=system_seq)
    except (ValueError, TypeError) as exc:
        raise CorruptRecordError(thread_id, seq, f"undecodable row: {exc}") from None
    return record


def _decode(thread_id: str, row: tuple[Any, ...]) -> StoredRecord:
    record = _record_from_row(thread_id, row)
    record.verify()
    return record


def _record_to_row(record: StoredRecord) -> tuple[Any, ...]:
    return (record.seq, record.thread_id, record.sender, format_time(record.sent_at), record.sent_mono_ns,
            record.kind, record.payload, record.schema_version, record.checksum, record.system_seq)


def _snapshot_from_row(row: tuple[Any, ...]) -> Snapshot:
    thread_id, seq, state, version, checksum, parts = row
    return Snapshot(thread_id, seq, state, version, checksum, tuple(parts.split(",")) if parts else ())


def _snapshot_to_row(snapshot: Snapshot) -> tuple[Any, ...]:
    return (snapshot.thread_id, snapshot.seq, snapshot.state, snapshot.schema_version, snapshot.checksum,
            ",".join(snapshot.parts) if snapshot.parts else None)


class PostgresBackend:
    """One PostgreSQL database; see the module docstring."""

    blocking = True

    def __init__(self, pool: psycopg_pool.ConnectionPool[Any], where: str) -> None:
        self._pool = pool
        self._where = where
        self._closed = False
        self._committing = threading.Lock()
        self.appends: GroupCommit[_PostgresWriter] = GroupCommit(
            lambda: self._committing, self._commit_group, self._group_failed)
        """Appends, committed in groups, one group at a time (see :mod:`..base._group_commit`)."""

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Conn]:
        """One transaction on a pooled connection: committed when the body returns, rolled
        back if it raises."""
        if self._closed:
            raise StoreClosedError(f"the store {self._where}")
        with self._pool.connection() as conn, conn.transaction():
            yield conn

    def _commit_group(self, group: list[QueuedAppend[_PostgresWriter]]) -> None:
        """Write ``group`` in one transaction: renew every lease in one ``UPDATE`` (the
        fencing check), insert the rows of the appends whose lease was renewed. If a row
        collides or two processes' groups deadlock on lease rows, that transaction is rolled
        back and each append is committed alone, so that only the one at fault fails."""
        try:
            with self.transaction() as conn:
                renewed = {token for (token,) in conn.execute(
                    "UPDATE leases SET renewed_at = %s FROM unnest(%s::text[], %s::text[]) AS ours(thread_id, token)"
                    " WHERE leases.thread_id = ours.thread_id AND leases.token = ours.token RETURNING leases.token",
                    (time.time(), [q.writer.thread_id for q in group], [q.writer.token for q in group])).fetchall()}
                for queued in group:
                    queued.error = None if queued.writer.token in renewed else LeaseLostError(queued.writer.thread_id)
                rows = [_record_to_row(r) for queued in group if queued.error is None for r in queued.records]
                if rows:
                    with conn.cursor() as cur:
                        cur.executemany(_INSERT_RECORD, rows)
        except (psycopg.errors.UniqueViolation, psycopg.errors.DeadlockDetected):
            for queued in group:
                queued.error = _append_alone(self, queued)

    def _group_failed(self, thread_id: str, exc: BaseException) -> Exception | None:
        """The error of an append whose group's transaction failed with ``exc`` (None: not
        the store's; see :class:`GroupCommit`)."""
        if isinstance(exc, psycopg.Error):
            return LogWriteError(thread_id, f"postgresql: {_one_line(exc)}")
        if isinstance(exc, StoreClosedError):
            return exc
        return None

    @contextlib.contextmanager
    def reading(self) -> Iterator[Conn]:
        """A pooled connection for reads of committed rows, each statement on its own (no
        ``BEGIN``/``COMMIT`` round trips: a committed row never changes)."""
        if self._closed:
            raise StoreClosedError(f"the store {self._where}")
        with self._pool.connection() as conn:
            yield conn

    def list_threads(self) -> list[ThreadInfo]:
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT t.thread_id, t.created_at, t.forked_from, t.forked_at, r.seq, r.sent_at"
                " FROM threads t LEFT JOIN LATERAL (SELECT seq, sent_at FROM records"
                " WHERE thread_id = t.thread_id ORDER BY seq DESC LIMIT 1) r ON true"
                " ORDER BY t.thread_id COLLATE \"C\"").fetchall()
        infos = []
        for thread_id, created, forked_from, forked_at, last_seq, last_sent in rows:
            created_at = parse_time(created)
            activity = created_at
            if last_sent is not None:
                with contextlib.suppress(ValueError, TypeError):
                    activity = max(parse_time(last_sent), created_at)
            infos.append(ThreadInfo(thread_id, last_seq or 0, created_at, activity, forked_from, forked_at))
        return infos

    def thread_exists(self, thread_id: str) -> bool:
        with self.reading() as conn:
            return _exists(conn, thread_id)

    def open_writer(self, thread_id: str, create: bool, owner: str) -> _PostgresWriter:
        try:
            return self._open_writer(thread_id, create, owner)
        except psycopg.Error as exc:
            raise LogWriteError(thread_id, f"postgresql: {_one_line(exc)}") from None

    def _open_writer(self, thread_id: str, create: bool, owner: str) -> _PostgresWriter:
        with self.transaction() as conn:
            if create:
                conn.execute("INSERT INTO threads (thread_id, created_at) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                             (thread_id, format_time(dt.datetime.now(dt.timezone.utc))))
            elif not _exists(conn, thread_id):
                raise ThreadNotFoundError(thread_id)
            # (FOR UPDATE: two processes taking a stale lease over wait for each other here)
            held = conn.execute(
                "SELECT owner, host, pid, start, renewed_at FROM leases WHERE thread_id = %s FOR UPDATE",
                (thread_id,)).fetchone()
            token, me, now = new_lease(thread_id, owner, held)
            conn.execute(
                "INSERT INTO leases VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (thread_id) DO UPDATE SET"
                " token = EXCLUDED.token, owner = EXCLUDED.owner, host = EXCLUDED.host, pid = EXCLUDED.pid,"
                " start = EXCLUDED.start, acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at",
                (thread_id, token, me.owner, me.host, me.pid, me.start, now, now))
        return repaired(_PostgresWriter(self, thread_id, token))

    def open_reader(self, thread_id: str) -> SqlReader[PostgresBackend]:
        return open_sql_reader(self, thread_id, self.thread_exists)

    def fork(self, src_thread: str, at_seq: int, new_thread: str) -> ThreadInfo:
        try:
            return self._fork(src_thread, at_seq, new_thread)
        except psycopg.Error as exc:
            raise LogWriteError(new_thread, f"postgresql: {_one_line(exc)}") from None

    def _fork(self, src_thread: str, at_seq: int, new_thread: str) -> ThreadInfo:
        now = dt.datetime.now(dt.timezone.utc)
        with self.transaction() as conn:
            if not _exists(conn, src_thread):
                raise ThreadNotFoundError(src_thread)
            last = _committed_last(conn, src_thread)
            if not 0 <= at_seq <= last:
                raise SeqOutOfRangeError(src_thread, at_seq, last, "cannot fork")
            created = conn.execute(
                "INSERT INTO threads VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (new_thread, format_time(now), src_thread, at_seq)).rowcount
            if created != 1:
                raise ThreadExistsError(new_thread)
            def insert(records: list[StoredRecord]) -> None:
                with conn.cursor() as cur:
                    cur.executemany(_INSERT_RECORD, [_record_to_row(r) for r in records])

            last_sent = copy_records(lambda start, end: _read_range(conn, src_thread, start, end), insert,
                                     new_thread, at_seq) or now
            snapshot = _latest_snapshot(conn, src_thread, at_seq)
            if snapshot is not None:
                covered = _read_range(conn, new_thread, snapshot.seq, snapshot.seq)[0]
                _copy_parts(conn, src_thread, new_thread, snapshot)
                conn.execute(_UPSERT_SNAPSHOT, _snapshot_to_row(rehome_snapshot(snapshot, new_thread, covered.checksum)))
        return ThreadInfo(new_thread, at_seq, now, max(now, last_sent), src_thread, at_seq)

    def create_thread(self, info: ThreadInfo) -> None:
        try:
            with self.transaction() as conn:
                created = conn.execute(
                    "INSERT INTO threads VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (info.thread_id, format_time(info.created_at), info.forked_from, info.forked_at)).rowcount
                if created != 1:
                    raise ThreadExistsError(info.thread_id)
        except psycopg.Error as exc:
            raise LogWriteError(info.thread_id, f"postgresql: {_one_line(exc)}") from None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pool.close()

    # -- used by the handles -------------------------------------------------------------

    def read(self, thread_id: str, from_seq: int, to_seq: int) -> list[StoredRecord]:
        with self.reading() as conn:
            return _read_range(conn, thread_id, from_seq, to_seq)

    def committed_last(self, thread_id: str) -> int:
        with self.reading() as conn:
            return _committed_last(conn, thread_id)

    def latest_snapshot(self, thread_id: str, at_or_before: int) -> Snapshot | None:
        with self.reading() as conn:
            return _latest_snapshot(conn, thread_id, at_or_before)

    def read_parts(self, thread_id: str, keys: list[str]) -> list[bytes | None]:
        with self.reading() as conn:
            found = dict(conn.execute("SELECT key, data FROM snapshot_parts WHERE thread_id = %s AND key = ANY(%s)",
                                      (thread_id, keys)).fetchall())
        return [bytes(found[key]) if key in found else None for key in keys]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _exists(conn: Conn, thread_id: str) -> bool:
    return conn.execute("SELECT 1 FROM threads WHERE thread_id = %s", (thread_id,)).fetchone() is not None


def _committed_last(conn: Conn, thread_id: str) -> int:
    row = conn.execute("SELECT max(seq) FROM records WHERE thread_id = %s", (thread_id,)).fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0


def _read_range(conn: Conn, thread_id: str, from_seq: int, to_seq: int) -> list[StoredRecord]:
    rows = conn.execute(f"{_SELECT_RECORDS} AND seq BETWEEN %s AND %s ORDER BY seq",
                        (thread_id, from_seq, to_seq)).fetchall()
    return contiguous(thread_id, from_seq, to_seq, (_decode(thread_id, row) for row in rows))


def _covered(conn: Conn, thread_id: str, seq: int) -> StoredRecord | None:
    row = conn.execute(f"{_SELECT_RECORDS} AND seq = %s", (thread_id, seq)).fetchone()
    return None if row is None else _record_from_row(thread_id, row)


def _latest_snapshot(conn: Conn, thread_id: str, at_or_before: int) -> Snapshot | None:
    row = conn.execute(f"{_SELECT_SNAPSHOTS} AND seq <= %s ORDER BY seq DESC LIMIT 1",
                       (thread_id, at_or_before)).fetchone()
    if row is None:
        return None
    snapshot = _snapshot_from_row(row)
    snapshot.verify(_covered(conn, thread_id, snapshot.seq))
    return snapshot


def _held_parts(conn: Conn, thread_id: str) -> set[str]:
    return {key for (key,) in conn.execute("SELECT key FROM snapshot_parts WHERE thread_id = %s", (thread_id,))}


def _drop_unused_parts(conn: Conn, thread_id: str) -> None:
    used = used_parts(parts.split(",") for (parts,) in conn.execute(
        "SELECT parts FROM snapshots WHERE thread_id = %s AND parts IS NOT NULL AND parts != ''", (thread_id,)))
    unused = list(_held_parts(conn, thread_id) - used)
    if unused:
        conn.execute("DELETE FROM snapshot_parts WHERE thread_id = %s AND key = ANY(%s)", (thread_id, unused))


def _copy_parts(conn: Conn, src_thread: str, new_thread: str, snapshot: Snapshot) -> None:
    if not snapshot.parts:
        return
    conn.execute("INSERT INTO snapshot_parts (thread_id, key, data) SELECT %s, key, data FROM snapshot_parts"
                 " WHERE thread_id = %s AND key = ANY(%s) ON CONFLICT DO NOTHING",
                 (new_thread, src_thread, list(snapshot.parts)))
    missing = set(snapshot.parts) - _held_parts(conn, new_thread)
    if missing:
        key = sorted(missing)[0]
        raise CorruptRecordError(src_thread, snapshot.seq, f"its part {key} is missing", what="snapshot part")


class _PostgresWriter(SqlReader[PostgresBackend]):
    def __init__(self, backend: PostgresBackend, thread_id: str, token: str) -> None:
        super().__init__(backend, thread_id)
        self.token = token
        """The lease's fencing token."""
        self._last = 0
        self._snapshot_seq = 0
        self._closed = False
        self.repairs: list[Warning] = []

    def repair(self) -> None:
        """Check the last record, drop snapshots past the end; learn the last seqs."""
        thread_id = self.thread_id
        with self._backend.transaction() as conn:
            row = conn.execute(f"{_SELECT_RECORDS} ORDER BY seq DESC LIMIT 1", (thread_id,)).fetchone()
            # (a committed row that fails its checks was damaged after: an error, never dropped)
            self._last = 0 if row is None else _decode(thread_id, row).seq
            dropped = conn.execute("DELETE FROM snapshots WHERE thread_id = %s AND seq > %s",
                                   (thread_id, self._last)).rowcount
            if dropped:
                self.repairs.append(TornSnapshotWarning(thread_id, dropped, "past the log's end"))
            row = conn.execute(f"{_SELECT_SNAPSHOTS} ORDER BY seq DESC LIMIT 1", (thread_id,)).fetchone()
            reason = None if row is None else _snapshot_problem(conn, thread_id, row)
            if reason is not None and row is not None:
                conn.execute("DELETE FROM snapshots WHERE thread_id = %s AND seq = %s", (thread_id, row[1]))
                self.repairs.append(DamagedSnapshotWarning(thread_id, row[1], reason))
            if dropped or reason is not None:
                _drop_unused_parts(conn, thread_id)
            latest = conn.execute("SELECT coalesce(max(seq), 0) FROM snapshots WHERE thread_id = %s",
                                  (thread_id,)).fetchone()
            self._snapshot_seq = int(latest[0]) if latest else 0

    def last_seq(self) -> int:
        return self._last

    def latest_snapshot_seq(self) -> int:
        return self._snapshot_seq

    def append(self, records: list[StoredRecord]) -> None:
        try:
            self._backend.appends.append(self, records)
        except psycopg.Error as exc:  # (in the thread that committed the group)
            raise LogWriteError(self.thread_id, f"postgresql: {_one_line(exc)}") from None
        self._last = records[-1].seq

    def write_snapshot(self, snapshot: Snapshot, new_parts: dict[str, bytes]) -> None:
        thread_id = self.thread_id
        try:
            with self._backend.transaction() as conn:
                self.renew(conn)
                if snapshot.parts:
                    held = _held_parts(conn, thread_id)
                    for key in snapshot.parts:
                        if key not in held and key not in new_parts:
                            raise missing_part(thread_id, key)
                    with conn.cursor() as cur:
                        cur.executemany("INSERT INTO snapshot_parts (thread_id, key, data) VALUES (%s, %s, %s)",
                                        [(thread_id, key, data) for key, data in new_parts.items() if key not in held])
                conn.execute(_UPSERT_SNAPSHOT, _snapshot_to_row(snapshot))
                # (only the newest are kept, as in SQLite: older seqs replay from a kept one)
                dropped = conn.execute(
                    "DELETE FROM snapshots WHERE thread_id = %s AND seq NOT IN "
                    "(SELECT seq FROM snapshots WHERE thread_id = %s ORDER BY seq DESC LIMIT %s)",
                    (thread_id, thread_id, KEEP_SNAPSHOTS)).rowcount
                if dropped:
                    _drop_unused_parts(conn, thread_id)
        except psycopg.Error as exc:
            raise LogWriteError(thread_id, f"postgresql: {_one_line(exc)}") from None
        self._snapshot_seq = snapshot.seq

    def renew(self, conn: Conn) -> None:
        """The fencing check: renew our lease row, in the caller's transaction, or raise."""
        renewed = conn.execute("UPDATE leases SET renewed_at = %s WHERE thread_id = %s AND token = %s",
                               (time.time(), self.thread_id, self.token)).rowcount
        if renewed != 1:
            raise LeaseLostError(self.thread_id)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(StoreClosedError, psycopg.Error):
            with self._backend.transaction() as conn:
                conn.execute("DELETE FROM leases WHERE thread_id = %s AND token = %s", (self.thread_id, self.token))


def _append_alone(backend: PostgresBackend, queued: QueuedAppend[_PostgresWriter]) -> Exception | None:
    """Commit one append in a transaction of its own; what kept it from it, or None."""
    writer = queued.writer
    try:
        with backend.transaction() as conn:
            writer.renew(conn)
            with conn.cursor() as cur:
                cur.executemany(_INSERT_RECORD, [_record_to_row(r) for r in queued.records])
    except LeaseLostError as exc:
        return exc
    except psycopg.errors.UniqueViolation:  # (rows at its seqs: another writer took the thread)
        return LeaseLostError(writer.thread_id)
    except psycopg.Error as exc:
        return LogWriteError(writer.thread_id, f"postgresql: {_one_line(exc)}")
    return None


def _snapshot_problem(conn: Conn, thread_id: str, row: tuple[Any, ...]) -> str | None:
    try:
        snapshot = _snapshot_from_row(row)
    except (ValueError, TypeError) as exc:
        return f"undecodable snapshot row: {exc}"
    try:
        covered = _covered(conn, thread_id, snapshot.seq)
    except CorruptRecordError:
        return None
    return snapshot_damage(snapshot, covered)

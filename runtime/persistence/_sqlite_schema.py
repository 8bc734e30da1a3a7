"""The SQLite store's tables, its format version, and how records map to rows.

One database file holds every thread. ``PRAGMA user_version`` holds the store's format
version (:data:`STORE_FORMAT_VERSION`); a database with another version, or with tables but
no version, is refused rather than guessed at.

- ``threads(thread_id, created_at, forked_from, forked_at)``: one row per thread.
- ``records(thread_id, seq, sender, sent_at, sent_mono_ns, kind, payload, schema_version,
  checksum)``, primary key ``(thread_id, seq)``: the log. Times are ISO 8601 UTC text.
- ``snapshots(thread_id, seq, state, schema_version, checksum)``, primary key
  ``(thread_id, seq)``.
- ``leases(thread_id, token, owner, host, pid, start, acquired_at, renewed_at)``: the
  single-writer lock of each thread being written; ``token`` identifies the holding writer.
"""

from __future__ import annotations

import sqlite3

from ._errors import StoreFormatError
from ._records import Snapshot, StoredRecord
from ._time import format_time, parse_time

STORE_FORMAT_VERSION = 1
"""The SQLite store layout this build writes and reads (``PRAGMA user_version``)."""

_TABLES = """
CREATE TABLE threads (
    thread_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    forked_from TEXT,
    forked_at INTEGER
);
CREATE TABLE records (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    sender TEXT NOT NULL,
    sent_at TEXT NOT NULL,
    sent_mono_ns INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    checksum TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
CREATE TABLE snapshots (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    state TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    checksum TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
CREATE TABLE leases (
    thread_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    start TEXT NOT NULL,
    acquired_at REAL NOT NULL,
    renewed_at REAL NOT NULL
);
"""

RECORD_COLUMNS = (
    "seq, thread_id, sender, sent_at, sent_mono_ns, kind, payload, schema_version, checksum"
)
INSERT_RECORD = f"INSERT INTO records ({RECORD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
SNAPSHOT_COLUMNS = "thread_id, seq, state, schema_version, checksum"
UPSERT_SNAPSHOT = f"INSERT OR REPLACE INTO snapshots ({SNAPSHOT_COLUMNS}) VALUES (?, ?, ?, ?, ?)"

RecordRow = tuple[int, str, str, str, int, str, str, int, str]
SnapshotRow = tuple[str, int, str, int, str]


def ensure_schema(conn: sqlite3.Connection, path: str) -> None:
    """Create the tables in an empty database, or check an existing store's version.

    Raises:
        StoreFormatError: the database has another format version, or is not a store.
    """
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == STORE_FORMAT_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]  # another process may
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]  # have won
        if version == 0 and tables == 0:
            for statement in _TABLES.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {STORE_FORMAT_VERSION}")
        elif version == 0:
            raise StoreFormatError(path, "it is an SQLite database but not a livecontext store")
        elif version != STORE_FORMAT_VERSION:
            raise StoreFormatError(
                path,
                f"its store format is version {version}, this build reads version "
                f"{STORE_FORMAT_VERSION}; upgrade livecontext to open it",
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def record_to_row(record: StoredRecord) -> RecordRow:
    """The ``records`` row of ``record``, in :data:`RECORD_COLUMNS` order."""
    return (
        record.seq,
        record.thread_id,
        record.sender,
        format_time(record.sent_at),
        record.sent_mono_ns,
        record.kind,
        record.payload,
        record.schema_version,
        record.checksum,
    )


def _expect(value: object, kind: type, column: str) -> None:
    if isinstance(value, bool) or not isinstance(value, kind):
        raise ValueError(f"column {column} holds a {type(value).__name__}, not {kind.__name__}")


def record_from_row(row: tuple[object, ...]) -> StoredRecord:
    """The record in a ``records`` row (raises ``ValueError`` on a malformed row)."""
    names = RECORD_COLUMNS.split(", ")
    kinds = (int, str, str, str, int, str, str, int, str)
    for value, kind, name in zip(row, kinds, names, strict=True):
        _expect(value, kind, name)
    seq, thread_id, sender, sent_at, mono, kind_, payload, version, checksum = row
    return StoredRecord(
        seq=seq,  # type: ignore[arg-type]
        thread_id=thread_id,  # type: ignore[arg-type]
        sender=sender,  # type: ignore[arg-type]
        sent_at=parse_time(sent_at),  # type: ignore[arg-type]
        sent_mono_ns=mono,  # type: ignore[arg-type]
        kind=kind_,  # type: ignore[arg-type]
        payload=payload,  # type: ignore[arg-type]
        schema_version=version,  # type: ignore[arg-type]
        checksum=checksum,  # type: ignore[arg-type]
    )


def snapshot_to_row(snapshot: Snapshot) -> SnapshotRow:
    """The ``snapshots`` row of ``snapshot``, in :data:`SNAPSHOT_COLUMNS` order."""
    return (
        snapshot.thread_id,
        snapshot.seq,
        snapshot.state,
        snapshot.schema_version,
        snapshot.checksum,
    )


def snapshot_from_row(row: tuple[object, ...]) -> Snapshot:
    """The snapshot in a ``snapshots`` row (raises ``ValueError`` on a malformed row)."""
    for value, kind, name in zip(
        row, (str, int, str, int, str), SNAPSHOT_COLUMNS.split(", "), strict=True
    ):
        _expect(value, kind, name)
    return Snapshot(*row)  # type: ignore[arg-type]

"""The SQLite store's tables, its format version, and how records map to rows.

One database file holds every thread. ``PRAGMA user_version`` holds the store's format
version (:data:`STORE_FORMAT_VERSION`); a database with another version, or with tables but
no version, is refused rather than guessed at.

- ``threads(thread_id, created_at, forked_from, forked_at)``: one row per thread.
- ``records(thread_id, seq, sender, sent_at, sent_mono_ns, kind, payload, schema_version,
  checksum, system_seq)``, primary key ``(thread_id, seq)``: the log. Times are ISO 8601 UTC
  text; ``system_seq`` is NULL for a record of a thread that belongs to no system.
- ``snapshots(thread_id, seq, state, schema_version, checksum, parts)``, primary key
  ``(thread_id, seq)``; ``parts`` is the keys of the snapshot's parts joined by commas (NULL
  or empty for a snapshot kept whole in ``state``).
- ``snapshot_parts(thread_id, key, data)``, primary key ``(thread_id, key)``: each part of the
  kept snapshots of a thread, once (see :mod:`..base._parts`).
- ``leases(thread_id, token, owner, host, pid, start, acquired_at, renewed_at)``: the
  single-writer lock of each thread being written; ``token`` identifies the holding writer.

Format 2 (this one) keeps the tables of format 1 and adds two ways to store a value, told
apart by its SQLite storage class (see :mod:`._compression`): a payload or state may be a
BLOB (zlib-compressed text) and a checksum a BLOB (its 32 bytes). Every format-1 row is a
format-2 row, so a format-1 file is read as it is; the first transaction that writes a
record or a snapshot to it sets its version to 2 (:func:`upgrade_in`), so that an older build
refuses it instead of misreading a BLOB.

Format 3 adds the column ``records.system_seq`` (see :mod:`.._clock`), hashed into
the checksum of a record that has one: an older build would call such a record corrupt. A
format-1 or format-2 file stays as it is (no column: every record reads with no system seq)
until a transaction writes a record that has a system seq (a system of agents runs on it): that
transaction adds the column (NULL in every row before) and makes the file format 3. Any other
first write of a record or a snapshot makes a format-1 file format 2, as before.

Format 4 adds the table ``snapshot_parts`` and the column ``snapshots.parts``: a snapshot
whose entries are kept in parts, which an older build would read as a thread without entries.
An older file stays as it is until a transaction writes such a snapshot: that transaction
adds the table and the column (and ``records.system_seq``, if missing) and makes the file
format 4. A new file is format 4 from the start.
"""

from __future__ import annotations

import sqlite3

from ..base import Snapshot, StoreFormatError, StoredRecord, format_time, parse_time
from ._compression import pack_checksum, pack_text, unpack_checksum, unpack_text

STORE_FORMAT_VERSION = 4
"""The SQLite store format this build writes (``PRAGMA user_version``)."""
PARTS_FORMAT_VERSION = 4
"""The format a snapshot with parts needs (table ``snapshot_parts``, column ``snapshots.parts``)."""
STAMPED_FORMAT_VERSION = 3
"""The format records with a system seq need (column ``records.system_seq``)."""
UNSTAMPED_FORMAT_VERSION = 2
"""The format rows without a system seq need (an older file with no system is kept at it)."""
READABLE_FORMAT_VERSIONS = (1, 2, 3, 4)
"""The formats this build opens: formats 1 and 2 are read as they are and upgraded by the
first write."""

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
    system_seq INTEGER,
    PRIMARY KEY (thread_id, seq)
);
CREATE TABLE snapshots (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    state TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    checksum TEXT NOT NULL,
    parts TEXT,
    PRIMARY KEY (thread_id, seq)
);
CREATE TABLE snapshot_parts (
    thread_id TEXT NOT NULL,
    key TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (thread_id, key)
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

_UNSTAMPED_COLUMNS = "seq, thread_id, sender, sent_at, sent_mono_ns, kind, payload, schema_version, checksum"
RECORD_COLUMNS = f"{_UNSTAMPED_COLUMNS}, system_seq"
INSERT_RECORD = f"INSERT INTO records ({RECORD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
INSERT_UNSTAMPED_RECORD = f"INSERT INTO records ({_UNSTAMPED_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
"""For a file without the column ``system_seq`` (rows: ``record_to_row(r)[:-1]``)."""


def select_records(has_system_seq: bool) -> str:
    """``SELECT`` of the :data:`RECORD_COLUMNS` of one thread's records (``NULL`` for
    ``system_seq`` in a file without the column); bind the thread id."""
    return f"SELECT {_UNSTAMPED_COLUMNS}, {'system_seq' if has_system_seq else 'NULL'} FROM records WHERE thread_id = ?"
SNAPSHOT_COLUMNS = "thread_id, seq, state, schema_version, checksum"
UPSERT_SNAPSHOT = f"INSERT OR REPLACE INTO snapshots ({SNAPSHOT_COLUMNS}, parts) VALUES (?, ?, ?, ?, ?, ?)"
UPSERT_WHOLE_SNAPSHOT = f"INSERT OR REPLACE INTO snapshots ({SNAPSHOT_COLUMNS}) VALUES (?, ?, ?, ?, ?)"
"""For a file without the column ``parts`` (rows: ``snapshot_to_row(s)[:-1]``, no parts)."""


def select_snapshots(has_parts: bool) -> str:
    """``SELECT`` of the :data:`SNAPSHOT_COLUMNS` and ``parts`` (``NULL`` in a file without the
    column) of one thread's snapshots; bind the thread id."""
    return f"SELECT {SNAPSHOT_COLUMNS}, {'parts' if has_parts else 'NULL'} FROM snapshots WHERE thread_id = ?"


RecordRow = tuple[int, str, str, str, int, str, str | bytes, int, bytes, int | None]
SnapshotRow = tuple[str, int, str | bytes, int, bytes, str | None]


def ensure_schema(conn: sqlite3.Connection, path: str) -> int:
    """Create the tables in an empty database, or check an existing store's version.

    Returns:
        The store's format version, one of :data:`READABLE_FORMAT_VERSIONS`.

    Raises:
        StoreFormatError: the database has another format version, or is not a store.
    """
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version in READABLE_FORMAT_VERSIONS:
        return int(version)
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]  # another process may
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]  # have won
        if version == 0 and tables == 0:
            for statement in _TABLES.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {STORE_FORMAT_VERSION}")
            version = STORE_FORMAT_VERSION
        elif version == 0:
            raise StoreFormatError(path, "it is an SQLite database but not a livecontext store")
        elif version not in READABLE_FORMAT_VERSIONS:
            raise StoreFormatError(
                path,
                f"its store format is version {version}, this build reads versions "
                f"{READABLE_FORMAT_VERSIONS[0]} to {STORE_FORMAT_VERSION}; upgrade livecontext to open it",
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return int(version)


def has_system_seq(conn: sqlite3.Connection) -> bool:
    """Whether the file's ``records`` table has the column ``system_seq`` (format 3)."""
    return any(row[1] == "system_seq" for row in conn.execute("PRAGMA table_info(records)"))


def has_snapshot_parts(conn: sqlite3.Connection) -> bool:
    """Whether the file has the table ``snapshot_parts`` and the column ``snapshots.parts``
    (format 4)."""
    return any(row[1] == "parts" for row in conn.execute("PRAGMA table_info(snapshots)"))


def upgrade_in(conn: sqlite3.Connection, version: int) -> None:
    """Make the store format ``version`` (adding ``records.system_seq`` for format 3, the
    snapshot parts for format 4), in the caller's transaction: the one about to write the
    first row that the file's format cannot hold."""
    if version >= STAMPED_FORMAT_VERSION and not has_system_seq(conn):
        conn.execute("ALTER TABLE records ADD COLUMN system_seq INTEGER")
    if version >= PARTS_FORMAT_VERSION and not has_snapshot_parts(conn):
        conn.execute("ALTER TABLE snapshots ADD COLUMN parts TEXT")
        conn.execute("CREATE TABLE IF NOT EXISTS snapshot_parts (thread_id TEXT NOT NULL, key TEXT NOT NULL,"
                     " data BLOB NOT NULL, PRIMARY KEY (thread_id, key))")
    conn.execute(f"PRAGMA user_version = {version}")


def record_to_row(record: StoredRecord) -> RecordRow:
    """The ``records`` row of ``record``, in :data:`RECORD_COLUMNS` order."""
    return (
        record.seq,
        record.thread_id,
        record.sender,
        format_time(record.sent_at),
        record.sent_mono_ns,
        record.kind,
        pack_text(record.payload),
        record.schema_version,
        pack_checksum(record.checksum),
        record.system_seq,
    )


def _expect(value: object, kind: type, column: str) -> None:
    if isinstance(value, bool) or not isinstance(value, kind):
        raise ValueError(f"column {column} holds a {type(value).__name__}, not {kind.__name__}")


_RECORD_TYPES = tuple(zip((int, str, str, str, int, str, None, int, None, None), RECORD_COLUMNS.split(", "),
                         strict=True))
"""Each column's type, or None for those checked apart (payload, checksum: the codec;
system_seq: an int or NULL)."""


def record_from_row(row: tuple[object, ...]) -> StoredRecord:
    """The record in a ``records`` row (raises ``ValueError`` on a malformed row, or on a
    compressed payload that does not decompress)."""
    for value, (kind, name) in zip(row, _RECORD_TYPES, strict=True):
        if kind is not None:
            _expect(value, kind, name)
    seq, thread_id, sender, sent_at, mono, kind_, payload, version, checksum, system_seq = row
    if system_seq is not None:
        _expect(system_seq, int, "system_seq")
    return StoredRecord(
        seq=seq,  # type: ignore[arg-type]
        thread_id=thread_id,  # type: ignore[arg-type]
        sender=sender,  # type: ignore[arg-type]
        sent_at=parse_time(sent_at),  # type: ignore[arg-type]
        sent_mono_ns=mono,  # type: ignore[arg-type]
        kind=kind_,  # type: ignore[arg-type]
        payload=unpack_text(payload, "payload"),
        schema_version=version,  # type: ignore[arg-type]
        checksum=unpack_checksum(checksum),
        system_seq=system_seq,  # type: ignore[arg-type]
    )


def snapshot_to_row(snapshot: Snapshot) -> SnapshotRow:
    """The ``snapshots`` row of ``snapshot``, in :data:`SNAPSHOT_COLUMNS` order."""
    return (
        snapshot.thread_id,
        snapshot.seq,
        pack_text(snapshot.state),
        snapshot.schema_version,
        pack_checksum(snapshot.checksum),
        ",".join(snapshot.parts) if snapshot.parts else None,
    )


def snapshot_from_row(row: tuple[object, ...]) -> Snapshot:
    """The snapshot in a ``snapshots`` row, as :func:`select_snapshots` reads it (raises
    ``ValueError`` on a malformed row, or on a compressed state that does not decompress)."""
    for value, kind, name in zip(
        row[:5], (str, int, None, int, None), SNAPSHOT_COLUMNS.split(", "), strict=True
    ):
        if kind is not None:
            _expect(value, kind, name)
    thread_id, seq, state, version, checksum = row[:5]
    parts = row[5] if len(row) > 5 else None
    if parts is not None and not isinstance(parts, str):
        raise ValueError(f"column parts holds a {type(parts).__name__}, not str")
    return Snapshot(
        thread_id,  # type: ignore[arg-type]
        seq,  # type: ignore[arg-type]
        unpack_text(state, "state"),
        version,  # type: ignore[arg-type]
        unpack_checksum(checksum),
        tuple(parts.split(",")) if parts else (),
    )

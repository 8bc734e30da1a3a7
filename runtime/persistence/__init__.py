"""The event log: one append-only, checksummed log of records per thread, with one writer.

Open a store with :func:`open_store` (``sqlite:PATH``, ``jsonl:DIR``, ``memory:`` or
``postgresql://USER@HOST:PORT/DB``), then a
thread for writing with :meth:`EventStore.open_thread` (which takes the thread's
single-writer lock, across processes) or for reading with :meth:`EventStore.open_reader`::

    async with await open_store(default_store_url()) as store:
        async with await store.open_thread("agent-1", owner="history:agent-1") as log:
            await log.append([NewRecord(sender, sent_at, mono_ns, "entry", payload_json)])
            records = await log.read(from_seq=1)

The threads of a system of agents share a :class:`SystemClock`: each record appended to any
of them carries the system's next number (``system_seq``), so the records of all of them can
be ordered, and the system cut at one point.

The log stores JSON text and never looks inside it: the layer above serializes payloads and
snapshot states, and decides when to snapshot. See DESIGN.md, "State, durability and the
event log".

Each backend has its folder (``jsonl/``, ``sqlite/``, ``postgres/``, ``memory/``), built on
``base/`` (the records, the errors, the ``Backend`` protocol, the lease); the modules here are
the front every backend is driven through (the async store, the URL opener, copy, salvage and
verify).
"""

from __future__ import annotations

from ._clock import SystemClock
from .base import (
    CorruptRecordError,
    DamagedSnapshotWarning,
    FSYNC_ENV_VAR,
    FsyncLevel,
    FsyncLevelError,
    InvalidRecordError,
    InvalidThreadIdError,
    LEASE_TTL_S,
    LeaseLostError,
    LogWriteError,
    NewRecord,
    PersistenceError,
    SeqOutOfRangeError,
    Snapshot,
    SnapshotOrderError,
    StoreClosedError,
    StoreCorruptError,
    StoreFormatError,
    StoreOpenError,
    StoreReadOnlyError,
    StoreUrlError,
    StoredRecord,
    ThreadExistsError,
    ThreadInfo,
    ThreadLockedError,
    ThreadNotFoundError,
    TornRecordWarning,
    TornSnapshotWarning,
    TornTailWarning,
    UnsupportedRecordVersionError,
    record_checksum,
    snapshot_checksum,
)
from ._copy import ThreadCopy, copy_thread
from ._interface import EventStore, ThreadLog, ThreadReader
from ._url import DEFAULT_STORE_PATH, STORE_ENV_VAR, default_store_url, open_store
from ._salvage import Damage, read_past_damage
from ._verify import Problem, StoreCheck, verify_store

__all__ = [
    "DEFAULT_STORE_PATH",
    "FSYNC_ENV_VAR",
    "LEASE_TTL_S",
    "STORE_ENV_VAR",
    "CorruptRecordError",
    "Damage",
    "DamagedSnapshotWarning",
    "EventStore",
    "FsyncLevel",
    "FsyncLevelError",
    "InvalidRecordError",
    "InvalidThreadIdError",
    "LeaseLostError",
    "LogWriteError",
    "NewRecord",
    "PersistenceError",
    "Problem",
    "SeqOutOfRangeError",
    "Snapshot",
    "StoreCheck",
    "SnapshotOrderError",
    "StoreClosedError",
    "StoreCorruptError",
    "StoreFormatError",
    "StoreOpenError",
    "StoreReadOnlyError",
    "StoreUrlError",
    "StoredRecord",
    "SystemClock",
    "ThreadCopy",
    "ThreadExistsError",
    "ThreadInfo",
    "ThreadLockedError",
    "ThreadLog",
    "ThreadNotFoundError",
    "ThreadReader",
    "TornRecordWarning",
    "TornSnapshotWarning",
    "TornTailWarning",
    "UnsupportedRecordVersionError",
    "copy_thread",
    "default_store_url",
    "open_store",
    "read_past_damage",
    "record_checksum",
    "snapshot_checksum",
    "verify_store",
]

"""What the store's front and every backend are built on: the records and their checksums, the
store's errors, the :class:`Backend` protocol a backend implements, the single-writer lease,
snapshot parts, fsync levels, group commit and the stored form of times.

The backends (``jsonl/``, ``sqlite/``, ``postgres/``, ``memory/``) and the front
(:mod:`livecontext.runtime.persistence`: the async :class:`EventStore` over a backend, the URL
opener, copy, salvage and verify) import these from here; users import the public ones from
:mod:`livecontext.runtime.persistence`.
"""

from __future__ import annotations

from ._backend import Backend, SqlReader, ThreadHandle, WriterHandle
from ._errors import (
    CorruptRecordError,
    DamagedSnapshotWarning,
    FsyncLevelError,
    InvalidRecordError,
    InvalidThreadIdError,
    LeaseLostError,
    LogWriteError,
    PersistenceError,
    SeqOutOfRangeError,
    SnapshotOrderError,
    StoreClosedError,
    StoreCorruptError,
    StoreFormatError,
    StoreOpenError,
    StoreReadOnlyError,
    StoreUrlError,
    ThreadExistsError,
    ThreadLockedError,
    ThreadNotFoundError,
    TornRecordWarning,
    TornSnapshotWarning,
    TornTailWarning,
    UnsupportedRecordVersionError,
)
from ._fsync import FSYNC_ENV_VAR, FsyncLevel, resolve_fsync
from ._group_commit import GroupCommit, QueuedAppend
from ._lease import Holder, LEASE_TTL_S, current_holder, holder_alive
from ._parts import check_new_parts, checked_parts, is_part_key, missing_part, used_parts
from ._records import (
    KEEP_SNAPSHOTS,
    NewRecord,
    Snapshot,
    StoredRecord,
    ThreadInfo,
    check_thread_id,
    checksum_matches,
    contiguous,
    record_checksum,
    rehome,
    rehome_snapshot,
    seal_records,
    seal_snapshot,
    snapshot_checksum,
    snapshot_damage,
    supported_version,
)
from ._sql import FORK_CHUNK, copy_records, new_lease, open_sql_reader, repaired
from ._time import format_time, parse_time

__all__ = [
    "FORK_CHUNK",
    "copy_records",
    "new_lease",
    "open_sql_reader",
    "repaired",
    "Backend",
    "CorruptRecordError",
    "DamagedSnapshotWarning",
    "FSYNC_ENV_VAR",
    "FsyncLevel",
    "FsyncLevelError",
    "GroupCommit",
    "Holder",
    "InvalidRecordError",
    "InvalidThreadIdError",
    "KEEP_SNAPSHOTS",
    "LEASE_TTL_S",
    "LeaseLostError",
    "LogWriteError",
    "NewRecord",
    "PersistenceError",
    "QueuedAppend",
    "SeqOutOfRangeError",
    "Snapshot",
    "SnapshotOrderError",
    "SqlReader",
    "StoreClosedError",
    "StoreCorruptError",
    "StoreFormatError",
    "StoreOpenError",
    "StoreReadOnlyError",
    "StoreUrlError",
    "StoredRecord",
    "ThreadExistsError",
    "ThreadHandle",
    "ThreadInfo",
    "ThreadLockedError",
    "ThreadNotFoundError",
    "TornRecordWarning",
    "TornSnapshotWarning",
    "TornTailWarning",
    "UnsupportedRecordVersionError",
    "WriterHandle",
    "check_new_parts",
    "check_thread_id",
    "checked_parts",
    "checksum_matches",
    "contiguous",
    "current_holder",
    "format_time",
    "holder_alive",
    "is_part_key",
    "missing_part",
    "parse_time",
    "record_checksum",
    "rehome",
    "rehome_snapshot",
    "resolve_fsync",
    "seal_records",
    "seal_snapshot",
    "snapshot_checksum",
    "snapshot_damage",
    "supported_version",
    "used_parts",
]

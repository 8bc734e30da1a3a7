"""What the event log stores: records, snapshots, thread summaries, and their checksums.

The log is payload-agnostic: a record's ``payload`` and a snapshot's ``state`` are JSON text
made by the layer above, stored and returned byte for byte.

Checksums are SHA-256 (hex) over a canonical encoding of every other field, so that any
implementation can recompute them: a domain tag (``b"livecontext-record\\0"`` or
``b"livecontext-snapshot\\0"``), then each field as ``b"<length>:"`` followed by its UTF-8
bytes, where integers are written in decimal and times as ISO 8601 UTC with microseconds
(``2024-05-01T12:00:00.000000+00:00``). Records: schema_version, thread_id, seq, sender,
sent_at, sent_mono_ns, kind, payload, then, for a record of a system's thread (see
:class:`~.._clock.SystemClock`), system_seq; a record without one is hashed as before system
seqs existed. Snapshots: schema_version, thread_id, seq, state, then the checksum of the
record at the snapshot's seq, then, for a snapshot whose entries are kept in parts (see
:mod:`._parts`), each part's key, under the tag ``b"livecontext-snapshot-covering\\0"`` (a
snapshot written before snapshots committed to their record has the first tag, no record
checksum and no parts: it is still read).

Records are sealed (numbered and checksummed) by :func:`seal_records` when they are
appended, so a :class:`StoredRecord` always carries its checksum, whichever backend keeps it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Sequence

from attrs import evolve, field, frozen
from livecontext.protocol import (
    SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    UnsupportedSchemaVersionError,
    check_schema_version,
    dump_json,
    dump_standard_json,
    load_json,
    thread_id_problem,
)

from ._errors import CorruptRecordError, InvalidRecordError, InvalidThreadIdError, UnsupportedRecordVersionError
from ._time import format_time

_INT64 = (-(2**63), 2**63 - 1)


def _to_utc(value: dt.datetime) -> dt.datetime:
    if not isinstance(value, dt.datetime):
        raise InvalidRecordError(f"sent_at must be a datetime, got {type(value).__name__}")
    if value.tzinfo is dt.timezone.utc:
        return value
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidRecordError(
            f"sent_at {value.isoformat()} has no time zone; pass an aware UTC datetime "
            "such as datetime.now(timezone.utc)"
        )
    return value.astimezone(dt.timezone.utc)


@frozen
class NewRecord:
    """A record to append: the log gives it its seq, thread id, schema version and checksum.

    Make one with :meth:`encoding` when the payload is a JSON value you have not encoded yet:
    the log then trusts the text it made, instead of parsing it again to check it.
    """

    sender: str
    """The id of the actor whose state change this is."""
    sent_at: dt.datetime = field(converter=_to_utc)
    """UTC wall-clock time of sending (an aware datetime; converted to UTC)."""
    sent_mono_ns: int
    """Monotonic clock of sending, in nanoseconds (orders events within one process)."""
    kind: str
    """What the payload is, for readers that filter without decoding (e.g. ``"entry"``)."""
    payload: str
    """The record itself, as JSON text serialized by the layer above."""
    _encoded: bool = field(default=False, kw_only=True, alias="_encoded", eq=False, repr=False)
    """Whether :meth:`encoding` made ``payload`` (standard JSON by construction), so that
    sealing need not parse it again. Only :meth:`encoding` passes it (the keyword is private):
    text made elsewhere is checked when it is appended."""

    @classmethod
    def encoding(cls, sender: str, sent_at: dt.datetime, sent_mono_ns: int, kind: str,
                 value: object) -> NewRecord:
        """A record whose payload is ``value`` (JSON data) encoded here.

        Text that does not encode cleanly (see :func:`dump_standard_json`) is encoded as
        :func:`dump_json` does and checked when appended, as text made elsewhere is.
        """
        text = dump_standard_json(value)
        if text is None:
            return cls(sender, sent_at, sent_mono_ns, kind, dump_json(value))
        return cls(sender, sent_at, sent_mono_ns, kind, text, _encoded=True)


@frozen
class StoredRecord:
    """A committed record, as :meth:`ThreadReader.read` returns it."""

    seq: int
    """Position in its thread: 1 for the first record, contiguous."""
    thread_id: str
    """The thread the record belongs to."""
    sender: str
    """The id of the actor whose state change this is."""
    sent_at: dt.datetime = field(converter=_to_utc)
    """UTC wall-clock time of sending."""
    sent_mono_ns: int
    """Monotonic clock of sending, in nanoseconds."""
    kind: str
    """What the payload is."""
    payload: str
    """The record itself, as JSON text."""
    schema_version: int
    """The protocol schema version the payload was written with."""
    checksum: str
    """SHA-256 hex of the other fields, as :func:`record_checksum` computes it: set by
    :func:`seal_records` when the record is appended, read back as stored otherwise (check it
    with :meth:`verify`)."""
    system_seq: int | None = None
    """Its place in its system's sequence, if its thread belongs to a system of agents: one
    counter for every thread of the system, stamped when the record is appended (see
    :class:`~.._clock.SystemClock`), so that records of different threads can be ordered and a
    whole system cut at one point. ``None`` for a thread of no system."""

    def verify(self) -> None:
        """Check the schema version, then the checksum.

        A record whose version this build does not read is a newer build's, unless its
        checksum is that of the same fields with a version this build reads: then a damaged
        byte changed its version (as a flipped bit turns SQLite's 3 into 49), and it is corrupt.

        Raises:
            UnsupportedRecordVersionError: the record was written by an unknown schema version
                (the message names its thread and seq).
            CorruptRecordError: the checksum does not match the fields.
        """
        if not supported_version(self.schema_version):
            matches = checksum_matches(self)
            for known in () if matches else SUPPORTED_SCHEMA_VERSIONS:
                if checksum_matches(evolve(self, schema_version=known)):
                    raise CorruptRecordError(self.thread_id, self.seq,
                                             f"its schema version reads {self.schema_version!r}, but its "
                                             f"checksum is that of version {known}: a damaged byte")
            raise UnsupportedRecordVersionError(self.thread_id, self.seq, self.schema_version,
                                                SUPPORTED_SCHEMA_VERSIONS, checksum_matches=matches)
        if not checksum_matches(self):
            raise CorruptRecordError(self.thread_id, self.seq, "checksum mismatch")


@frozen
class Snapshot:
    """A thread's folded state as of ``seq``, stored so that replay can start there."""

    thread_id: str
    """The thread it belongs to."""
    seq: int
    """The last record folded into ``state``."""
    state: str
    """The state, as JSON text serialized by the layer above."""
    schema_version: int
    """The protocol schema version the state was written with."""
    checksum: str
    """SHA-256 hex of the other fields; see :func:`snapshot_checksum`."""
    parts: tuple[str, ...] = ()
    """The keys of the parts the state is split into besides ``state`` (its head), in order:
    each is stored once per thread and read with :meth:`ThreadReader.read_snapshot_parts`
    (see :mod:`._parts`). Empty for a state kept whole in ``state``."""

    def verify(self, covered: StoredRecord | None) -> None:
        """Check the schema version, the checksum, and that it belongs to the log: ``covered``
        is the record at its seq, as stored (see :func:`check_snapshot`)."""
        check_snapshot(self, covered)


@frozen
class ThreadInfo:
    """A summary of one thread, as :meth:`EventStore.threads` lists it."""

    thread_id: str
    """The thread's id."""
    last_seq: int
    """The seq of its last record (0 when it has none)."""
    created_at: dt.datetime
    """When the thread was created (UTC)."""
    last_activity: dt.datetime
    """The later of ``created_at`` and its last record's ``sent_at``."""
    forked_from: str | None = None
    """The thread it was forked from, if any."""
    forked_at: int | None = None
    """The seq of ``forked_from`` it was forked at, if any."""


def _digest(tag: bytes, parts: Iterable[str]) -> str:
    """The canonical encoding of the module doc: ``tag``, then each part as ``<length>:<UTF-8>``.

    Raises:
        UnicodeEncodeError: a part holds a lone surrogate (not valid UTF-8).
    """
    h = hashlib.sha256(tag)
    for part in parts:
        data = part.encode("utf-8")
        h.update(b"%d:" % len(data))
        h.update(data)
    return h.hexdigest()


def record_checksum(
    *,
    thread_id: str,
    seq: int,
    sender: str,
    sent_at: dt.datetime,
    sent_mono_ns: int,
    kind: str,
    payload: str,
    schema_version: int,
    system_seq: int | None = None,
) -> str:
    """The checksum of a record with these fields (the canonical encoding is in the module doc).

    Raises:
        UnicodeEncodeError: a text field holds a lone surrogate (not valid UTF-8).
    """
    parts = [str(schema_version), thread_id, str(seq), sender, format_time(sent_at), str(sent_mono_ns), kind,
             payload]
    if system_seq is not None:
        parts.append(str(system_seq))
    return _digest(b"livecontext-record\0", parts)


def snapshot_checksum(thread_id: str, seq: int, state: str, schema_version: int,
                      covers: str | None = None, parts: Sequence[str] = ()) -> str:
    """The checksum of a snapshot with these fields (see the module doc).

    ``covers``: the checksum of the record at the snapshot's seq (the last one it folds in).
    A snapshot written by this build commits to it, so that a snapshot that does not belong to
    its log (damaged, or the log was changed under it) is told apart when opening; ``None``
    gives the checksum of a snapshot written before snapshots did. ``parts``: the keys of the
    parts its state is split into (see :mod:`._parts`).
    """
    if covers is None:
        return _digest(b"livecontext-snapshot\0", (str(schema_version), thread_id, str(seq), state, *parts))
    return _digest(b"livecontext-snapshot-covering\0",
                   (str(schema_version), thread_id, str(seq), state, covers, *parts))


def check_snapshot(snapshot: Snapshot, covered: StoredRecord | None) -> None:
    """Check ``snapshot`` against its own checksum and the record it covers (``covered``: the
    record at its seq, as stored; ``None`` if the log has none there).

    A snapshot's checksum commits to the checksum of that record: the record is checked
    first, so that the error names what is damaged. (Its parts are checked when read: each
    is named by its hash.)

    Raises:
        UnsupportedSchemaVersionError: the snapshot was written with an unknown schema version.
        CorruptRecordError: the record at its seq is damaged or missing (``what="record"``),
            or the snapshot is damaged or belongs to another log (``what="snapshot"``).
    """
    check_schema_version(snapshot.schema_version)
    thread_id, seq = snapshot.thread_id, snapshot.seq
    if covered is None:
        raise CorruptRecordError(thread_id, seq, "the record it covers is missing", what="snapshot")
    covered.verify()
    args = (thread_id, seq, snapshot.state, snapshot.schema_version)
    try:
        if snapshot.checksum in (snapshot_checksum(*args, covered.checksum, snapshot.parts),
                                 snapshot_checksum(*args, parts=snapshot.parts)):
            return  # (the second: a snapshot written before snapshots committed to their record)
    except UnicodeEncodeError:
        pass
    raise CorruptRecordError(thread_id, seq, "checksum mismatch: the snapshot is damaged, or its log was "
                             "changed under it", what="snapshot")


def _checksum_in(record: StoredRecord, thread_id: str) -> str:
    """The checksum ``record``'s fields would have in thread ``thread_id``."""
    return record_checksum(
        thread_id=thread_id,
        seq=record.seq,
        sender=record.sender,
        sent_at=record.sent_at,
        sent_mono_ns=record.sent_mono_ns,
        kind=record.kind,
        payload=record.payload,
        schema_version=record.schema_version,
        system_seq=record.system_seq,
    )


def checksum_matches(record: StoredRecord) -> bool:
    """Whether ``record.checksum`` is the checksum of its other fields."""
    try:
        return _checksum_in(record, record.thread_id) == record.checksum
    except UnicodeEncodeError:
        return False


def snapshot_damage(snapshot: Snapshot, covered: StoredRecord | None) -> str | None:
    """Why ``snapshot`` itself is damaged (see :func:`check_snapshot`), or ``None``: it is
    sound, or the fault is the record it covers (reported when that record is read), or its
    schema version is unknown (reported when it is read)."""
    if covered is None or not supported_version(snapshot.schema_version):
        return None
    try:
        covered.verify()
    except (CorruptRecordError, UnsupportedSchemaVersionError):
        return None
    try:
        check_snapshot(snapshot, covered)
    except CorruptRecordError as exc:
        return exc.detail
    return None


def supported_version(version: object) -> bool:
    """Whether this build reads schema ``version`` (``check_schema_version`` without raising)."""
    try:
        check_schema_version(version)
    except UnsupportedSchemaVersionError:
        return False
    return True


def _json_problem(text: object) -> str | None:
    """Why ``text`` is not standard JSON text (RFC 8259: no ``NaN`` or ``Infinity``), or ``None``."""
    if not isinstance(text, str):
        return f"must be JSON text (a str), got {type(text).__name__}"
    try:
        load_json(text)
    except ValueError as exc:
        return f"is not valid JSON text ({exc})"
    return None


def _check_new_record(record: object, index: int) -> NewRecord:
    """``record`` (the ``index``-th of its batch) if its fields can be stored.

    Raises:
        InvalidRecordError: as :func:`seal_records` says, but for text that is not valid UTF-8.
    """
    if not isinstance(record, NewRecord):
        raise InvalidRecordError(f"{_batch_index(index)} is a {type(record).__name__}, not a NewRecord")
    if not isinstance(record.sender, str):
        raise InvalidRecordError(f"{_batch_index(index)}: sender must be a str")
    if not isinstance(record.kind, str):
        raise InvalidRecordError(f"{_batch_index(index)}: kind must be a str")
    problem = None if record._encoded else _json_problem(record.payload)
    if problem is not None:
        raise InvalidRecordError(f"{_batch_index(index)}: payload {problem}")
    mono = record.sent_mono_ns
    low, high = _INT64
    if isinstance(mono, bool) or not isinstance(mono, int) or not low <= mono <= high:
        raise InvalidRecordError(f"{_batch_index(index)}: sent_mono_ns must be a 64-bit int, got {mono!r}")
    return record


def seal_records(
    thread_id: str, first_seq: int, records: Sequence[NewRecord], first_system_seq: int | None = None
) -> list[StoredRecord]:
    """Validate ``records``, number them from ``first_seq`` (and, if ``first_system_seq`` is
    given, stamp them with system seqs from it) and checksum them.

    Raises:
        InvalidRecordError: a record is not a :class:`NewRecord`, a text field is not a str
            or not valid UTF-8 (its checksum could not be computed), the payload is not JSON
            text, or ``sent_mono_ns`` is not a 64-bit integer. The message names the record's
            index in the batch.
    """
    sealed: list[StoredRecord] = []
    for index, new in enumerate(records):
        record = _check_new_record(new, index)
        seq = first_seq + index
        system_seq = None if first_system_seq is None else first_system_seq + index
        try:
            checksum = record_checksum(
                thread_id=thread_id, seq=seq, sender=record.sender, sent_at=record.sent_at,
                sent_mono_ns=record.sent_mono_ns, kind=record.kind, payload=record.payload,
                schema_version=SCHEMA_VERSION, system_seq=system_seq)
        except UnicodeEncodeError:  # (in the thread id, sender or kind: a payload is JSON, thus UTF-8)
            raise InvalidRecordError(f"{_batch_index(index)} holds text that is not valid UTF-8") from None
        sealed.append(StoredRecord(
            seq=seq, thread_id=thread_id, sender=record.sender, sent_at=record.sent_at,
            sent_mono_ns=record.sent_mono_ns, kind=record.kind, payload=record.payload,
            schema_version=SCHEMA_VERSION, checksum=checksum, system_seq=system_seq))
    return sealed


def _batch_index(index: int) -> str:
    return f"record {index} of the batch"


KEEP_SNAPSHOTS = 2
"""Snapshots kept per thread by every backend (the newest ones), with the parts they use.

Each snapshot stands for a thread's whole state, so keeping them all would grow storage with
the square of the thread's length (a snapshot written before parts held every entry).
"""


def seal_snapshot(thread_id: str, seq: int, state: str, covers: str, parts: Sequence[str] = ()) -> Snapshot:
    """A checksummed snapshot that commits to ``covers``, the checksum of the record at
    ``seq``, and to its ``parts`` (raises :class:`InvalidRecordError` unless ``state`` is JSON)."""
    problem = _json_problem(state)
    if problem is not None:
        raise InvalidRecordError(f"snapshot state {problem}")
    try:
        checksum = snapshot_checksum(thread_id, seq, state, SCHEMA_VERSION, covers, parts)
    except UnicodeEncodeError:  # (the state was checked above: the thread id)
        raise InvalidRecordError(f"the snapshot's thread id {thread_id!r} is not valid UTF-8") from None
    return Snapshot(thread_id, seq, state, SCHEMA_VERSION, checksum, tuple(parts))


def rehome(record: StoredRecord, thread_id: str) -> StoredRecord:
    """``record`` moved to another thread (same seq), with its checksum recomputed."""
    return evolve(record, thread_id=thread_id, checksum=_checksum_in(record, thread_id))


def rehome_snapshot(snapshot: Snapshot, thread_id: str, covers: str) -> Snapshot:
    """``snapshot`` moved to another thread, with its checksum recomputed (``covers``: the
    checksum of the record at its seq in that thread)."""
    checksum = snapshot_checksum(thread_id, snapshot.seq, snapshot.state, snapshot.schema_version, covers,
                                 snapshot.parts)
    return Snapshot(thread_id, snapshot.seq, snapshot.state, snapshot.schema_version, checksum, snapshot.parts)


def check_thread_id(thread_id: object) -> str:
    """``thread_id`` if a store can hold it (the rule is
    :func:`~livecontext.protocol.thread_id_problem`: 1-200 characters, no control characters).

    Raises:
        InvalidThreadIdError: it is not.
    """
    problem = thread_id_problem(thread_id)
    if problem is not None:
        raise InvalidThreadIdError(thread_id, problem)
    assert isinstance(thread_id, str)  # (a problem otherwise)
    return thread_id


def contiguous(thread_id: str, from_seq: int, to_seq: int, records: Iterable[StoredRecord]) -> list[StoredRecord]:
    """``records``, which must be exactly seqs ``from_seq..to_seq`` in order (as an SQL store
    reads a range).

    Raises:
        CorruptRecordError: a seq is missing (the message names the first).
    """
    checked = []
    expected = from_seq
    for record in records:
        if record.seq != expected:
            raise CorruptRecordError(thread_id, expected, "the record is missing")
        checked.append(record)
        expected += 1
    if expected != to_seq + 1:
        raise CorruptRecordError(thread_id, expected, "the record is missing")
    return checked

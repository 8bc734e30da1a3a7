"""What the event log stores: records, snapshots, thread summaries, and their checksums.

The log is payload-agnostic: a record's ``payload`` and a snapshot's ``state`` are JSON text
made by the layer above, stored and returned byte for byte.

Checksums are SHA-256 (hex) over a canonical encoding of every other field, so that any
implementation can recompute them: a domain tag (``b"livecontext-record\\0"`` or
``b"livecontext-snapshot\\0"``), then each field as ``b"<length>:"`` followed by its UTF-8
bytes, where integers are written in decimal and times as ISO 8601 UTC with microseconds
(``2024-05-01T12:00:00.000000+00:00``). Records: schema_version, thread_id, seq, sender,
sent_at, sent_mono_ns, kind, payload, then, for a record of a system's thread (see
:class:`~._clock.SystemClock`), system_seq; a record without one is hashed as before system
seqs existed. Snapshots: schema_version, thread_id, seq, state, then the checksum of the
record at the snapshot's seq, then, for a snapshot whose entries are kept in parts (see
:mod:`._parts`), each part's key, under the tag ``b"livecontext-snapshot-covering\\0"`` (a
snapshot written before snapshots committed to their record has the first tag, no record
checksum and no parts: it is still read).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence
from typing import Any

import attrs
from attrs import evolve, field, frozen
from livecontext.protocol import (
    SCHEMA_VERSION,
    UnsupportedSchemaVersionError,
    check_schema_version,
    dump_json,
    dump_standard_json,
    load_json,
    thread_id_problem,
)

from ._errors import CorruptRecordError, InvalidRecordError, InvalidThreadIdError
from ._time import format_time

_INT64 = (-(2**63), 2**63 - 1)
_UTC = dt.timezone.utc
_DATETIME = dt.datetime
_sha256 = hashlib.sha256


def _to_utc(value: dt.datetime) -> dt.datetime:
    if value.__class__ is _DATETIME and value.tzinfo is _UTC:
        return value  # what astimezone(utc) returns for it: the same object
    if not isinstance(value, dt.datetime):
        raise InvalidRecordError(f"sent_at must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidRecordError(
            f"sent_at {value.isoformat()} has no time zone; pass an aware UTC datetime "
            "such as datetime.now(timezone.utc)"
        )
    return value.astimezone(dt.timezone.utc)


@frozen
class NewRecord:
    """A record to append: the log gives it its seq, thread id, schema version and checksum."""

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
    _encoded: bool = field(default=False, init=False, eq=False, repr=False)
    """Made by :meth:`encoding` (the payload is our encoder's output): sealing need not parse it."""

    @classmethod
    def encoding(cls, sender: str, sent_at: dt.datetime, sent_mono_ns: int, kind: str,
                 value: object) -> NewRecord:
        """A record whose payload is ``value`` (JSON data) encoded here, so that appending it
        need not parse the text again to check it. Text made elsewhere, or a value that does
        not encode cleanly (see :func:`dump_standard_json`), is checked when appended."""
        text = dump_standard_json(value)
        if text is None:
            return cls(sender, sent_at, sent_mono_ns, kind, dump_json(value))
        if cls is not NewRecord:  # (a subclass may have more to set)
            record = cls(sender, sent_at, sent_mono_ns, kind, text)
            object.__setattr__(record, "_encoded", True)
            return record
        if sent_at.__class__ is not _DATETIME or sent_at.tzinfo is not _UTC:
            sent_at = _to_utc(sent_at)  # (what the field's converter does, returning the rest as is)
        record = _new_object(cls)
        set_sender, set_sent_at, set_mono, set_kind, set_payload, set_encoded = _NEW_RECORD_SLOTS
        set_sender(record, sender)
        set_sent_at(record, sent_at)
        set_mono(record, sent_mono_ns)
        set_kind(record, kind)
        set_payload(record, text)
        set_encoded(record, True)
        return record


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
    """SHA-256 hex of the other fields; see :func:`record_checksum`.

    A record sealed by :func:`seal_records` computes it when first read (then keeps it): a
    record kept in memory and never written out or verified needs none, and hashing was a
    tenth of the cost of writing one. Nothing can tell the difference: the fields it hashes
    cannot change, and every read of ``checksum`` (``==``, ``repr``, ``evolve``, a backend
    writing it) goes through :meth:`__getattr__`, which computes it.
    """
    system_seq: int | None = None
    """Its place in its system's sequence, if its thread belongs to a system of agents: one
    counter for every thread of the system, stamped when the record is appended (see
    :class:`~._clock.SystemClock`), so that records of different threads can be ordered and a
    whole system cut at one point. ``None`` for a thread of no system."""

    def __getattr__(self, name: str) -> Any:
        # Python calls this only when the normal lookup fails: for a record whose checksum
        # slot was left empty by seal_records (validated there, so hashing cannot fail)
        if name != "checksum":
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        checksum = _checksum_in(self, self.thread_id)
        object.__setattr__(self, "checksum", checksum)
        return checksum

    def verify(self) -> None:
        """Check the schema version, then the checksum.

        Raises:
            UnsupportedSchemaVersionError: the record was written by an unknown schema version.
            CorruptRecordError: the checksum does not match the fields.
        """
        check_schema_version(self.schema_version)
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


def _digest(tag: bytes, parts: Sequence[str]) -> str:
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
    return _record_digest(str(schema_version).encode("utf-8"), thread_id.encode("utf-8"), seq, sender,
                          sent_at, sent_mono_ns, kind, payload, system_seq)


def _record_digest(version: bytes, thread: bytes, seq: int, sender: str, sent_at: dt.datetime,
                   sent_mono_ns: int, kind: str, payload: str, system_seq: int | None) -> str:
    """:func:`record_checksum`, with the schema version and thread id given encoded (a batch
    shares them): the canonical encoding of :func:`_digest`, written out as one formatted
    text hashed at once (each update of a hash costs a call into OpenSSL). It runs for every
    record written."""
    seq_text, time, mono = (
        str(seq).encode("utf-8"), format_time(sent_at).encode("utf-8"), str(sent_mono_ns).encode("utf-8"))
    who, what, body = sender.encode("utf-8"), kind.encode("utf-8"), payload.encode("utf-8")
    text = b"livecontext-record\0%d:%b%d:%b%d:%b%d:%b%d:%b%d:%b%d:%b%d:%b" % (
        len(version), version, len(thread), thread, len(seq_text), seq_text, len(who), who,
        len(time), time, len(mono), mono, len(what), what, len(body), body)
    if system_seq is not None:
        stamp = str(system_seq).encode("utf-8")
        text += b"%d:%b" % (len(stamp), stamp)
    return _sha256(text).hexdigest()


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


def _check_json(text: object, what: str) -> str:
    """``text`` if it is standard JSON (RFC 8259: no ``NaN`` or ``Infinity``)."""
    if not isinstance(text, str):
        raise InvalidRecordError(f"{what} must be JSON text (a str), got {type(text).__name__}")
    try:
        load_json(text)
    except ValueError as exc:
        raise InvalidRecordError(f"{what} is not valid JSON text ({exc})") from None
    return text


def seal_records(
    thread_id: str, first_seq: int, records: Sequence[NewRecord], first_system_seq: int | None = None
) -> list[StoredRecord]:
    """Validate ``records`` and number them from ``first_seq`` (and, if ``first_system_seq`` is
    given, stamp them with system seqs from it), with checksums (computed when first read: see
    :attr:`StoredRecord.checksum`).

    Raises:
        InvalidRecordError: a record is not a :class:`NewRecord`, a text field is not a str
            or not valid UTF-8, the payload is not JSON text, or ``sent_mono_ns`` is not a
            64-bit integer. The message names the record's index in the batch.
    """
    sealed: list[StoredRecord] = []
    low, high = _INT64
    version = SCHEMA_VERSION
    texts_checked = thread_id.isascii()  # (else the thread id is checked with the first record's texts)
    for index, rec in enumerate(records):
        if not isinstance(rec, NewRecord):
            raise InvalidRecordError(f"{_batch_index(index)} is a {type(rec).__name__}, not a NewRecord")
        sender, kind, payload, mono = rec.sender, rec.kind, rec.payload, rec.sent_mono_ns
        if not isinstance(sender, str):
            raise InvalidRecordError(f"{_batch_index(index)}: sender must be a str")
        if not isinstance(kind, str):
            raise InvalidRecordError(f"{_batch_index(index)}: kind must be a str")
        encoded = rec._encoded
        if encoded:
            pass  # encoded by dump_json a moment ago: standard JSON (and valid UTF-8) by construction
        elif payload.__class__ is str:  # _check_json, inline: the path of every record
            try:
                load_json(payload)
            except ValueError as exc:
                raise InvalidRecordError(
                    f"{_batch_index(index)}: payload is not valid JSON text ({exc})") from None
        else:
            _check_json(payload, f"{_batch_index(index)}: payload")
        if (mono.__class__ is not int and (isinstance(mono, bool) or not isinstance(mono, int))
                or not low <= mono <= high):
            raise InvalidRecordError(f"{_batch_index(index)}: sent_mono_ns must be a 64-bit int, got {mono!r}")
        seq = first_seq + index
        sent_at = rec.sent_at  # (UTC already: NewRecord's converter, or encoding, made it so)
        # the checksum is computed when first read (see StoredRecord.checksum): what would make
        # it fail (text that is not valid UTF-8: a lone surrogate) is refused here instead (in
        # the payload, load_json above refused it: JSON text must be valid UTF-8)
        if not (texts_checked and sender.isascii() and kind.isascii()):  # (O(1) each)
            try:
                thread_id.encode("utf-8")
                sender.encode("utf-8")
                kind.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidRecordError(f"{_batch_index(index)} holds text that is not valid UTF-8") from None
        record = _new_object(StoredRecord)  # StoredRecord(seq, ...), built directly (see _slot_setters)
        set_seq, set_thread_id, set_sender, set_sent_at, set_mono, set_kind, set_payload, set_version, _, \
            set_system_seq = _STORED_RECORD_SLOTS
        set_seq(record, seq)
        set_thread_id(record, thread_id)
        set_sender(record, sender)
        set_sent_at(record, sent_at)
        set_mono(record, mono)
        set_kind(record, kind)
        set_payload(record, payload)
        set_version(record, version)
        set_system_seq(record, None if first_system_seq is None else first_system_seq + index)
        sealed.append(record)
    return sealed


_new_object = object.__new__


def _slot_setters(cls: type) -> tuple[Any, ...]:
    """The setters of frozen ``cls``'s slots, one per field in order.

    An instance made with :func:`object.__new__` and these is the one its ``__init__`` makes
    from the same values when no converter changes them, without the generated ``__init__``'s
    indirection (a setattr per field looked up by name): a third of the cost of building the
    two records of every record written.
    """
    return tuple(getattr(cls, a.name).__set__ for a in attrs.fields(cls))


_NEW_RECORD_SLOTS = _slot_setters(NewRecord)
_STORED_RECORD_SLOTS = _slot_setters(StoredRecord)


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
    _check_json(state, "snapshot state")
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

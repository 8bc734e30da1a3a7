"""Reading a JSONL log without reading all of it: from the end, by bisection, or forward.

- :func:`scan_record_tail` reads backwards from the end of ``records.jsonl`` to its last
  committed batch (see :mod:`._codec`), so opening a thread reads the last line (or the
  last unfinished batch), never the whole file.
- :func:`read_records` finds ``from_seq`` by bisecting on byte offsets (lines are in seq
  order and each starts with its seq), then reads forward.
- :func:`iter_snapshots_backward` walks ``snapshots.jsonl`` from the newest line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from attrs import frozen
from livecontext.protocol import check_schema_version

from ..base import CorruptRecordError, Snapshot, StoredRecord, checksum_matches, supported_version
from ._codec import decode_record, decode_snapshot, prefix_seq

CHUNK = 1 << 16
"""Bytes read per step when scanning."""
BISECT_MIN = 1 << 14
"""Bisection stops when the byte range is this small and reading goes linear."""


def iter_lines_backward(fd: int, end: int) -> Iterator[tuple[int, bytes, bool]]:
    """The lines in the first ``end`` bytes of ``fd``, last first.

    Yields ``(offset of the line, the line without its newline, whether it had a newline)``;
    only the first line yielded can lack its newline.
    """
    if end <= 0:
        return
    complete = os.pread(fd, 1, end - 1) == b"\n"
    pos = end - 1 if complete else end
    pieces: list[bytes] = []  # the current line, from its end backwards
    step = min(4096, CHUNK)  # a tail is usually one short line: start small
    while pos > 0:
        size = min(step, pos)
        step = min(step * 2, CHUNK)
        pos -= size
        block = os.pread(fd, size, pos)
        hi = len(block)
        while (nl := block.rfind(b"\n", 0, hi)) >= 0:
            pieces.append(block[nl + 1 : hi])
            yield pos + nl + 1, b"".join(reversed(pieces)), complete
            pieces, complete, hi = [], True, nl
        pieces.append(block[:hi])
    yield 0, b"".join(reversed(pieces)), complete


def _tail_record(line: bytes, thread_id: str) -> tuple[StoredRecord, int]:
    """The record on ``line`` and its batch end; ``ValueError`` if damaged.

    The checksum of a record of an unknown schema version is not checked (a newer version
    may compute it differently): such a record is reported when it is read or written after.
    """
    record, end = decode_record(line)
    if record.thread_id != thread_id:
        raise ValueError(f"the line belongs to thread {record.thread_id!r}")
    if supported_version(record.schema_version) and not checksum_matches(record):
        raise ValueError("checksum mismatch")
    return record, end


def _seq_of_damage(fd: int, offset: int, line: bytes) -> int:
    """Best guess of the seq of a damaged line at ``offset``, for the error message."""
    seq = prefix_seq(line[:32])
    if seq is not None:
        return seq
    for back, (_, before, _) in enumerate(iter_lines_backward(fd, offset), start=1):
        seq = prefix_seq(before[:32])
        if seq is not None:
            return seq + back
    return 1


@frozen
class RecordTail:
    """Where the committed part of ``records.jsonl`` ends, and what lies after it."""

    end: int
    """Byte offset just past the last committed line."""
    last: StoredRecord | None
    """The last committed record (None if there is none); its checksum is checked unless its
    schema version is unknown."""
    torn_lines: int
    """Lines after ``end``: a damaged last line and/or the start of an unfinished batch."""
    torn_reason: str
    """Why they do not count (``""`` when there are none)."""

    @property
    def last_seq(self) -> int:
        """The seq of the last committed record (0 if there is none)."""
        return self.last.seq if self.last is not None else 0


def scan_record_tail(fd: int, size: int, thread_id: str) -> RecordTail:
    """Read backwards from ``size`` to the last committed batch of ``records.jsonl``.

    Raises:
        CorruptRecordError: a damaged line that is not the last one.
    """
    torn = 0
    reason = ""
    unfinished: int | None = None
    for offset, line, complete in iter_lines_backward(fd, size):
        last_line = offset + len(line) + complete == size
        try:
            if not complete:
                raise ValueError("partial last line")
            record, end = _tail_record(line, thread_id)
        except ValueError as exc:
            if not last_line:
                seq = _seq_of_damage(fd, offset, line)
                raise CorruptRecordError(thread_id, seq, str(exc)) from None
            torn, reason = 1, str(exc)
            continue
        if record.seq == end:
            return RecordTail(offset + len(line) + 1, record, torn, reason)
        if unfinished is not None and end != unfinished:
            raise CorruptRecordError(thread_id, record.seq, "its batch was never finished")
        unfinished = end
        torn += 1
        reason = reason or "unfinished batch"
    return RecordTail(0, None, torn, reason)


def _line_start_after(fd: int, pos: int, limit: int) -> int | None:
    """The offset of the first line starting after ``pos`` and before ``limit``, if any."""
    size = 1024  # most lines are short: read a little first, more if needed
    while pos < limit:
        block = os.pread(fd, min(size, limit - pos), pos)
        nl = block.find(b"\n")
        if nl >= 0:
            start = pos + nl + 1
            return start if start < limit else None
        pos += len(block)
        size = min(size * 2, CHUNK)
    return None


def _bisect(fd: int, end: int, target_seq: int) -> int:
    """A line start at or before the line of ``target_seq`` (and close to it)."""
    lo, hi = 0, end
    while hi - lo > BISECT_MIN:
        start = _line_start_after(fd, (lo + hi) // 2, hi)
        seq = None if start is None else prefix_seq(os.pread(fd, 32, start))
        if start is None or seq is None:
            break  # no line there, or one we cannot read cheaply: scan from lo
        if seq < target_seq:
            lo = start
        else:
            hi = start
    return lo


def _iter_lines_forward(fd: int, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """The complete lines in ``[start, end)`` (which ends with a newline), with their offsets."""
    pos = start
    carry = b""
    size = 4096  # reading grows from a page to 16 chunks: short ranges stay cheap
    while pos < end:
        block = carry + os.pread(fd, min(size, end - pos), pos)
        size = min(size * 2, CHUNK * 16)
        base = pos - len(carry)
        pos += len(block) - len(carry)
        lo = 0
        while (nl := block.find(b"\n", lo)) >= 0:
            yield base + lo, block[lo:nl]
            lo = nl + 1
        carry = block[lo:]


def read_records(
    fd: int, end: int, thread_id: str, from_seq: int, to_seq: int
) -> list[StoredRecord]:
    """Records ``from_seq..to_seq`` from the committed part ``[0, end)`` of ``records.jsonl``.

    Raises:
        CorruptRecordError: a record in the range (or a line that cannot be placed) is
            damaged, or a seq is missing.
        UnsupportedSchemaVersionError: a record in the range has an unknown schema version.
    """
    records: list[StoredRecord] = []
    expected = from_seq
    for _, line in _iter_lines_forward(fd, _bisect(fd, end, from_seq), end):
        seq = prefix_seq(line[:32])
        if seq is not None and seq < from_seq:
            continue
        try:
            record, _ = decode_record(line)
        except ValueError as exc:
            raise CorruptRecordError(thread_id, seq or expected, str(exc)) from None
        if record.seq != expected or record.thread_id != thread_id:
            raise CorruptRecordError(thread_id, expected, "the record is missing or misplaced")
        record.verify()
        records.append(record)
        if expected == to_seq:
            return records
        expected += 1
    raise CorruptRecordError(thread_id, expected, "the record is missing")


def iter_snapshots_backward(
    fd: int, size: int, thread_id: str
) -> Iterator[tuple[int, int, Snapshot | None, CorruptRecordError | None]]:
    """``(offset, offset past the line, snapshot, damage)`` from the newest line of
    ``snapshots.jsonl``.

    A partial newest line (a torn write) yields no snapshot and no damage; a complete line that
    does not decode yields its damage (its seq as far as it can be read, else -1); an unknown
    schema version raises ``UnsupportedSchemaVersionError``. Checksums are not checked here: a
    snapshot's commits to the record it covers (see :func:`~..base._records.check_snapshot`).
    """
    for offset, line, complete in iter_lines_backward(fd, size):
        stop = offset + len(line) + complete
        if not complete:  # (only the newest line can lack its newline)
            yield offset, stop, None, None
            continue
        try:
            snapshot = decode_snapshot(line)
            if snapshot.thread_id != thread_id:
                raise ValueError(f"the line belongs to thread {snapshot.thread_id!r}")
            check_schema_version(snapshot.schema_version)
        except ValueError as exc:
            yield offset, stop, None, CorruptRecordError(thread_id, prefix_seq(line[:32]) or -1, str(exc),
                                                         what="snapshot")
            continue
        yield offset, stop, snapshot, None

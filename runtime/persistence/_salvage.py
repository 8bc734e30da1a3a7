"""Reading a thread past its damage: every readable record, and what could not be read.

``ThreadReader.read`` stops at the first damaged record, as a replay must. Looking into a
damaged store (``audit``, ``verify``) wants the opposite: each readable record, in seq order,
and each damaged stretch where it lies. :func:`read_past_damage` gives both, a chunk at a
time, so that a caller can print records as they are read.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from attrs import frozen
from livecontext.protocol import UnsupportedSchemaVersionError

from .base import CorruptRecordError, PersistenceError, StoreCorruptError, StoredRecord
from ._interface import ThreadReader

CHUNK = 1000
"""Records read at a time."""

DAMAGE = (CorruptRecordError, UnsupportedSchemaVersionError, StoreCorruptError)
"""What a read of damaged records raises (a record's own damage, or the file's below it)."""


@frozen
class Damage:
    """Records ``first..last`` of a thread that cannot be read, and why."""

    thread_id: str
    first: int
    last: int
    error: PersistenceError | UnsupportedSchemaVersionError
    """What reading the first of them raised (its message says what to do)."""

    @property
    def seqs(self) -> str:
        """``seq 5`` or ``seqs 5..9``."""
        return f"seq {self.first}" if self.first == self.last else f"seqs {self.first}..{self.last}"

    @property
    def text(self) -> str:
        """One line: the thread, the seq(s), what is wrong and what to do."""
        if isinstance(self.error, StoreCorruptError):
            detail = " ".join(self.error.detail.split())
            return (f"thread {self.thread_id!r}: the record(s) at {self.seqs} cannot be read: the store's file "
                    f"is damaged there ({detail}); restore the store from a backup")
        text = " ".join(str(self.error).split())
        return text if self.thread_id in text else f"thread {self.thread_id!r}: {text}"


async def read_past_damage(reader: ThreadReader, first: int = 1, last: int | None = None,
                           chunk: int = CHUNK) -> AsyncGenerator[list[StoredRecord] | Damage, None]:
    """Records ``first..last`` of ``reader``'s thread (default: to its end), a list at a time
    in seq order, with a :class:`Damage` in place of each stretch that cannot be read.

    A damage that names its seq costs one more read (the records before it); one that does
    not (a damaged SQLite page) is narrowed down by reading that chunk's records one by one.
    """
    last = await reader.last_seq() if last is None else last
    seq = first
    while seq <= last:
        end = min(seq + chunk - 1, last)
        try:
            records = await reader.read(seq, end)
        except DAMAGE as exc:
            bad = getattr(exc, "seq", None)
            if not (isinstance(bad, int) and seq <= bad <= end):
                async for item in _one_by_one(reader, seq, end):
                    yield item
                seq = end + 1
                continue
            if bad > seq:  # (the records before it: one read, unless they hold damage too)
                async for item in read_past_damage(reader, seq, bad - 1, chunk):
                    yield item
            yield Damage(reader.thread_id, bad, bad, exc)
            seq = bad + 1
            continue
        if records:
            yield records
        seq = end + 1


async def _one_by_one(reader: ThreadReader, first: int, last: int) -> AsyncGenerator[list[StoredRecord] | Damage, None]:
    """Records ``first..last`` read one by one; consecutive ones that a damaged file keeps
    from being read make one :class:`Damage`."""
    damaged: Damage | None = None
    for seq in range(first, last + 1):
        try:
            records = await reader.read(seq, seq)
        except DAMAGE as exc:
            if damaged is not None and isinstance(exc, StoreCorruptError) \
                    and isinstance(damaged.error, StoreCorruptError):
                damaged = Damage(reader.thread_id, damaged.first, seq, damaged.error)
                continue
            if damaged is not None:
                yield damaged
            damaged = Damage(reader.thread_id, seq, seq, exc)
            continue
        if damaged is not None:
            yield damaged
            damaged = None
        if records:
            yield records
    if damaged is not None:
        yield damaged

"""Copying a store's threads into another store: the same log, up to the first damage.

A damaged store cannot be repaired in place (no writer writes into a damaged SQLite file, and
a thread past a damaged record is not consistent), but what can still be read can be copied
into a new store, of any backend. :func:`copy_thread` copies one thread as it was recorded:
its creation time and fork link, and every record byte for byte (seq, sender, times, schema
version, system seq, checksum), in order, up to its first damaged record. It is the same log,
not a replay. Snapshots are not copied: a thread's state is rebuilt from its records (the
next run writes a snapshot again).
"""

from __future__ import annotations

from contextlib import aclosing

from attrs import frozen
from livecontext.protocol import UnsupportedSchemaVersionError

from .base import CorruptRecordError, StoreCorruptError, StoredRecord, ThreadInfo
from ._interface import EventStore
from ._salvage import CHUNK, DAMAGE, Damage, read_past_damage

COPY_OWNER = "livecontext copy"
"""The writer a copy's threads are opened by (named in a lock error)."""


@frozen
class ThreadCopy:
    """What :func:`copy_thread` copied of one thread."""

    thread_id: str
    """The thread."""
    copied: int
    """Records ``1..copied`` were copied (0: none)."""
    last_seq: int
    """The source thread's last seq (records past ``copied`` were left behind)."""
    damage: Damage | None
    """What stopped the copy before ``last_seq`` (``None``: the thread was copied whole)."""

    @property
    def whole(self) -> bool:
        """Whether every record of the thread was copied."""
        return self.damage is None

    @property
    def left(self) -> int:
        """How many records were left behind."""
        return self.last_seq - self.copied

    @property
    def text(self) -> str:
        """One line: what was copied, and what was left behind and why."""
        copied = f"copied seqs 1..{self.copied}" if self.copied else "copied no records"
        if self.damage is None:
            return f"thread {self.thread_id!r}: {copied}" if self.copied else \
                f"thread {self.thread_id!r}: copied (it has no records)"
        first = self.copied + 1
        rest = f"seq {first} and after (to seq {self.last_seq})" if self.last_seq > first else f"seq {first}"
        return (f"thread {self.thread_id!r}: {copied}; {rest} left behind: {self.damage.seqs} cannot be read "
                f"({_why(self.damage)}), and a thread does not go on past a hole")


def _why(damage: Damage) -> str:
    """What is wrong with the first record a copy could not read, in a few words."""
    error = damage.error
    if isinstance(error, CorruptRecordError):
        return " ".join(error.detail.split())
    if isinstance(error, StoreCorruptError):
        return f"the store's file is damaged there: {' '.join(error.detail.split())}"
    if isinstance(error, UnsupportedSchemaVersionError):
        return f"unsupported schema version {error.version!r}"
    return " ".join(str(error).split())


async def copy_thread(source: EventStore, info: ThreadInfo, target: EventStore, chunk: int = CHUNK) -> ThreadCopy:
    """Copy thread ``info.thread_id`` of ``source`` (``info`` as :meth:`EventStore.threads`
    lists it) into ``target``, where it must not exist: its creation time, fork link and
    records ``1..N``, where ``N + 1`` is its first record that cannot be read (or its end).

    The records are appended ``chunk`` at a time, each chunk one transaction; a failed write
    (the target's disk full...) raises, and leaves the thread copied up to the last chunk.

    Raises:
        ThreadExistsError: ``target`` holds the thread already; nothing was written.
        As :meth:`ThreadLog.append_stored` (the target's writes).
    """
    thread_id = info.thread_id
    try:
        reader = await source.open_reader(thread_id)
    except DAMAGE as exc:  # (where its records are kept)
        await target.create_thread(info)
        return ThreadCopy(thread_id, 0, info.last_seq, Damage(thread_id, 1, max(info.last_seq, 1), exc))
    async with reader:
        try:
            last = await reader.last_seq()
        except DAMAGE as exc:
            await target.create_thread(info)
            return ThreadCopy(thread_id, 0, info.last_seq, Damage(thread_id, 1, max(info.last_seq, 1), exc))
        await target.create_thread(info)
        log = await target.open_thread(thread_id, create=False, owner=COPY_OWNER)
        async with log, aclosing(read_past_damage(reader, 1, last, chunk)) as items:
            copied = 0
            pending: list[StoredRecord] = []
            async for item in items:
                if isinstance(item, Damage):
                    await log.append_stored(pending)
                    return ThreadCopy(thread_id, copied + len(pending), last, item)
                pending += item
                if len(pending) >= chunk:
                    await log.append_stored(pending)
                    copied, pending = copied + len(pending), []
            await log.append_stored(pending)
            return ThreadCopy(thread_id, copied + len(pending), last, None)

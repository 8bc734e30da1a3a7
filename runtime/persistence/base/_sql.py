"""What the two SQL backends (SQLite, PostgreSQL) do the same way around their own SQL: take a
thread's lease from the row that holds it, open a writer that repairs what a crash left, open a
reader, and copy a thread's records in chunks when forking it.

Each backend keeps its SQL (placeholders, upserts and locking differ: SQLite takes the whole
file with ``BEGIN IMMEDIATE``, PostgreSQL the lease row with ``FOR UPDATE``); what is here is
the logic around it, so that the two cannot drift apart.
"""

from __future__ import annotations

import datetime as dt
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from ._backend import RowSource, SqlReader
from ._errors import ThreadLockedError, ThreadNotFoundError
from ._lease import Holder, current_holder, holder_alive
from ._records import StoredRecord, rehome

FORK_CHUNK = 512
"""How many records a fork copies at a time (its memory stays small for a long thread)."""


class _Repairable(Protocol):
    def repair(self) -> None: ...

    def close(self) -> None: ...


W = TypeVar("W", bound=_Repairable)
B = TypeVar("B", bound=RowSource)


def new_lease(thread_id: str, owner: str, held: Sequence[Any] | None) -> tuple[str, Holder, float]:
    """A lease for ``owner`` on ``thread_id`` (its token, holder and time), given the lease
    row found for the thread (``owner, host, pid, start, renewed_at``; ``None``: no lease).

    Raises:
        ThreadLockedError: the row's holder is alive (see :func:`holder_alive`).
    """
    now = time.time()
    if held is not None:
        holder = Holder(held[0], held[1], held[2], held[3])
        if holder_alive(holder, held[4], now):
            raise ThreadLockedError(thread_id, holder.describe())
    return secrets.token_hex(16), current_holder(owner), now


def repaired(writer: W) -> W:
    """``writer``, once it has repaired what a crash left (closed if that fails)."""
    try:
        writer.repair()
    except BaseException:
        writer.close()
        raise
    return writer


def open_sql_reader(backend: B, thread_id: str, exists: Callable[[str], bool]) -> SqlReader[B]:
    """A reader of ``thread_id``, which must exist (``exists`` says).

    Raises:
        ThreadNotFoundError: it does not.
    """
    if not exists(thread_id):
        raise ThreadNotFoundError(thread_id)
    return SqlReader(backend, thread_id)


def copy_records(read: Callable[[int, int], list[StoredRecord]], write: Callable[[list[StoredRecord]], None],
                 new_thread: str, at_seq: int) -> dt.datetime | None:
    """Copy records 1..``at_seq`` (``read(from, to)``) into ``new_thread`` (``write``), rehomed,
    :data:`FORK_CHUNK` at a time; the last one's ``sent_at`` (``None``: nothing copied)."""
    last_sent = None
    for start in range(1, at_seq + 1, FORK_CHUNK):
        records = read(start, min(start + FORK_CHUNK - 1, at_seq))
        write([rehome(r, new_thread) for r in records])
        last_sent = records[-1].sent_at
    return last_sent

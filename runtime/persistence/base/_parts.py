"""Snapshot parts: pieces of a snapshot's state, stored once per thread and shared by snapshots.

A snapshot may keep most of its state in *parts* (the layer above puts a block of entries in
each) rather than in its ``state`` text, so that a snapshot taken after a few changes writes
only the parts that changed. A part is bytes, named by its key: the SHA-256 (hex) of those
bytes. A backend stores a part once per thread whatever the number of snapshots that use it,
and deletes it once no kept snapshot (see :data:`~._records.KEEP_SNAPSHOTS`) uses it.

The snapshot's checksum covers its part keys (see :func:`~._records.snapshot_checksum`), and
each part is hashed again when read, so a damaged or missing part is reported (a
:class:`CorruptRecordError` whose ``what`` is ``"snapshot part"``, naming the snapshot's seq)
rather than read as another state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence

from ._errors import CorruptRecordError, InvalidRecordError

_HEX = frozenset("0123456789abcdef")


def part_key(data: bytes) -> str:
    """The key of a part holding ``data``: its SHA-256, in lowercase hex."""
    return hashlib.sha256(data).hexdigest()


def is_part_key(key: object) -> bool:
    """Whether ``key`` has the shape of a part key (64 lowercase hex digits)."""
    return isinstance(key, str) and len(key) == 64 and _HEX.issuperset(key)


def check_new_parts(parts: Sequence[str], new_parts: Mapping[str, bytes]) -> None:
    """Check a snapshot's part keys and the parts given with it.

    Raises:
        InvalidRecordError: a key is malformed, or a given part's bytes do not hash to its key.
    """
    for key in parts:
        if not is_part_key(key):
            raise InvalidRecordError(f"snapshot part key {key!r} is not 64 lowercase hex digits")
    for key, data in new_parts.items():
        if not isinstance(data, bytes):
            raise InvalidRecordError(f"snapshot part {key!r} must be bytes, got {type(data).__name__}")
        if part_key(data) != key:
            raise InvalidRecordError(f"snapshot part {key!r} holds bytes whose SHA-256 is another key")


def missing_part(thread_id: str, key: str) -> InvalidRecordError:
    """The error of a snapshot naming a part that is neither given nor stored."""
    return InvalidRecordError(
        f"the snapshot of thread {thread_id!r} names part {key} that is neither given with it nor "
        "stored; give every part the thread does not hold yet")


def checked_parts(thread_id: str, seq: int, keys: Sequence[str],
                  found: Sequence[bytes | None]) -> list[bytes]:
    """``found``, the parts read for ``keys`` (``None``: not stored), each hashed again.

    Raises:
        CorruptRecordError: a part is missing or its bytes do not hash to its key; the message
            names the snapshot's seq.
    """
    parts: list[bytes] = []
    for key, data in zip(keys, found, strict=True):
        if data is None:
            raise CorruptRecordError(thread_id, seq, f"its part {key} is missing", what="snapshot part")
        if part_key(data) != key:
            raise CorruptRecordError(thread_id, seq, f"its part {key} fails its checksum", what="snapshot part")
        parts.append(data)
    return parts


def used_parts(snapshots: Iterable[Sequence[str]]) -> set[str]:
    """The keys of every part that the snapshots with these part lists use."""
    used: set[str] = set()
    for parts in snapshots:
        used.update(parts)
    return used

"""A JSONL thread's snapshots: one file each, and their parts, written atomically.

``DIR/<thread>/snapshot-<seq>.json`` holds one snapshot (the keys of a ``snapshots.jsonl``
line, and ``parts``: its part keys), ``DIR/<thread>/parts/<key>`` one part's bytes (see
:mod:`..base._parts`). Each file is written to ``<name>.tmp``, synced, renamed over its name, and its
directory synced, so a crash (``kill -9``, a power loss unless the fsync level is ``off``)
leaves either the whole file or none: a ``.tmp`` left behind is removed when the thread is
next opened for writing. A snapshot's parts are written before it, and deleted only once no
kept snapshot uses them, so a snapshot that exists finds its parts. Only the newest
:data:`~..base._records.KEEP_SNAPSHOTS` snapshot files are kept.

Threads written before this layout keep their snapshots as lines of ``snapshots.jsonl``
(see :func:`~._files.iter_snapshots_backward`): they are still read, and the file is
emptied once a snapshot file supersedes them (an older build then replays from the records).
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from livecontext.protocol import check_schema_version

from ..base import CorruptRecordError, KEEP_SNAPSHOTS, Snapshot, is_part_key, missing_part, used_parts
from ._codec import decode_snapshot, encode_snapshot

PARTS = "parts"
_NAME = re.compile(r"snapshot-(\d{20})\.json")
_TMP = ".tmp"


def snapshot_name(seq: int) -> str:
    """The file name of the snapshot at ``seq`` (zero-padded: names sort as seqs do)."""
    return f"snapshot-{seq:020d}.json"


def snapshot_seqs(path: Path) -> list[int]:
    """The seqs of the snapshot files in thread directory ``path``, ascending."""
    seqs = []
    with os.scandir(path) as entries:
        for entry in entries:
            match = _NAME.fullmatch(entry.name)
            if match:
                seqs.append(int(match.group(1)))
    return sorted(seqs)


def read_snapshot_file(path: Path, thread_id: str, seq: int) -> Snapshot | None:
    """The snapshot at ``seq``, decoded; ``None`` if its file is gone (a writer dropped it).
    Its checksum is not checked here: it commits to the record it covers (see
    :func:`~..base._records.check_snapshot`).

    Raises:
        CorruptRecordError: the file does not decode (``what="snapshot"``).
        UnsupportedSchemaVersionError: it was written with an unknown schema version.
    """
    try:
        data = (path / snapshot_name(seq)).read_bytes()
    except FileNotFoundError:
        return None
    try:
        snapshot = decode_snapshot(data.rstrip(b"\n"))
        if snapshot.thread_id != thread_id or snapshot.seq != seq:
            raise ValueError(f"the file holds the snapshot of {snapshot.thread_id!r} at seq {snapshot.seq}")
        if any(not is_part_key(key) for key in snapshot.parts):
            raise ValueError("a part key is malformed")
    except ValueError as exc:
        raise CorruptRecordError(thread_id, seq, str(exc), what="snapshot") from None
    check_schema_version(snapshot.schema_version)
    return snapshot


def latest_snapshot_file(path: Path, thread_id: str, at_or_before: int) -> Snapshot | None:
    """The snapshot file with the highest seq ``<= at_or_before``, decoded (see
    :func:`read_snapshot_file`)."""
    for _ in range(3):  # (a writer may drop the file between listing and reading it)
        seqs = [seq for seq in snapshot_seqs(path) if seq <= at_or_before]
        if not seqs:
            return None
        snapshot = read_snapshot_file(path, thread_id, seqs[-1])
        if snapshot is not None:
            return snapshot
    return None


def read_parts(path: Path, keys: list[str]) -> list[bytes | None]:
    """The parts with these keys as stored in thread directory ``path`` (``None``: missing)."""
    found: list[bytes | None] = []
    for key in keys:
        try:
            found.append((path / PARTS / key).read_bytes())
        except FileNotFoundError:
            found.append(None)
    return found


def write_atomically(path: Path, data: bytes, sync: bool) -> None:
    """Write ``data`` to ``path`` whole or not at all (a ``.tmp`` file, synced, then renamed);
    the caller syncs the directory."""
    tmp = path.with_name(path.name + _TMP)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def sync_dir(path: Path) -> None:
    """Make the directory entries in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def held_parts(path: Path) -> set[str]:
    """The keys of the parts stored in thread directory ``path``."""
    try:
        return {name for name in os.listdir(path / PARTS) if is_part_key(name)}
    except FileNotFoundError:
        return set()


def write_snapshot_file(path: Path, snapshot: Snapshot, new_parts: dict[str, bytes], sync: bool) -> None:
    """Write those of ``new_parts`` the thread does not hold, then ``snapshot``.

    Raises:
        InvalidRecordError: a part of the snapshot is neither given nor held.
        OSError: the disk refused; what was written is left for :func:`collect` to remove.
    """
    held = held_parts(path)
    for key in snapshot.parts:
        if key not in held and key not in new_parts:
            raise missing_part(snapshot.thread_id, key)
    fresh = {key: data for key, data in new_parts.items() if key not in held}
    if fresh:
        (path / PARTS).mkdir(exist_ok=True)
        for key, data in fresh.items():
            write_atomically(path / PARTS / key, data, sync)
        if sync:
            sync_dir(path / PARTS)
    write_atomically(path / snapshot_name(snapshot.seq), encode_snapshot(snapshot), sync)
    if sync:
        sync_dir(path)


def collect(path: Path) -> int:
    """Remove what no kept snapshot needs: snapshot files but the newest
    :data:`~..base._records.KEEP_SNAPSHOTS`, the parts none of them uses, and ``.tmp`` files left
    by an interrupted write. Returns how many snapshot files are kept.

    Only the thread's writer calls it (under its lock). A file that cannot be removed stays
    until the next call.
    """
    seqs = snapshot_seqs(path)
    kept, dropped = seqs[-KEEP_SNAPSHOTS:], seqs[:-KEEP_SNAPSHOTS]
    for seq in dropped:  # (oldest first: what stays is always the newest)
        with contextlib.suppress(OSError):
            (path / snapshot_name(seq)).unlink()
    named = [_parts_of(path, seq) for seq in kept]
    if any(parts is None for parts in named):
        return len(kept)  # (a damaged snapshot: which parts it needs is unknown, keep them all)
    used = used_parts(parts for parts in named if parts is not None)
    for key in held_parts(path) - used:
        with contextlib.suppress(FileNotFoundError):
            (path / PARTS / key).unlink()
    for folder in (path, path / PARTS):
        with contextlib.suppress(FileNotFoundError), os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(_TMP) and (entry.name.startswith("snapshot-") or folder != path):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)
    return len(kept)


def _parts_of(path: Path, seq: int) -> tuple[str, ...] | None:
    """The part keys the snapshot file at ``seq`` names (its checksum unchecked: a damaged
    file keeps the parts it names, so that reading it reports the damage, not a missing
    part); ``None`` if it cannot be decoded."""
    try:
        return decode_snapshot((path / snapshot_name(seq)).read_bytes().rstrip(b"\n")).parts
    except FileNotFoundError:
        return ()
    except ValueError:
        return None

"""The JSONL backend: one directory per thread, plain files you can read with ``jq``.

``DIR/<thread>/`` holds ``records.jsonl`` (one record per line, see :mod:`._codec`),
the newest snapshots, one file each, and the parts they use (see :mod:`._snapshots`),
``snapshots.jsonl`` (the snapshots of threads written before snapshot files, one per line, in
seq order; empty since), ``meta.json`` (written last and atomically: a directory without it is
no thread) and ``lock``. The directory name is the
thread id, percent-escaped where needed. The single-writer lock is an ``fcntl.flock`` on
``lock``, which the kernel releases when its process dies; ``lock`` also names the holder.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import os
import shutil
import urllib.parse
from collections.abc import Iterable, Iterator
from pathlib import Path


from ..base import (
    CorruptRecordError,
    DamagedSnapshotWarning,
    FsyncLevel,
    InvalidThreadIdError,
    LogWriteError,
    SeqOutOfRangeError,
    Snapshot,
    StoreFormatError,
    StoreReadOnlyError,
    StoredRecord,
    ThreadExistsError,
    ThreadInfo,
    ThreadLockedError,
    ThreadNotFoundError,
    TornRecordWarning,
    TornSnapshotWarning,
    TornTailWarning,
    checked_parts,
    current_holder,
    rehome,
    rehome_snapshot,
    snapshot_damage,
    supported_version,
)
from ._codec import JSONL_FORMAT_VERSION, decode_meta, encode_meta, encode_record
from ._files import RecordTail, iter_snapshots_backward, read_records, scan_record_tail
from ._snapshots import (
    PARTS,
    collect,
    latest_snapshot_file,
    read_snapshot_file,
    read_parts,
    snapshot_name,
    snapshot_seqs,
    sync_dir,
    write_snapshot_file,
)

RECORDS = "records.jsonl"
SNAPSHOTS = "snapshots.jsonl"
META = "meta.json"
LOCK = "lock"
_FORK_CHUNK = 512


def dir_name(thread_id: str) -> str:
    """The directory name of a thread: its id, percent-escaped (and never starting with a dot)."""
    name = urllib.parse.quote(thread_id, safe="")
    if name.startswith("."):
        name = "%2E" + name[1:]
    if len(name.encode()) > 255:
        raise InvalidThreadIdError(thread_id, "too long for a jsonl store once escaped")
    return name


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (``os.write`` may write less)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_meta(path: Path, thread_id: str | None = None) -> tuple[ThreadInfo, int]:
    """The thread in directory ``path`` and its format version, checked to be ``thread_id``
    if given.

    Raises:
        StoreFormatError: ``meta.json`` is malformed, of a format this build does not read,
            or another thread's.
    """
    try:
        meta, version = decode_meta((path / META).read_bytes(), str(path / META))
    except ValueError as exc:
        raise StoreFormatError(str(path / META), f"malformed meta.json ({exc})") from None
    if thread_id is not None and meta.thread_id != thread_id:
        raise StoreFormatError(
            str(path / META),
            f"it belongs to thread {meta.thread_id!r}, not {thread_id!r} (a file system "
            "that ignores case?); use thread ids that differ in more than case",
        )
    return meta, version


class JsonlBackend:
    """Threads as directories under ``root``; see the module docstring."""

    blocking = True

    def __init__(self, root: Path, fsync: FsyncLevel) -> None:
        self._root = root
        self._fsync = fsync

    def _dir(self, thread_id: str) -> Path:
        return self._root / dir_name(thread_id)

    def _sync_dir(self, path: Path) -> None:
        if self._fsync is not FsyncLevel.OFF:
            sync_dir(path)

    def _meta(self, path: Path, thread_id: str | None = None) -> ThreadInfo:
        """The thread's ``meta.json``, checked to belong to ``thread_id`` if given."""
        return read_meta(path, thread_id)[0]

    def list_threads(self) -> list[ThreadInfo]:
        infos = []
        for entry in os.scandir(self._root):
            path = Path(entry.path)
            if entry.is_dir() and (path / META).exists():
                meta = self._meta(path)
                with _Files(path) as files:
                    tail = files.tail(meta.thread_id)
                last = tail.last.sent_at if tail.last else meta.created_at
                infos.append(
                    ThreadInfo(
                        meta.thread_id,
                        tail.last_seq,
                        meta.created_at,
                        max(last, meta.created_at),
                        meta.forked_from,
                        meta.forked_at,
                    )
                )
        return sorted(infos, key=lambda info: info.thread_id)

    def thread_exists(self, thread_id: str) -> bool:
        return (self._dir(thread_id) / META).exists()

    def open_writer(self, thread_id: str, create: bool, owner: str) -> _JsonlWriter:
        path = self._dir(thread_id)
        if not create and not (path / META).exists():
            raise ThreadNotFoundError(thread_id)
        made = False
        try:
            if create and not path.exists():
                path.mkdir()
                made = True
                self._sync_dir(self._root)
            lock_fd = _lock(path / LOCK, thread_id, owner)
        except OSError as exc:
            if made:
                _remove_new_thread(path)
            raise _refused(path, thread_id, exc) from None
        try:
            if not (path / META).exists():
                if not create:
                    raise ThreadNotFoundError(thread_id)
                now = dt.datetime.now(dt.timezone.utc)
                self._start_thread(path, ThreadInfo(thread_id, 0, now, now), [], None, {})
            _, version = read_meta(path, thread_id)
            return _JsonlWriter(path, thread_id, lock_fd, self._fsync, version)
        except OSError as exc:
            if made:  # (under the lock: no other writer started the thread meanwhile)
                _remove_new_thread(path)
            os.close(lock_fd)
            raise _refused(path, thread_id, exc) from None
        except BaseException:
            os.close(lock_fd)
            raise

    def _start_thread(
        self,
        path: Path,
        info: ThreadInfo,
        records: Iterable[list[StoredRecord]],
        snapshot: Snapshot | None,
        parts: dict[str, bytes],
    ) -> None:
        """Write a new thread's files (replacing leftovers of an interrupted start), meta last."""
        sync = self._fsync is not FsyncLevel.OFF
        stamped = False
        with open(path / RECORDS, "wb") as f:
            for chunk in records:
                stamped = stamped or any(r.system_seq is not None for r in chunk)
                f.write(b"".join(encode_record(r, info.last_seq) for r in chunk))
            f.flush()
            if sync:
                os.fsync(f.fileno())
        with open(path / SNAPSHOTS, "wb") as f:  # (empty: for an older build, which reads only it)
            if sync:
                os.fsync(f.fileno())
        if snapshot is not None:
            write_snapshot_file(path, snapshot, parts, sync)
        # format 1 while no record has a system seq (an older build reads it still), else 2
        write_meta(path, info, JSONL_FORMAT_VERSION if stamped else 1, self._fsync)

    def open_reader(self, thread_id: str) -> _JsonlReader:
        path = self._dir(thread_id)
        if not (path / META).exists():
            raise ThreadNotFoundError(thread_id)
        self._meta(path, thread_id)
        return _JsonlReader(path, thread_id)

    def fork(self, src_thread: str, at_seq: int, new_thread: str) -> ThreadInfo:
        source = self.open_reader(src_thread)
        try:
            last = source.last_seq()
            if not 0 <= at_seq <= last:
                raise SeqOutOfRangeError(src_thread, at_seq, last, "cannot fork")
            path = self._dir(new_thread)
            if (path / META).exists():
                raise ThreadExistsError(new_thread)
            made = not path.exists()
            try:
                path.mkdir(exist_ok=True)
                self._sync_dir(self._root)
                lock_fd = _lock(path / LOCK, new_thread, f"fork of {src_thread!r}")
            except OSError as exc:
                if made:
                    _remove_new_thread(path)
                raise _refused(path, new_thread, exc) from None
            try:
                if (path / META).exists():
                    raise ThreadExistsError(new_thread)
                now = dt.datetime.now(dt.timezone.utc)
                copied: list[StoredRecord] = []  # the last chunk copied
                snapshot = source.latest_snapshot(at_seq) if at_seq else None
                covers = rehome(source.read(snapshot.seq, snapshot.seq)[0], new_thread).checksum if snapshot else ""
                parts = source.snapshot_parts(snapshot) if snapshot else {}
                self._start_thread(
                    path,
                    ThreadInfo(new_thread, at_seq, now, now, src_thread, at_seq),
                    _copy(source, at_seq, new_thread, copied),
                    rehome_snapshot(snapshot, new_thread, covers) if snapshot else None,
                    parts,
                )
            except OSError as exc:
                if made:
                    _remove_new_thread(path)
                raise _refused(path, new_thread, exc) from None
            finally:
                os.close(lock_fd)
        finally:
            source.close()
        activity = max(now, copied[-1].sent_at) if copied else now
        return ThreadInfo(new_thread, at_seq, now, activity, src_thread, at_seq)

    def create_thread(self, info: ThreadInfo) -> None:
        thread_id = info.thread_id
        path = self._dir(thread_id)
        if (path / META).exists():
            raise ThreadExistsError(thread_id)
        made = not path.exists()
        try:
            path.mkdir(exist_ok=True)
            self._sync_dir(self._root)
            lock_fd = _lock(path / LOCK, thread_id, "a copy")
        except OSError as exc:
            if made:
                _remove_new_thread(path)
            raise _refused(path, thread_id, exc) from None
        try:
            if (path / META).exists():
                raise ThreadExistsError(thread_id)
            self._start_thread(path, ThreadInfo(thread_id, 0, info.created_at, info.created_at,
                                                info.forked_from, info.forked_at), [], None, {})
        except OSError as exc:
            if made:
                _remove_new_thread(path)
            raise _refused(path, thread_id, exc) from None
        finally:
            os.close(lock_fd)

    def close(self) -> None:
        pass


def write_meta(path: Path, info: ThreadInfo, version: int, fsync: FsyncLevel) -> None:
    """Write the thread's ``meta.json`` atomically (a new file, then renamed over the old)."""
    sync = fsync is not FsyncLevel.OFF
    tmp = path / f"{META}.tmp"
    with open(tmp, "wb") as f:
        f.write(encode_meta(info, version))
        f.flush()
        if sync:
            os.fsync(f.fileno())
    os.replace(tmp, path / META)
    if sync:
        sync_dir(path)


def _copy(
    source: _JsonlReader, at_seq: int, new_thread: str, last_chunk: list[StoredRecord]
) -> Iterator[list[StoredRecord]]:
    """Records ``1..at_seq`` of ``source`` moved to ``new_thread``, in chunks."""
    for start in range(1, at_seq + 1, _FORK_CHUNK):
        chunk = [
            rehome(r, new_thread) for r in source.read(start, min(start + _FORK_CHUNK - 1, at_seq))
        ]
        last_chunk[:] = chunk
        yield chunk


def _refused(path: Path, thread_id: str, exc: OSError) -> StoreReadOnlyError | LogWriteError:
    """What an ``OSError`` met while opening or making a thread means: a thread (or store)
    that may only be read, or a write that failed (a full disk...)."""
    where = f": {exc.filename}" if exc.filename else ""
    detail = f"{exc.strerror or exc}{where}"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return StoreReadOnlyError(str(path), detail)
    return LogWriteError(thread_id, detail)


def _remove_new_thread(path: Path) -> None:
    """Remove what an unfinished start of a new thread left in ``path`` (no ``meta.json``:
    no thread yet), and ``path`` itself."""
    with contextlib.suppress(OSError):
        shutil.rmtree(path / PARTS)
    with contextlib.suppress(OSError):
        for seq in snapshot_seqs(path):
            (path / snapshot_name(seq)).unlink()
    for name in (f"{META}.tmp", RECORDS, SNAPSHOTS, LOCK):
        with contextlib.suppress(OSError):
            (path / name).unlink()
    with contextlib.suppress(OSError):
        path.rmdir()


def _lock(path: Path, thread_id: str, owner: str) -> int:
    """Take the thread's flock, write our name into it, and return its descriptor."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        os.close(fd)
        raise ThreadLockedError(thread_id, holder or "a writer that is just starting") from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, current_holder(owner).describe().encode("utf-8"), 0)
    return fd


class _Files:
    """The open ``records.jsonl`` and ``snapshots.jsonl`` of one thread directory."""

    def __init__(self, path: Path, *, write: bool = False) -> None:
        flags = (os.O_RDWR | os.O_APPEND) if write else os.O_RDONLY
        self.records = os.open(path / RECORDS, flags)
        try:
            self.snapshots = os.open(path / SNAPSHOTS, flags)
        except BaseException:
            os.close(self.records)
            raise

    def tail(self, thread_id: str) -> RecordTail:
        return scan_record_tail(self.records, os.fstat(self.records).st_size, thread_id)

    def close(self) -> None:
        for fd in (self.records, self.snapshots):
            if fd >= 0:
                os.close(fd)
        self.records = self.snapshots = -1

    def __enter__(self) -> _Files:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _JsonlReader:
    def __init__(self, path: Path, thread_id: str, *, write: bool = False) -> None:
        self.thread_id = thread_id
        self._path = path
        self._files = _Files(path, write=write)

    def last_seq(self) -> int:
        return self._files.tail(self.thread_id).last_seq

    def read(self, from_seq: int, to_seq: int) -> list[StoredRecord]:
        end = self._files.tail(self.thread_id).end
        return read_records(self._files.records, end, self.thread_id, from_seq, to_seq)

    def latest_snapshot(self, at_or_before: int) -> Snapshot | None:
        newest = latest_snapshot_file(self._path, self.thread_id, at_or_before)
        if newest is not None:  # (files supersede the lines of snapshots.jsonl: those are older)
            newest.verify(self.read(newest.seq, newest.seq)[0])
            return newest
        fd = self._files.snapshots
        for _, _, snapshot, damage in iter_snapshots_backward(fd, os.fstat(fd).st_size, self.thread_id):
            if damage is not None and damage.seq <= at_or_before:  # (-1: its seq is unreadable)
                raise damage  # (one past the bound does not keep an older snapshot from being read)
            if snapshot is not None and snapshot.seq <= at_or_before:
                snapshot.verify(self.read(snapshot.seq, snapshot.seq)[0])
                return snapshot
        return None

    def read_parts(self, keys: list[str]) -> list[bytes | None]:
        return read_parts(self._path, keys)

    def snapshot_parts(self, snapshot: Snapshot) -> dict[str, bytes]:
        """The parts of ``snapshot``, checked, by key (raises :class:`CorruptRecordError`)."""
        keys = list(snapshot.parts)
        return dict(zip(keys, checked_parts(self.thread_id, snapshot.seq, keys, self.read_parts(keys)), strict=True))

    def ignored(self) -> list[Warning]:
        """What this reader passes over: a torn last record (see :class:`TornTailWarning`)."""
        try:
            tail = self._files.tail(self.thread_id)
        except CorruptRecordError:
            return []  # (damage before the tail: reported when read)
        return [TornTailWarning(self.thread_id, tail.last_seq + 1, tail.torn_reason)] if tail.torn_lines else []

    def close(self) -> None:
        self._files.close()


class _JsonlWriter(_JsonlReader):
    def __init__(self, path: Path, thread_id: str, lock_fd: int, fsync: FsyncLevel, version: int) -> None:
        super().__init__(path, thread_id, write=True)
        self._lock_fd = lock_fd
        self._fsync = fsync
        self._version = version  # the thread's format (meta.json)
        self._broken = ""
        self.repairs: list[Warning] = []
        try:
            self._repair_records()
            self._repair_snapshots()
            self._repair_snapshot_files()
        except BaseException:
            self._files.close()
            raise

    def _repair_records(self) -> None:
        tail = self._files.tail(self.thread_id)
        if tail.last is not None:
            if not supported_version(tail.last.schema_version):
                tail.last.verify()  # never append after unknown data (it raises: newer, or damaged)
        if tail.torn_lines:
            self._truncate(self._files.records, tail.end)
            self.repairs.append(
                TornRecordWarning(
                    self.thread_id, tail.last_seq + 1, tail.torn_lines, tail.torn_reason
                )
            )
        self._end = tail.end
        self._last = tail.last_seq

    def _repair_snapshots(self) -> None:
        fd = self._files.snapshots
        size = os.fstat(fd).st_size
        cut, dropped, reason, self._snapshot_seq = size, 0, "", 0
        damaged: list[Warning] = []
        for start, stop, snapshot, damage in iter_snapshots_backward(fd, size, self.thread_id):
            if damage is not None:  # (a complete line: damaged after it was written, not torn)
                cut = start
                damaged.append(DamagedSnapshotWarning(self.thread_id, damage.seq, damage.detail))
                continue
            if snapshot is None or snapshot.seq > self._last:
                cut, dropped = start, dropped + 1
                reason = reason or ("partial last line" if snapshot is None else "past the log's end")
                continue
            problem = self._damage(snapshot)
            if problem is not None:
                cut = start
                damaged.append(DamagedSnapshotWarning(self.thread_id, snapshot.seq, problem))
                continue
            self._snapshot_seq = snapshot.seq
            break
        if cut != size:
            self._truncate(fd, cut)
        if dropped:
            self.repairs.append(TornSnapshotWarning(self.thread_id, dropped, reason))
        self.repairs.extend(damaged)

    def _damage(self, snapshot: Snapshot) -> str | None:
        """Why ``snapshot`` is damaged, or ``None`` (see :func:`snapshot_damage`)."""
        try:
            covered = self.read(snapshot.seq, snapshot.seq)[0]
        except CorruptRecordError:
            return None  # (the record's fault: reported when it is read)
        return snapshot_damage(snapshot, covered)

    def _repair_snapshot_files(self) -> None:
        """Drop snapshot files past the log's end, then what no kept snapshot needs (see
        :func:`collect`); learn the latest snapshot's seq."""
        seqs = snapshot_seqs(self._path)
        past = [seq for seq in seqs if seq > self._last]
        for seq in past:
            (self._path / snapshot_name(seq)).unlink()
        if past:
            self.repairs.append(TornSnapshotWarning(self.thread_id, len(past), "past the log's end"))
        files = [seq for seq in seqs if seq <= self._last]
        while files:  # (files are written whole: one that fails its checks was damaged after)
            problem = self._file_damage(files[-1])
            if problem is None:
                break
            (self._path / snapshot_name(files[-1])).unlink()
            self.repairs.append(DamagedSnapshotWarning(self.thread_id, files.pop(), problem))
        collect(self._path)
        self._snapshot_seq = max(self._snapshot_seq, files[-1] if files else 0)

    def _file_damage(self, seq: int) -> str | None:
        """Why the snapshot file at ``seq`` is damaged, or ``None``."""
        try:
            snapshot = read_snapshot_file(self._path, self.thread_id, seq)
        except CorruptRecordError as exc:
            return exc.detail
        if snapshot is None:
            return None
        problem = self._damage(snapshot)
        if problem is None and snapshot.parts:
            try:
                self.snapshot_parts(snapshot)
            except CorruptRecordError as exc:
                return exc.detail
        return problem

    def _truncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)
        if self._fsync is not FsyncLevel.OFF:
            os.fsync(fd)

    def last_seq(self) -> int:
        return self._last

    def latest_snapshot_seq(self) -> int:
        return self._snapshot_seq

    def read(self, from_seq: int, to_seq: int) -> list[StoredRecord]:
        return read_records(self._files.records, self._end, self.thread_id, from_seq, to_seq)

    def _commit(self, fd: int, start: int, data: bytes) -> None:
        """Write ``data`` at the end (``start``) of ``fd`` and sync it; undo it on failure."""
        if self._broken:
            raise LogWriteError(self.thread_id, self._broken)
        try:
            write_all(fd, data)
            if self._fsync is FsyncLevel.FULL:
                os.fdatasync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, start)
            except OSError:
                self._broken = f"an earlier failed write could not be undone ({exc})"
            raise LogWriteError(self.thread_id, str(exc)) from None

    def append(self, records: list[StoredRecord]) -> None:
        if self._version < JSONL_FORMAT_VERSION and records[0].system_seq is not None:
            # an older build would call a stamped line malformed: make it refuse the thread first
            info, _ = read_meta(self._path, self.thread_id)
            try:
                write_meta(self._path, info, JSONL_FORMAT_VERSION, self._fsync)
            except OSError as exc:
                raise LogWriteError(self.thread_id, f"meta.json: {exc}") from None
            self._version = JSONL_FORMAT_VERSION
        end = records[-1].seq
        data = b"".join(encode_record(r, end) for r in records)
        self._commit(self._files.records, self._end, data)
        self._end += len(data)
        self._last = end

    def write_snapshot(self, snapshot: Snapshot, new_parts: dict[str, bytes]) -> None:
        if self._broken:
            raise LogWriteError(self.thread_id, self._broken)
        sync = self._fsync is not FsyncLevel.OFF
        try:
            write_snapshot_file(self._path, snapshot, new_parts, sync)
            self._snapshot_seq = snapshot.seq
            fd = self._files.snapshots
            if os.fstat(fd).st_size:  # (older snapshots, superseded by this one)
                self._truncate(fd, 0)
        except OSError as exc:
            raise LogWriteError(self.thread_id, f"snapshot: {exc}") from None
        finally:
            with contextlib.suppress(OSError):  # (what stays is removed by the next one)
                collect(self._path)

    def close(self) -> None:
        super().close()
        if self._lock_fd >= 0:
            try:
                os.ftruncate(self._lock_fd, 0)
            finally:
                os.close(self._lock_fd)  # releases the flock
                self._lock_fd = -1

"""Opening a store from a URL, and where the default store lives."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import urllib.parse
from collections.abc import Mapping
from pathlib import Path

import trio

from .base import (
    FsyncLevel,
    StoreCorruptError,
    StoreFormatError,
    StoreOpenError,
    StoreReadOnlyError,
    StoreUrlError,
    resolve_fsync,
)
from ._frontend import BackendStore
from ._interface import EventStore
from .jsonl import JsonlBackend
from .memory import MemoryBackend
from .sqlite import (
    BUSY_TIMEOUT_S,
    NO_SPACE,
    READABLE_FORMAT_VERSIONS,
    SqliteBackend,
    connect,
    connect_to_read,
    damaged,
    disk_full,
    ensure_schema,
    refused_to_write,
)

STORE_ENV_VAR = "LIVECONTEXT_STORE"
"""The environment variable that overrides :func:`default_store_url`."""
DEFAULT_STORE_PATH = Path(".livecontext") / "livecontext.db"
"""Where the default SQLite store lives, relative to the current (project) directory."""


def default_store_url(environ: Mapping[str, str] | None = None) -> str:
    """The store to use when none is named: ``$LIVECONTEXT_STORE`` if set, else per project.

    The per-project default is an SQLite file, ``./.livecontext/livecontext.db`` under the
    current directory (returned as an absolute ``sqlite:`` URL), so that each project keeps its
    own threads next to its code, like ``.git``.
    """
    env = os.environ if environ is None else environ
    url = env.get(STORE_ENV_VAR, "").strip()
    if url:
        return url
    return f"sqlite:{Path.cwd() / DEFAULT_STORE_PATH}"


async def open_store(url: str, *, fsync: FsyncLevel | None = None, read_only: bool = False) -> EventStore:
    """Open (creating if needed) the store at ``url``.

    Use it as ``async with await open_store(url) as store:``, or close it with ``aclose()``.

    Args:
        url: ``sqlite:PATH`` (one database file for every thread; ``sqlite:///abs/path`` works
            too), ``jsonl:DIR`` (a directory per thread) or ``memory:`` (a new, private
            in-process store each time), or ``postgresql://USER@HOST:PORT/DB`` (a libpq URI;
            the password from the URL or the usual ``PG*`` variables; every machine may share
            it; ``fsync`` and ``read_only`` do not apply: an append is durable once committed). Relative paths are taken from the current directory;
            missing parent directories are created.
        fsync: how durable an append is when it returns (see :class:`FsyncLevel`); by
            default ``$LIVECONTEXT_FSYNC``, else ``FULL``.
        read_only: open an existing store to read it: nothing is created, and a store that
            cannot be written (its permissions, a read-only file system) opens all the same;
            writing to such a store raises :class:`StoreReadOnlyError`.

    Raises:
        StoreUrlError: the scheme is unknown, or a path is missing or given to ``memory:``.
        StoreOpenError: the path cannot be created or written (:class:`StoreReadOnlyError`:
            it can only be read), or, with ``read_only``, cannot be read; nothing was written.
        StoreFormatError: the path holds something that is not a store this build reads.
        FsyncLevelError: ``$LIVECONTEXT_FSYNC`` names no level.
    """
    if not isinstance(url, str):
        raise TypeError(f"the store URL must be a str, got {type(url).__name__}")
    scheme, sep, rest = url.partition(":")
    scheme = scheme.strip().lower()
    if not sep or not scheme:
        raise StoreUrlError("the store URL has no scheme")
    level = resolve_fsync(fsync)
    if scheme == "memory":
        if rest:
            raise StoreUrlError("memory: takes no path (each memory: store is new and private)")
        return BackendStore(MemoryBackend(), "memory:")
    if scheme in ("postgresql", "postgres"):
        return await _open_postgres(url)
    if scheme not in ("sqlite", "jsonl"):
        raise StoreUrlError(f"unknown store URL scheme {scheme!r}")
    if rest.startswith("//"):
        rest = rest[2:]
    if not rest.strip():
        raise StoreUrlError(f"{scheme}: needs a path")
    path = Path(rest).expanduser().absolute()
    if scheme == "sqlite":
        opener = _open_sqlite_to_read if read_only else _open_sqlite
        sqlite_backend = await trio.to_thread.run_sync(opener, path, level)
        return BackendStore(sqlite_backend, f"sqlite:{path}")
    jsonl_backend = await trio.to_thread.run_sync(_open_jsonl, path, level, read_only)
    return BackendStore(jsonl_backend, f"jsonl:{path}")


async def _open_postgres(url: str) -> EventStore:
    """A PostgreSQL store (psycopg is imported only here: it is an optional extra)."""
    try:
        from .postgres import describe_url, open_postgres
    except ImportError:
        where = f"{url.split('://', 1)[0]}://{url.rsplit('@', 1)[-1]}" if "@" in url else url  # (no password)
        raise StoreOpenError(where, "psycopg is not installed",
                             "pip install 'livecontext[postgres]'") from None
    backend = await trio.to_thread.run_sync(open_postgres, url)
    return BackendStore(backend, describe_url(url))


def _make_dirs(path: Path) -> list[Path]:
    """Create ``path`` and its missing parents; return those created (outermost first)."""
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    created: list[Path] = []
    try:
        for directory in reversed(missing):
            directory.mkdir()
            created.append(directory)
    except OSError:
        _remove_dirs(created)
        raise
    return created


def _remove_dirs(created: list[Path]) -> None:
    for directory in reversed(created):
        with contextlib.suppress(OSError):
            directory.rmdir()


def _open_sqlite(path: Path, level: FsyncLevel) -> SqliteBackend:
    try:
        created = _make_dirs(path.parent)
    except OSError as exc:
        raise StoreOpenError(str(path), exc.strerror or str(exc)) from None
    existed = path.exists()
    try:
        if path.is_dir():
            raise StoreOpenError(str(path), "it is a directory")
        conn = connect(str(path), level)
        try:
            version = ensure_schema(conn, str(path))
            read_conn = connect_to_read(str(path))
        except BaseException:
            conn.close()
            raise
    except BaseException as exc:
        if not existed:
            for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                leftover.unlink(missing_ok=True)
        _remove_dirs(created)
        if isinstance(exc, sqlite3.OperationalError):
            if refused_to_write(exc):
                raise StoreReadOnlyError(str(path), f"sqlite: {exc}") from None
            if disk_full(path.parent):
                raise StoreOpenError(str(path), f"sqlite: {exc}; {NO_SPACE}", "free disk space and run again") from None
            raise StoreOpenError(str(path), f"sqlite: {exc}") from None
        if isinstance(exc, sqlite3.DatabaseError):
            if existed and damaged(exc) and "not a database" not in str(exc):
                raise StoreCorruptError(str(path), f"sqlite: {exc}") from None
            raise StoreFormatError(
                str(path), f"it is not a livecontext store (sqlite: {exc})"
            ) from None
        raise
    return SqliteBackend(conn, str(path), version, read_conn)


def _open_sqlite_to_read(path: Path, level: FsyncLevel) -> SqliteBackend:
    """Open an existing SQLite store to read it, though it may not be writable.

    As a writer would first (a writable store is left as a writer leaves it: no ``-wal`` or
    ``-shm`` behind); if SQLite cannot write there (permissions, a full disk), read-only
    (``mode=ro``: SQLite still needs the ``-shm`` file of a store in WAL mode, which it cannot
    make in a read-only folder or on a full disk); then, if the store's ``-wal`` holds nothing,
    as an unchanging file (``immutable=1``, which reads no ``-wal`` and needs no ``-shm``).
    """
    if not path.is_file():
        raise StoreOpenError(str(path), "no such file" if not path.exists() else "it is not a file")
    try:
        return _checked_to_read(connect(str(path), level), path)
    except sqlite3.OperationalError:
        pass  # (it may not be written, or there is no room to write its -wal and -shm)
    uri = f"file:{urllib.parse.quote(str(path))}"
    try:
        return _checked_to_read(sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None,
                                                check_same_thread=False, timeout=BUSY_TIMEOUT_S), path)
    except sqlite3.OperationalError as exc:
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise StoreOpenError(
                str(path), f"sqlite: {exc}; its write-ahead log {wal.name} holds changes that SQLite reads "
                f"only with a {path.name}-shm file, which it cannot make in {path.parent}",
                "make the folder writable (or free disk space), or copy the store's files elsewhere") from None
    return _checked_to_read(sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None,
                                            check_same_thread=False), path)


def _checked_to_read(conn: sqlite3.Connection, path: Path) -> SqliteBackend:
    """A backend over ``conn`` if it holds a store this build reads (``conn`` is closed if not)."""
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in READABLE_FORMAT_VERSIONS:
            ensure_schema(conn, str(path))  # (says what is wrong; creates nothing in a non-empty file)
    except sqlite3.DatabaseError as exc:
        conn.close()
        if isinstance(exc, sqlite3.OperationalError):
            raise
        if damaged(exc) and "not a database" not in str(exc):
            raise StoreCorruptError(str(path), f"sqlite: {exc}") from None
        raise StoreFormatError(str(path), f"it is not a livecontext store (sqlite: {exc})") from None
    except BaseException:
        conn.close()
        raise
    return SqliteBackend(conn, str(path), int(version))


def _open_jsonl(path: Path, level: FsyncLevel, read_only: bool = False) -> JsonlBackend:
    if read_only:  # (a store that cannot be written can still be read)
        if not path.is_dir():
            raise StoreOpenError(str(path), "no such directory" if not path.exists() else "it is not a directory")
        return JsonlBackend(path, level)
    try:
        created = _make_dirs(path)
    except OSError as exc:
        raise StoreOpenError(str(path), exc.strerror or str(exc)) from None
    if not path.is_dir():
        raise StoreOpenError(str(path), "it is not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        _remove_dirs(created)
        raise StoreReadOnlyError(str(path), "the directory is not writable")
    return JsonlBackend(path, level)

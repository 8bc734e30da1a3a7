"""Opening stores: URLs, paths that cannot be used, the default location, fsync levels."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from livecontext.runtime import UsageError
from livecontext.runtime.persistence import (
    FsyncLevel,
    FsyncLevelError,
    NewRecord,
    StoreFormatError,
    StoreOpenError,
    StoreUrlError,
    default_store_url,
    open_store,
)
from livecontext.runtime.persistence.base._fsync import resolve_fsync

MakeRecords = Callable[..., list[NewRecord]]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://user:secret@db/x", "unknown store URL scheme 'mysql'"),
        ("store.db", "the store URL has no scheme"),
        ("memory:named", "memory: takes no path"),
        ("sqlite:", "sqlite: needs a path"),
        ("jsonl:  ", "jsonl: needs a path"),
    ],
)
async def test_a_bad_url_is_one_line_naming_the_accepted_schemes(url: str, message: str) -> None:
    with pytest.raises(StoreUrlError) as info:
        await open_store(url)
    text = str(info.value)
    assert text.startswith(message)
    assert text.endswith("accepted store URLs are sqlite:PATH, jsonl:DIR, memory: and postgresql://USER@HOST:PORT/DB")
    assert "\n" not in text and "secret" not in text
    assert isinstance(info.value, UsageError)


@pytest.mark.parametrize("scheme", ["sqlite", "jsonl"])
async def test_a_path_that_cannot_be_created_is_one_line_and_nothing_is_written(
    tmp_path: Path, scheme: str
) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    target = tmp_path / "a-file" / "deeper" / "store"
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(StoreOpenError) as info:
        await open_store(f"{scheme}:{target}")
    assert str(info.value) == (
        f"cannot open the store at {target}: Not a directory; "
        "choose a path you can write to (or fix its permissions)"
    )
    assert sorted(tmp_path.rglob("*")) == before


async def test_missing_parent_directories_are_created(tmp_path: Path) -> None:
    async with await open_store(f"sqlite:{tmp_path / 'a' / 'b' / 's.db'}") as store:
        assert store.url == f"sqlite:{tmp_path / 'a' / 'b' / 's.db'}"
    async with await open_store(f"jsonl://{tmp_path / 'c' / 'd'}") as store:
        assert store.url == f"jsonl:{tmp_path / 'c' / 'd'}"
    assert (tmp_path / "a" / "b" / "s.db").is_file() and (tmp_path / "c" / "d").is_dir()


async def test_a_file_that_is_not_a_store_is_refused_and_left_alone(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"hello, I am not a database" * 100)
    with pytest.raises(
        StoreFormatError, match=f"cannot use the store at {junk}: it is not a livecontext store"
    ):
        await open_store(f"sqlite:{junk}")
    assert junk.read_bytes() == b"hello, I am not a database" * 100
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE mine (x)")
    with pytest.raises(
        StoreFormatError, match="it is an SQLite database but not a livecontext store"
    ):
        await open_store(f"sqlite:{other}")


async def test_a_store_of_a_newer_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with await open_store(f"sqlite:{path}"):
        pass
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 7")
    with pytest.raises(
        StoreFormatError, match="its store format is version 7, this build reads versions 1 to 4; upgrade livecontext to open it"
    ):
        await open_store(f"sqlite:{path}")


def test_the_default_store_is_per_project_unless_the_environment_says_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_store_url({}) == f"sqlite:{tmp_path / '.livecontext' / 'livecontext.db'}"
    assert default_store_url({"LIVECONTEXT_STORE": "jsonl:/data/threads"}) == "jsonl:/data/threads"


def test_the_fsync_level_comes_from_the_argument_then_the_environment() -> None:
    assert resolve_fsync(None, {}) is FsyncLevel.FULL
    assert resolve_fsync(None, {"LIVECONTEXT_FSYNC": " Normal "}) is FsyncLevel.NORMAL
    assert resolve_fsync(FsyncLevel.OFF, {"LIVECONTEXT_FSYNC": "full"}) is FsyncLevel.OFF
    with pytest.raises(
        FsyncLevelError, match="unknown fsync level 'sometimes': use one of full, normal, off"
    ):
        resolve_fsync(None, {"LIVECONTEXT_FSYNC": "sometimes"})


@pytest.mark.parametrize("level", list(FsyncLevel))
async def test_every_fsync_level_stores_and_reopens(
    tmp_path: Path, level: FsyncLevel, make_records: MakeRecords
) -> None:
    for url in (f"sqlite:{tmp_path / 's.db'}", f"jsonl:{tmp_path / 'j'}"):
        async with await open_store(url, fsync=level) as store:
            async with await store.open_thread("t", owner="history") as log:
                await log.append(make_records(3))
        async with await open_store(url, fsync=level) as store:
            async with await store.open_reader("t") as reader:
                assert await reader.last_seq() == 3


async def test_sqlite_runs_in_wal_mode_with_the_chosen_synchronous_level(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:{tmp_path / 's.db'}", fsync=FsyncLevel.NORMAL)
    async with store:
        conn = store._backend._conn  # type: ignore[attr-defined]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL

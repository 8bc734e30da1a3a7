"""One damaged record, or one damaged SQLite page, spoils only itself at the command line.

Every case is deterministic: a record's payload changed in place (its checksum left), a
record's schema version turned from 3 into 49 (as one flipped bit turns SQLite's integer), or
the page-type byte of the page that holds a thread's records zeroed.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from livecontext.actors.cli import main

from tests.support.command import notebook_turns, url_for, write_script


def lc(*args: str) -> Result:
    """``livecontext ARGS`` in this process."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def ok(*args: str) -> str:
    result = lc(*args)
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.fixture(params=["sqlite", "jsonl", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store of each durable backend holding threads ``t`` and ``u`` (14 records each)."""
    if request.param == "postgresql":
        url = str(request.getfixturevalue("postgres_url"))
    else:
        url = url_for(request.param, tmp_path / "s")
    script = write_script(tmp_path / "script.json", notebook_turns(3))
    for thread in ("t", "u"):
        ok("run", "--model", f"scripted:{script}", "--store", url, "--thread", thread, "--input", "go", "--json")
    return url


def damage_payload(url: str, thread: str, seq: int) -> None:
    """Change a record's payload, leaving its checksum (as a stray write would)."""
    if url.startswith("jsonl:"):
        file = Path(url.removeprefix("jsonl:")) / thread / "records.jsonl"
        lines = file.read_bytes().split(b"\n")
        lines[seq - 1] = lines[seq - 1].replace(b'"payload":"{', b'"payload":"{ ', 1)
        file.write_bytes(b"\n".join(lines))
        return
    run_sql(url, "UPDATE records SET payload = '{\"evil\":1}' WHERE thread_id = ? AND seq = ?", (thread, seq))


def run_sql(url: str, statement: str, params: tuple[Any, ...]) -> None:
    if url.startswith("postgresql:"):
        import psycopg

        with psycopg.connect(url) as pg:
            pg.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]
        return
    with sqlite3.connect(url.removeprefix("sqlite:")) as conn:
        conn.execute(statement, params)


def audit_seqs(stdout: str) -> list[int]:
    return [json.loads(line)["seq"] for line in stdout.splitlines()]


def test_threads_lists_the_healthy_threads_and_the_fork_beside_a_damaged_one(store: str) -> None:
    damage_payload(store, "t", 5)
    forked = lc("fork", "--store", store, "--thread", "t", "--at", "4", "--new-thread", "k2")
    assert forked.exit_code == 0, forked.stderr  # (the advice the damage gives: fork before it)
    result = lc("threads", "--store", store)
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["k2", "t", "u"]
    assert "entries" in lines[0] and "entries" in lines[2]
    assert lines[1].split(None, 1)[1] == (
        f"damaged: the record at seq 5 is corrupt (checksum mismatch); "
        f"`livecontext verify --store {store} --thread t` shows it")
    assert result.exit_code == 1
    assert result.stderr == (f"livecontext: error: 1 of 3 thread(s) cannot be read whole (listed with what is "
                             f"damaged); `livecontext verify --store {store}` lists every problem and what to do\n")
    rows = [json.loads(line) for line in lc("threads", "--store", store, "--json").stdout.splitlines()]
    assert [r["thread"] for r in rows] == ["k2", "t", "u"]
    assert rows[1]["damaged"]["seq"] == 5 and rows[1]["seq"] == 14 and "entries" not in rows[1]
    assert rows[0]["entries"] >= 1 and rows[2]["entries"] >= 1


def test_audit_prints_the_readable_records_around_a_damaged_one_then_exits_1(store: str) -> None:
    damage_payload(store, "t", 5)
    result = lc("audit", "--store", store, "--thread", "t", "--json")
    assert audit_seqs(result.stdout) == [1, 2, 3, 4, *range(6, 15)]
    assert result.stderr == ("livecontext: error: thread 't': the record at seq 5 is corrupt (checksum mismatch); "
                             "restore the store from a backup, or fork the thread at seq 4 "
                             "(`livecontext fork --thread t --at 4 --new-thread NEW`) to go on without it\n")
    assert result.exit_code == 1
    readable = lc("audit", "--store", store, "--thread", "t")  # (the readable form: the same records, the same line)
    assert [int(line.split()[0]) for line in readable.stdout.splitlines()] == [1, 2, 3, 4, *range(6, 15)]
    assert (readable.stderr, readable.exit_code) == (result.stderr, 1)
    assert audit_seqs(ok("audit", "--store", store, "--thread", "u", "--json")) == list(range(1, 15))


def test_audit_names_each_of_two_damaged_records_where_it_lies(store: str) -> None:
    damage_payload(store, "t", 1)
    damage_payload(store, "t", 10)
    result = lc("audit", "--store", store, "--thread", "t", "--json")
    assert audit_seqs(result.stdout) == [*range(2, 10), *range(11, 15)]
    errors = result.stderr.splitlines()
    assert [e.split(": the record at ")[1].split(" is ")[0] for e in errors] == ["seq 1", "seq 10"]
    assert result.exit_code == 1


def flip_schema_version(url: str, thread: str, seq: int) -> None:
    """Turn a record's schema version 3 into 49, its checksum left (one flipped byte)."""
    if url.startswith("jsonl:"):
        file = Path(url.removeprefix("jsonl:")) / thread / "records.jsonl"
        lines = file.read_bytes().split(b"\n")
        assert b'"schema_version":3,' in lines[seq - 1]
        lines[seq - 1] = lines[seq - 1].replace(b'"schema_version":3,', b'"schema_version":49,')
        file.write_bytes(b"\n".join(lines))
        return
    run_sql(url, "UPDATE records SET schema_version = 49 WHERE thread_id = ? AND seq = ?", (thread, seq))


def test_a_schema_version_flipped_to_49_is_reported_as_damage_naming_the_thread_and_seq(store: str) -> None:
    flip_schema_version(store, "t", 6)
    result = lc("verify", "--store", store)
    assert result.exit_code == 1
    assert result.stdout == (
        "thread 't': the record at seq 6 is corrupt (its schema version reads 49, but its checksum is that of "
        "version 3: a damaged byte); restore the store from a backup, or fork the thread at seq 5 "
        "(`livecontext fork --thread t --at 5 --new-thread NEW`) to go on without it\n")
    history = lc("history", "--store", store, "--thread", "t")
    assert history.exit_code == 1
    assert "thread 't': the record at seq 6 is corrupt" in history.stderr
    assert "unsupported schema version" not in history.stderr


# -- a damaged SQLite page --------------------------------------------------------------


@pytest.fixture
def sqlite_store(tmp_path: Path) -> tuple[str, Path]:
    """An SQLite store of threads ``t`` (long: its records fill pages of their own) and ``u``,
    checkpointed into the main file; returns its URL and path."""
    path = tmp_path / "store.db"
    url = f"sqlite:{path}"
    script = write_script(tmp_path / "script.json", notebook_turns(40))
    short = write_script(tmp_path / "short.json", notebook_turns(1))
    ok("run", "--model", f"scripted:{script}", "--store", url, "--thread", "t", "--input", "go", "--json")
    ok("run", "--model", f"scripted:{short}", "--store", url, "--thread", "u", "--input", "go", "--json")
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return url, path


def damage_second_leaf_of_records(path: Path, leaf: int = 1) -> None:
    """Zero the page-type byte of the records table's second leaf page in key order (thread
    ``t``'s records after its first page; ``u`` sorts after ``t``), or of its ``leaf``-th."""
    with sqlite3.connect(path) as conn:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        leaves = conn.execute("SELECT pageno FROM dbstat WHERE name = 'records' AND pagetype = 'leaf'"
                              " ORDER BY path").fetchall()
    assert len(leaves) >= 4, leaves
    raw = bytearray(path.read_bytes())
    raw[(leaves[leaf][0] - 1) * size] = 0
    path.write_bytes(bytes(raw))


SEQS = re.compile(r"thread 't': the record\(s\) at seqs (\d+)\.\.(\d+) cannot be read: the store's file is "
                  r"damaged there \(sqlite: database disk image is malformed\); restore the store from a backup")


def test_verify_of_a_damaged_sqlite_page_names_what_cannot_be_read_and_never_says_run_verify(
        sqlite_store: tuple[str, Path]) -> None:
    url, path = sqlite_store
    last = int(re.search(r"(\d+) record\(s\)", ok("verify", "--store", url)).group(1))  # type: ignore[union-attr]
    damage_second_leaf_of_records(path)
    result = lc("verify", "--store", url)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == (f"the store's file is damaged: sqlite: database disk image is malformed; restore {path} "
                        "from a backup: nothing writes into a damaged file, not even `fork`; or copy what can be "
                        f"read into a new store (`livecontext copy --store {url} --to sqlite:NEW.db`); the lines "
                        "below name what cannot be read")
    assert len(lines) == 2 and (found := SEQS.fullmatch(lines[1])), lines
    first, end = int(found.group(1)), int(found.group(2))
    assert 1 < first <= end
    assert f"{last - (end - first + 1)} record(s)" in result.stderr  # every other record of t and u read
    assert "livecontext verify" not in result.stdout

    audit = lc("audit", "--store", url, "--thread", "t", "--json")
    seqs = audit_seqs(audit.stdout)
    assert seqs[: first - 1] == list(range(1, first)) and seqs[first - 1] == end + 1
    assert audit.stderr.splitlines() == [f"livecontext: error: {lines[1]}"]
    assert audit.exit_code == 1

    threads = lc("threads", "--store", url)
    assert [line.split()[0] for line in threads.stdout.splitlines()] == ["t", "u"]
    assert "damaged: the store's file is damaged where it is kept" in threads.stdout.splitlines()[0]
    assert "entries" in threads.stdout.splitlines()[1]
    assert threads.exit_code == 1


def test_threads_lists_every_thread_when_the_page_of_a_thread_s_last_record_is_damaged(
        sqlite_store: tuple[str, Path]) -> None:
    url, path = sqlite_store
    damage_second_leaf_of_records(path, leaf=-1)  # (u's records, and t's last ones)
    result = lc("threads", "--store", url)
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["t", "u"]
    assert all("damaged: the store's file is damaged where it is kept" in line for line in lines)
    assert result.exit_code == 1
    rows = [json.loads(line) for line in lc("threads", "--store", url, "--json").stdout.splitlines()]
    assert rows[1]["seq"] > 1  # (its last seq, from the index: the listing says how long it is)

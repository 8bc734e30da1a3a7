"""``livecontext copy`` saves what can be read of a store into a new one: the same log.

A healthy store copied between backends is the same log record for record (seqs, senders,
times, system seqs, checksums), with each thread's creation time and fork link; a damaged one
is copied thread by thread, each up to its first damaged record, and says what it left
behind. Damage is made as in test_cli_damaged_record.py (deterministic).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
import trio

from livecontext.runtime.persistence import StoredRecord, ThreadInfo, open_store

from tests.support.systems import write_team

from tests.support.command import notebook_turns, url_for, write_script
from .test_cli_damaged_record import SEQS, damage_payload, damage_second_leaf_of_records, lc, ok


def run_thread(tmp_path: Path, url: str, thread: str, edits: int = 3) -> None:
    """Run an agent on thread ``thread``: ``edits`` notebook edits, an answer, and one more
    answer left in its script for a resumed run."""
    script = write_script(tmp_path / f"{thread}-{edits}.json", [*notebook_turns(edits), {"text": "resumed"}])
    ok("run", "--model", f"scripted:{script}", "--store", url, "--thread", thread, "--input", "go", "--json")


def dump(url: str) -> tuple[list[ThreadInfo], dict[str, list[StoredRecord]]]:
    """Every thread of the store at ``url`` and every record of each, as stored."""
    async def go() -> tuple[list[ThreadInfo], dict[str, list[StoredRecord]]]:
        async with await open_store(url) as store:
            infos = await store.threads()
            records = {}
            for info in infos:
                async with await store.open_reader(info.thread_id) as reader:
                    records[info.thread_id] = await reader.read()
        return infos, records
    return trio.run(go)


def audits(url: str, threads: list[str]) -> dict[str, str]:
    return {t: ok("audit", "--store", url, "--thread", t, "--json") for t in threads}


@pytest.fixture
def team_store(tmp_path: Path) -> str:
    """An SQLite store holding a system of four agents (records with system seqs, its log), a
    thread ``t`` and its fork ``k``."""
    url = url_for("sqlite", tmp_path / "s")
    (tmp_path / "team").mkdir()
    write_team(tmp_path / "team")
    ok("run", str(tmp_path / "team" / "team.toml"), "--store", url, "--json")
    run_thread(tmp_path, url, "t")
    ok("fork", "--store", url, "--thread", "t", "--at", "4", "--new-thread", "k")
    return url


def test_a_store_copied_sqlite_to_jsonl_and_back_is_the_same_log(team_store: str, tmp_path: Path) -> None:
    jsonl, sqlite = url_for("jsonl", tmp_path / "c1"), url_for("sqlite", tmp_path / "c2")
    infos, records = dump(team_store)
    assert any(r.system_seq is not None for r in records["team.planner"])  # (what must be kept)
    out = ok("copy", "--store", team_store, "--to", jsonl).splitlines()
    assert out[-1] == f"copied {len(infos)} thread(s), {sum(map(len, records.values()))} record(s) " \
                      f"from {team_store} to {jsonl}"
    assert f"thread 't': copied seqs 1..{len(records['t'])}" in out
    ok("copy", "--store", jsonl, "--to", sqlite)
    for copy in (jsonl, sqlite):
        assert dump(copy) == (infos, records)  # creation times, fork links, every field of every record
    threads = [info.thread_id for info in infos]
    assert audits(sqlite, threads) == audits(jsonl, threads) == audits(team_store, threads)
    assert ok("threads", "--store", sqlite, "--json") == ok("threads", "--store", team_store, "--json")


def test_a_copied_thread_renders_as_its_source_and_resumes(tmp_path: Path) -> None:
    url, copy = url_for("sqlite", tmp_path / "s"), url_for("jsonl", tmp_path / "c")
    run_thread(tmp_path, url, "t")
    ok("copy", "--store", url, "--to", copy)
    assert ok("render", "--store", copy, "--thread", "t") == ok("render", "--store", url, "--thread", "t")
    before = json.loads(ok("state", "--store", copy, "--thread", "t", "--json"))
    ok("run", "--store", copy, "--thread", "t", "--input", "and then?", "--json")  # (with its own model)
    after = json.loads(ok("state", "--store", copy, "--thread", "t", "--json"))
    assert after["entries"] > before["entries"] and after["seq"] > before["seq"]
    assert json.loads(ok("state", "--store", url, "--thread", "t", "--json")) == before  # (the source is untouched)
    assert ok("verify", "--store", copy).startswith("ok: ")


@pytest.fixture(params=["sqlite", "jsonl", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store of each durable backend holding threads ``t`` and ``u`` (14 records each)."""
    url = str(request.getfixturevalue("postgres_url")) if request.param == "postgresql" \
        else url_for(request.param, tmp_path / "s")
    for thread in ("t", "u"):
        run_thread(tmp_path, url, thread)
    return url


def test_a_damaged_record_stops_its_thread_there_and_the_other_threads_are_copied_whole(
        store: str, tmp_path: Path) -> None:
    _, records = dump(store)
    damage_payload(store, "t", 5)
    target = url_for("sqlite" if store.startswith("jsonl:") else "jsonl", tmp_path / "c")
    result = lc("copy", "--store", store, "--to", target)
    assert result.stdout.splitlines() == [
        "thread 't': copied seqs 1..4; seq 5 and after (to seq 14) left behind: seq 5 cannot be read "
        "(checksum mismatch), and a thread does not go on past a hole",
        "thread 'u': copied seqs 1..14",
        f"copied 2 thread(s), 18 record(s) from {store} to {target}",
    ]
    assert result.stderr == (f"livecontext: error: 1 thread(s) copied only up to their damage, 10 record(s) left "
                             f"behind (the lines above say where); `livecontext audit --store {store} --thread T` "
                             "shows what is readable past it\n")
    assert result.exit_code == 1
    _, copied = dump(target)
    assert copied == {"t": records["t"][:4], "u": records["u"]}
    assert ok("verify", "--store", target).startswith("ok: ")
    ok("render", "--store", target, "--thread", "t")


def test_a_damaged_sqlite_page_stops_the_thread_it_hides_and_the_other_is_copied_whole(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    url = f"sqlite:{path}"
    run_thread(tmp_path, url, "t", edits=40)
    run_thread(tmp_path, url, "u", edits=1)
    _, records = dump(url)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    damage_second_leaf_of_records(path)
    target = url_for("jsonl", tmp_path / "c")
    result = lc("copy", "--store", url, "--to", target)
    lines = result.stdout.splitlines()
    found = re.fullmatch(r"thread 't': copied seqs 1\.\.(\d+); seq (\d+) and after \(to seq (\d+)\) left behind: "
                         r"seqs (\d+)\.\.(\d+) cannot be read \(the store's file is damaged there: sqlite: database "
                         r"disk image is malformed\), and a thread does not go on past a hole", lines[0])
    assert found, lines[0]
    copied, first, last = int(found.group(1)), int(found.group(2)), int(found.group(3))
    assert first == copied + 1 == int(found.group(4)) and last == len(records["t"]) and copied >= 1
    verify = lc("verify", "--store", url).stdout.splitlines()[1]  # (the same stretch verify names)
    assert SEQS.fullmatch(verify) and f"seqs {first}..{found.group(5)} " in verify
    assert lines[1:] == [f"thread 'u': copied seqs 1..{len(records['u'])}",
                         f"copied 2 thread(s), {copied + len(records['u'])} record(s) from {url} to {target}"]
    assert result.exit_code == 1 and "record(s) left behind" in result.stderr
    _, saved = dump(target)
    assert saved == {"t": records["t"][:copied], "u": records["u"]}
    assert ok("verify", "--store", target).startswith("ok: ")


def test_a_target_that_holds_threads_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    url, target = url_for("sqlite", tmp_path / "s"), url_for("jsonl", tmp_path / "c")
    run_thread(tmp_path, url, "t")
    run_thread(tmp_path, target, "mine", edits=1)
    before = dump(target)
    result = lc("copy", "--store", url, "--to", target)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (f"livecontext: error: the store {target} already holds 1 thread(s) (mine); copy into "
                             "a store that does not exist yet, or an empty one: nothing was written\n")
    assert dump(target) == before


def test_a_source_whose_list_of_threads_is_damaged_says_so_and_creates_no_target(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    run_thread(tmp_path, f"sqlite:{path}", "t")
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'threads'").fetchone()
        (size,) = conn.execute("PRAGMA page_size").fetchone()
    raw = bytearray(path.read_bytes())
    raw[(root - 1) * size] = 0  # (the page-type byte of the threads table's page)
    path.write_bytes(bytes(raw))
    result = lc("copy", "--store", f"sqlite:{path}", "--to", url_for("jsonl", tmp_path / "c"))
    assert result.exit_code == 1
    assert result.stderr == (f"livecontext: error: the store sqlite:{path} cannot list its threads: its file is "
                             "damaged where the list is kept (sqlite: database disk image is malformed); nothing "
                             "was copied; restore it from a backup\n")
    assert not (tmp_path / "c").exists()


def test_a_copy_into_memory_is_refused(tmp_path: Path) -> None:
    url = url_for("sqlite", tmp_path / "s")
    run_thread(tmp_path, url, "t")
    result = lc("copy", "--store", url, "--to", "memory:")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == ("livecontext: error: a copy into memory: is gone when the command ends; copy --to "
                             "sqlite:PATH, jsonl:DIR or postgresql://USER@HOST:PORT/DB\n")


def test_only_the_threads_named_are_copied_and_a_missing_one_writes_nothing(tmp_path: Path) -> None:
    url, target = url_for("sqlite", tmp_path / "s"), url_for("sqlite", tmp_path / "c")
    run_thread(tmp_path, url, "t")
    run_thread(tmp_path, url, "u")
    missing = lc("copy", "--store", url, "--to", target, "--thread", "t", "--thread", "nope")
    assert missing.exit_code == 1 and "thread 'nope' does not exist in" in missing.stderr
    assert not (tmp_path / "c").exists()
    ok("copy", "--store", url, "--to", target, "--thread", "u")
    infos, _ = dump(target)
    assert [i.thread_id for i in infos] == ["u"]


def test_a_store_copied_into_postgresql_is_the_same_log(team_store: str, postgres_url: str) -> None:
    ok("copy", "--store", team_store, "--to", postgres_url)
    infos, records = dump(team_store)
    assert dump(postgres_url) == (infos, records)
    threads = [info.thread_id for info in infos]
    assert audits(postgres_url, threads) == audits(team_store, threads)

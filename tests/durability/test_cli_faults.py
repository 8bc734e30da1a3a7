"""The command line against a hostile file system, in real processes (issue 16, findings 3
and 4): read-only files and folders, a full disk, a missing folder, bytes that are not UTF-8.

Every case ends in a correct result or in one ``livecontext: error:`` line that names the
problem, never a traceback, and a refused write leaves the store as it was.

Permissions are enforced by the kernel only on a process without ``CAP_DAC_OVERRIDE``: run as
root (as CI is), each command is started through ``setpriv`` with that capability dropped. The
full disk is a real one, a small tmpfs mounted for the test (root only; skipped elsewhere).
Stores are made in this process (fast); each fault is met by a ``livecontext`` process.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from livecontext.actors.cli import main

from tests.support.command import LIVECONTEXT, cli_env, url_for

SETPRIV = shutil.which("setpriv")
_DROP = "-dac_override,-dac_read_search"


def missing(what: str) -> None:
    """Skip a test this machine cannot run, except in CI (``.ci/run`` sets
    ``LIVECONTEXT_CI``), where every fault must be met for real: there it fails."""
    if os.environ.get("LIVECONTEXT_CI"):
        pytest.fail(f"{what}; CI must run this test (it runs as root, with setpriv)")
    pytest.skip(what)


def _unprivileged(args: Sequence[str]) -> list[str]:
    """``args`` run so that file permissions apply (root's override dropped)."""
    if os.geteuid() != 0:
        return list(args)
    if SETPRIV is None:
        missing("running as root, and setpriv is missing: file permissions would not apply")
    return [SETPRIV, f"--inh-caps={_DROP}", f"--bounding-set={_DROP}", *args]


def lc(*args: str | bytes, stdin: bytes = b"", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``livecontext ARGS`` in its own process, file permissions applying."""
    done = subprocess.run(_unprivileged([*LIVECONTEXT, *args]), input=stdin, capture_output=True,  # type: ignore[list-item]
                          env={**cli_env(), "COLUMNS": "200"}, cwd=cwd, timeout=60, check=False)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(errors="replace"),
                                       done.stderr.decode(errors="replace"))


def lc_all(*commands: Sequence[str]) -> list[subprocess.CompletedProcess[str]]:
    """Each of ``commands`` (the arguments of ``livecontext``) at once, in its own process."""
    procs = [subprocess.Popen(_unprivileged([*LIVECONTEXT, *args]), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env={**cli_env(), "COLUMNS": "200"}) for args in commands]
    done = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(errors="replace"),
                                                    err.decode(errors="replace")))
    finally:  # (a command that hangs fails its test; it must not outlive it)
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return done


def setup(*args: str) -> None:
    """``livecontext ARGS`` in this process, with every power (making a store)."""
    result = CliRunner().invoke(main, list(args), env={"LIVECONTEXT_STORE": None})
    assert result.exit_code == 0, result.output


def one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> str:
    """Check ``done`` failed with one error line (notes aside) holding ``words``; return it."""
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("livecontext: note: ")]
    assert len(lines) == 1 and lines[0].startswith("livecontext: error: "), done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout


def files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def read_only(*paths: Path) -> None:
    """Take the write bits off ``paths`` and everything under them."""
    for top in paths:
        for path in [top, *top.rglob("*")] if top.is_dir() else [top]:
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@pytest.fixture
def store(backend: str, tmp_path: Path) -> Iterator[str]:
    """A store holding thread ``t`` (two entries); made writable again afterwards."""
    url = url_for(backend, tmp_path / "s")
    setup("run", "--store", url, "--thread", "t", "--input", "hello")
    yield url
    for path in [tmp_path, *tmp_path.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def test_a_read_only_store_is_read_but_not_written(backend: str, store: str, tmp_path: Path) -> None:
    root = tmp_path / "s"
    read_only(root)
    before = files(root)
    history, threads, state, run, run_new, fork = lc_all(
        ("history", "--store", store, "--thread", "t", "--json"), ("threads", "--store", store),
        ("state", "--store", store, "--thread", "t", "--json"), ("run", "--store", store, "--thread", "t", "--input", "more"),
        ("run", "--store", store, "--thread", "new", "--input", "more"),
        ("fork", "--store", store, "--thread", "t", "--at", "2", "--new-thread", "u"))
    assert [e["levels"]["live"] for e in json.loads(ok(history))["entries"]] == ["hello", "echo: hello"]
    assert "WaitingInput" in ok(threads)
    assert json.loads(ok(state))["entries"] == 2
    one_line_error(run, "read-only", str(root))
    one_line_error(run_new, "read-only")
    one_line_error(fork, "read-only")
    assert files(root) == before


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_read_only_sqlite_file_in_a_writable_folder_is_read_but_not_written(store: str, tmp_path: Path) -> None:
    db = tmp_path / "s" / "store.db"
    read_only(db)
    assert json.loads(ok(lc("state", "--store", store, "--thread", "t", "--json")))["entries"] == 2
    one_line_error(lc("run", "--store", store, "--thread", "t", "--input", "more"), "read-only", str(db))
    one_line_error(lc("fork", "--store", store, "--thread", "t", "--at", "2", "--new-thread", "u"), "read-only")
    db.chmod(0o644)
    assert json.loads(ok(lc("threads", "--store", store, "--json")))["thread"] == "t"  # nothing was added


@pytest.mark.parametrize("backend", ["jsonl"])
def test_a_read_only_jsonl_thread_is_read_and_forked_but_not_written(store: str, tmp_path: Path) -> None:
    thread = tmp_path / "s" / "store" / "t"
    read_only(thread)
    before = files(thread)
    one_line_error(lc("run", "--store", store, "--thread", "t", "--input", "more"), "read-only", str(thread))
    assert files(thread) == before
    assert len(json.loads(ok(lc("history", "--store", store, "--thread", "t", "--json")))["entries"]) == 2
    ok(lc("fork", "--store", store, "--thread", "t", "--at", "5", "--new-thread", "u"))  # (seq 4: the compaction)
    forked = json.loads(ok(lc("run", "--store", store, "--thread", "u", "--input", "more", "--json")))
    assert [e["levels"]["live"] for e in forked["entries"]] == ["hello", "echo: hello", "more", "echo: more"]


def test_events_into_a_missing_folder_is_one_line_and_leaves_no_thread(backend: str, tmp_path: Path) -> None:
    url = url_for(backend, tmp_path / "s")
    events = tmp_path / "missing" / "events.jsonl"
    one_line_error(lc("run", "--store", url, "--thread", "t", "--input", "hi", "--events", str(events)),
                   str(events), "--events")
    assert not (tmp_path / "s").exists()
    setup("run", "--store", url, "--thread", "other", "--input", "hi")
    one_line_error(lc("run", "--store", url, "--thread", "t", "--input", "hi", "--events", str(events)), "--events")
    threads = [json.loads(line)["thread"] for line in ok(lc("threads", "--store", url, "--json")).splitlines()]
    assert threads == ["other"]


def test_bytes_that_are_not_utf8_on_the_command_line_are_one_line_and_write_nothing(
        backend: str, tmp_path: Path) -> None:
    url = url_for(backend, tmp_path / "s")
    one_line_error(lc("run", "--store", url, "--input", b"bad \xff\xfe"), "'bad \\xff\\xfe' is not valid UTF-8")
    assert not (tmp_path / "s").exists()


# -- a full disk -------------------------------------------------------------------------------


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if made.returncode != 0:
        missing(f"cannot mount a tmpfs here ({made.stderr.strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte; return the file that fills it (delete it to free space)."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


def test_a_new_thread_on_a_full_disk_is_one_line_and_leaves_nothing(backend: str, disk: Path) -> None:
    url = url_for(backend, disk / "s")
    setup("run", "--store", url, "--thread", "t", "--input", "hello")
    before = files(disk / "s")
    filler = fill(disk)
    one_line_error(lc("run", "--store", url, "--thread", "new", "--input", "hi"), "space left on", "free disk space")
    assert files(disk / "s") == before or backend == "sqlite"  # (SQLite may keep its -wal)
    assert len(json.loads(ok(lc("history", "--store", url, "--thread", "t", "--json")))["entries"]) == 2  # reading works
    filler.unlink()
    threads = [json.loads(line)["thread"] for line in ok(lc("threads", "--store", url, "--json")).splitlines()]
    assert threads == ["t"]
    ok(lc("run", "--store", url, "--thread", "new", "--input", "hi"))


def test_a_thread_that_fills_the_disk_stops_in_one_line_and_resumes_once_there_is_room(
        backend: str, disk: Path, tmp_path: Path) -> None:
    url = url_for(backend, disk / "s")
    setup("run", "--store", url, "--thread", "t", "--input", "hello")
    filler = fill(disk)
    long_input = "many words " * 5_000  # more than the free end of a page
    one_line_error(lc("run", "--store", url, "--thread", "t", "--input", long_input), "space left on", "free disk space")
    filler.unlink()
    resumed = json.loads(ok(lc("run", "--store", url, "--thread", "t", "--input", "again", "--json")))
    texts = [e["levels"]["live"] for e in resumed["entries"]]
    assert texts[:2] == ["hello", "echo: hello"] and texts[-2:] == ["again", "echo: again"]
    assert long_input not in texts  # never half-written

"""Bytes flipped on disk, met by the command line in real processes (issue 16, finding 2).

A thread with several snapshots is written once; then, at 50 seeded positions each, one byte
is flipped in a copy of its log (``records.jsonl``), of its snapshots (every JSONL file that
holds them), and of an SQLite store's file (any page). ``history`` and ``verify`` run against
each copy. Every case must end in a correct result (what the undamaged store gives, or, for
a damaged last record, the log up to the seq a one-line warning names) or in one error line
naming the problem; never a traceback, and never a silent acceptance: ``verify`` may call a
store sound only if ``history`` reads it as it was.
"""

from __future__ import annotations

import random
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from livecontext.actors.cli import main

from ._support import notebook_turns, write_script
from .test_cli_faults import lc_all

POSITIONS = 50
"""Seeded positions per kind of damage (the issue asks for at least 50)."""
BATCH = 10
"""Commands run at once."""
THREAD = "t"


def invoke(*args: str) -> str:
    """``livecontext ARGS`` in this process, on an undamaged store; its output."""
    result = CliRunner().invoke(main, list(args), env={"LIVECONTEXT_STORE": None})
    assert result.exit_code == 0, result.output
    return result.output


class Written:
    """The thread as written, and what each command says of it undamaged."""

    def __init__(self, url: str, root: Path) -> None:
        self.url = url
        self.root = root
        verify = invoke("verify", "--store", url)
        assert verify.startswith("ok: 1 thread(s)"), verify
        last = int(re.search(r"(\d+) record\(s\)", verify).group(1))  # type: ignore[union-attr]
        self.last = last
        self.history_at = {seq: invoke("history", "--store", url, "--thread", THREAD, "--at", str(seq), "--json")
                           for seq in range(0, last + 1)}
        self.history = invoke("history", "--store", url, "--thread", THREAD, "--json")
        assert self.history == self.history_at[last]


def write_thread(root: Path, url: str) -> Written:
    """A thread of a dozen notebook edits, snapshotted every 5 records (so the latest snapshot
    covers most of the log), then resumed once."""
    script = write_script(root / "script.json", [*notebook_turns(12), {"text": "still here"}])
    for said in ("fill the notebook", "are you there?"):
        invoke("run", "--store", url, "--thread", THREAD, "--model", f"scripted:{script}", "--input", said,
               "--snapshot-every", "5")
    if url.startswith("sqlite:"):
        with sqlite3.connect(url.removeprefix("sqlite:")) as conn:  # everything in the main file
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return Written(url, root)


@pytest.fixture(scope="module")
def jsonl_thread(tmp_path_factory: pytest.TempPathFactory) -> Written:
    root = tmp_path_factory.mktemp("jsonl-thread")
    return write_thread(root, f"jsonl:{root / 'store'}")


@pytest.fixture(scope="module")
def sqlite_thread(tmp_path_factory: pytest.TempPathFactory) -> Written:
    root = tmp_path_factory.mktemp("sqlite-thread")
    return write_thread(root, f"sqlite:{root / 'store.db'}")


def flipped_copies(written: Written, files: list[str], seed: int, into: Path) -> Iterator[tuple[str, str]]:
    """For each of :data:`POSITIONS` seeded positions across ``files`` (paths relative to the
    store's root): a copy of the store with one byte changed there. Yields (store URL, where)."""
    scheme, _, path = written.url.partition(":")
    store = Path(path)
    base = store if store.is_dir() else store.parent
    sizes = [(name, (base / name).stat().st_size) for name in files]
    total = sum(size for _, size in sizes)
    rng = random.Random(seed)
    for case in range(POSITIONS):
        at = rng.randrange(total)
        for name, size in sizes:
            if at < size:
                break
            at -= size
        copy = into / f"case{case}"
        if store.is_dir():
            shutil.copytree(store, copy / store.name)
        else:
            copy.mkdir()
            shutil.copy2(store, copy / store.name)
        target = copy / store.name / name if store.is_dir() else copy / store.name
        data = bytearray(target.read_bytes())
        data[at] ^= rng.randrange(1, 256)
        target.write_bytes(bytes(data))
        yield f"{scheme}:{copy / store.name}", f"{name} byte {at}"


def check_case(written: Written, where: str, history: subprocess.CompletedProcess[str],
               verify: subprocess.CompletedProcess[str]) -> None:
    """The rules of the module docstring, for one damaged copy."""
    for done in (history, verify):
        assert "Traceback" not in done.stderr, (where, done.stderr)
        assert done.returncode in (0, 1), (where, done.returncode, done.stderr)
    for line in history.stderr.splitlines():
        assert line.startswith(("livecontext: error: ", "livecontext: warning: ")), (where, history.stderr)
    errors = [line for line in history.stderr.splitlines() if line.startswith("livecontext: error: ")]
    if history.returncode:
        assert len(errors) == 1 and history.stdout == "", (where, history.stderr)
    else:
        torn = re.search(r"read the log up to seq (\d+)", history.stderr)
        expected = written.history_at[int(torn.group(1))] if torn else written.history
        assert history.stdout == expected, (where, "history read damaged data as sound", history.stderr)
    if verify.returncode:
        problems = [line for line in verify.stdout.splitlines() if not line.startswith("note: ")]
        # one line per problem, each naming its thread and seq (or the store's file), then a
        # summary on stderr; or, if the store cannot be opened at all, one error line
        if problems:
            assert all(re.match(r"(thread 't': .*seq -?\d+|thread 't': \d+ more|the store's file is damaged)", line)
                       for line in problems), (where, verify.stdout)
            assert re.fullmatch(r"\d+ problem\(s\) found; checked .*\n", verify.stderr), (where, verify.stderr)
        else:
            assert re.fullmatch(r"livecontext: error: [^\n]*\n", verify.stderr), (where, verify.stderr)
    else:
        assert verify.stdout.rstrip().splitlines()[-1].startswith("ok: "), (where, verify.stdout)
        # called sound: so what history read must be the store as written
        assert history.returncode == 0, (where, "verify found nothing, history failed", history.stderr)
        notes = [line for line in verify.stdout.splitlines() if line.startswith("note: ")]
        assert bool(notes) == ("torn record" in history.stderr), (where, verify.stdout, history.stderr)


def run_cases(written: Written, files: list[str], seed: int, into: Path) -> dict[str, int]:
    """Run every case; return how many ended in each way (for the checks on the mix)."""
    cases = list(flipped_copies(written, files, seed, into))
    outcome = {"error": 0, "correct": 0, "verify_found": 0}
    for start in range(0, len(cases), BATCH):
        batch = cases[start : start + BATCH]
        commands = []
        for url, _ in batch:
            commands += [("history", "--store", url, "--thread", THREAD, "--json"), ("verify", "--store", url)]
        results = lc_all(*commands)
        for k, (_, where) in enumerate(batch):
            history, verify = results[2 * k], results[2 * k + 1]
            check_case(written, where, history, verify)
            outcome["error" if history.returncode else "correct"] += 1
            outcome["verify_found"] += verify.returncode
    return outcome


def thread_files(written: Written, snapshots: bool) -> list[str]:
    folder = Path(written.url.removeprefix("jsonl:")) / THREAD
    names = sorted(p.relative_to(folder.parent).as_posix() for p in folder.rglob("*") if p.is_file())
    log = [n for n in names if n.endswith("/records.jsonl")]
    if not snapshots:
        return log
    return [n for n in names if n not in log and not n.endswith(("/meta.json", "/lock"))]


def test_a_flipped_byte_in_a_jsonl_log_is_an_error_or_a_named_torn_tail(jsonl_thread: Written, tmp_path: Path) -> None:
    outcome = run_cases(jsonl_thread, thread_files(jsonl_thread, snapshots=False), seed=16_201, into=tmp_path)
    # every byte of a log is in some record: verify finds each flip (a damaged last line is a note)
    assert outcome["verify_found"] >= POSITIONS * 0.8, outcome


def test_a_flipped_byte_in_a_jsonl_snapshot_never_changes_what_is_read(jsonl_thread: Written, tmp_path: Path) -> None:
    files = thread_files(jsonl_thread, snapshots=True)
    assert files, "the thread has no snapshot to damage"
    outcome = run_cases(jsonl_thread, files, seed=16_202, into=tmp_path)
    # a snapshot only shortens replay: history is rebuilt from the records every time
    assert outcome["correct"] == POSITIONS, outcome


def test_a_flipped_byte_in_an_sqlite_page_is_an_error_or_changes_nothing_read(sqlite_thread: Written,
                                                                                tmp_path: Path) -> None:
    outcome = run_cases(sqlite_thread, ["store.db"], seed=16_203, into=tmp_path)
    assert outcome["error"] + outcome["correct"] == POSITIONS, outcome

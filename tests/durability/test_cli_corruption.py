"""Bytes flipped on disk, met by the command line (issue 16, finding 2).

A thread with several snapshots is written once per backend; then, at 50 seeded places each,
one byte is flipped in a copy of its log (``records.jsonl``), of its snapshots (every file
that holds them: the snapshot files and the parts they point to), and of an SQLite store's
file (any page). ``history`` and ``verify`` run against each copy. Every case must end in a
correct result (what the undamaged store gives, or, for a damaged last record, the log up to
the seq a one-line warning names) or in one error line naming the problem; never a
traceback, and never a silent acceptance: ``verify`` may call a store sound only if
``history`` reads it as it was.

A seed names the same damage on every run: the same byte of the same record (a line of a
JSONL file) of the same file, though the thread's times and ids differ from one writing to
the next. The commands run in this process (a process each would cost a second of start-up
per command, 300 times); the first cases of each kind also run in real processes, through
the installed entry point, and must end there as they did here.
"""

from __future__ import annotations

import random
import re
import shutil
import sqlite3
import subprocess
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from click.testing import CliRunner

from livecontext.actors.cli import main

from tests.support.command import notebook_turns, write_script
from .test_cli_faults import lc_all

POSITIONS = 50
"""Seeded places per kind of damage (the issue asks for at least 50)."""
IN_REAL_PROCESSES = 2
"""How many of each kind's cases also run in real processes (at once)."""
THREAD = "t"
ENV = {"LIVECONTEXT_STORE": None, "LIVECONTEXT_FSYNC": None, "COLUMNS": "200"}
"""The environment of the commands run here: as :func:`~tests.support.command.cli_env` gives a child."""


def lc_here(*args: str) -> subprocess.CompletedProcess[str]:
    """``livecontext ARGS`` run in this process, as a process would end (an exception that
    escapes the command is a traceback on its standard error)."""
    result = CliRunner().invoke(main, list(args), env=ENV)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, stderr)


def invoke(*args: str) -> str:
    """``livecontext ARGS`` in this process, on an undamaged store; its output."""
    done = lc_here(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


class Written:
    """The thread as written, and what each command says of it undamaged."""

    def __init__(self, url: str, root: Path) -> None:
        self.url = url
        self.root = root
        verify = invoke("verify", "--store", url)
        assert verify.startswith("ok: 1 thread(s)"), verify
        self.last = int(re.search(r"(\d+) record\(s\)", verify).group(1))  # type: ignore[union-attr]
        self.history = invoke("history", "--store", url, "--thread", THREAD, "--json")
        self._history_at = {self.last: self.history}

    def history_at(self, seq: int) -> str:
        """What ``history --at SEQ`` says of the undamaged thread."""
        if seq not in self._history_at:
            self._history_at[seq] = invoke("history", "--store", self.url, "--thread", THREAD, "--at", str(seq), "--json")
        return self._history_at[seq]


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


class Damage(NamedTuple):
    """One flipped byte, XORed with ``xor``: in the ``file``-th file damaged, its ``record``-th
    record (a line of a JSONL file; 0, the whole file, for a binary one), the byte at
    ``place`` (0 to 1) of its length."""

    file: int
    record: int
    place: float
    xor: int


def records_of(data: bytes, name: str) -> list[tuple[int, int]]:
    """(start, length) of each record of a file: its lines if it is JSON text, else the
    whole file (a part's compressed bytes, an SQLite file's pages: the same length each run)."""
    if not name.endswith((".jsonl", ".json")):
        return [(0, len(data))]
    spans, start = [], 0
    for line in data.splitlines(keepends=True):
        spans.append((start, len(line)))
        start += len(line)
    return spans


def damages(record_counts: list[int], seed: int) -> list[Damage]:
    """:data:`POSITIONS` damages, seeded: each picks a record among every file's records,
    evenly, then a byte of it. It depends only on how many records each file has (the same
    every run), and draws as many random numbers whatever the files' lengths, so that a seed
    names the same byte of the same record on every run (a record a few bytes longer, as a
    compressed part may be, is met at the same place of its length)."""
    rng = random.Random(seed)
    every = [(f, r) for f, count in enumerate(record_counts) for r in range(count)]
    chosen = []
    for _ in range(POSITIONS):
        file, record = every[int(rng.random() * len(every))]
        chosen.append(Damage(file, record, place=rng.random(), xor=1 + int(rng.random() * 255)))
    return chosen


def flipped_copies(written: Written, files: list[str], seed: int, into: Path) -> Iterator[tuple[str, str]]:
    """For each seeded damage across ``files`` (paths relative to the store's root, in an
    order that is the same every run): a copy of the store with that byte changed. Yields
    (store URL, where)."""
    scheme, _, path = written.url.partition(":")
    store = Path(path)
    base = store if store.is_dir() else store.parent
    records = [records_of((base / name).read_bytes(), name) for name in files]
    shown = labels(files)
    for case, damage in enumerate(damages([len(spans) for spans in records], seed)):
        name = files[damage.file]
        start, length = records[damage.file][damage.record]
        at = start + int(damage.place * length)
        copy = into / f"case{case}"
        if store.is_dir():
            shutil.copytree(store, copy / store.name)
        else:
            copy.mkdir()
            shutil.copy2(store, copy / store.name)
        target = copy / store.name / name if store.is_dir() else copy / store.name
        data = bytearray(target.read_bytes())
        data[at] ^= damage.xor
        target.write_bytes(bytes(data))
        yield f"{scheme}:{copy / store.name}", f"case {case}: {shown[damage.file]} record {damage.record} byte {at - start}"


def labels(files: list[str]) -> list[str]:
    """How ``files`` are named in a case's description: as they are, but a part by its place
    among them (its name is its content's hash, different each time the thread is written)."""
    return [f"{name.rsplit('/', 1)[0]}/#{k}" if "/parts/" in name else name for k, name in enumerate(files)]


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
        expected = written.history_at(int(torn.group(1))) if torn else written.history
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
    ended = []
    for url, where in cases:
        history, verify = lc_here("history", "--store", url, "--thread", THREAD, "--json"), lc_here("verify", "--store", url)
        check_case(written, where, history, verify)
        ended.append((history, verify))
        outcome["error" if history.returncode else "correct"] += 1
        outcome["verify_found"] += verify.returncode
    commands = []
    for url, _ in cases[:IN_REAL_PROCESSES]:
        commands += [("history", "--store", url, "--thread", THREAD, "--json"), ("verify", "--store", url)]
    in_processes = lc_all(*commands)
    for k, (_, where) in enumerate(cases[:IN_REAL_PROCESSES]):
        history, verify = in_processes[2 * k], in_processes[2 * k + 1]
        check_case(written, where, history, verify)
        for here, there in zip(ended[k], (history, verify), strict=True):
            assert (there.returncode, there.stdout, there.stderr) == (here.returncode, here.stdout, here.stderr), where
    return outcome


def thread_files(written: Written, snapshots: bool) -> list[str]:
    """The files of the JSONL thread to damage: its log, or every file that holds its
    snapshots, in an order that is the same every run (a part is named by its content's hash,
    which the thread's times change: the parts come in the order the snapshots name them)."""
    folder = Path(written.url.removeprefix("jsonl:")) / THREAD
    names = sorted(p.relative_to(folder.parent).as_posix() for p in folder.rglob("*") if p.is_file())
    log = [n for n in names if n.endswith("/records.jsonl")]
    if not snapshots:
        return log
    held = [n for n in names if n not in log and not n.endswith(("/meta.json", "/lock"))]
    parts = [n for n in held if "/parts/" in n]
    named = "".join((folder.parent / n).read_text() for n in held if n not in parts)
    assert all(Path(n).name in named for n in parts), "a part no snapshot names"
    return [n for n in held if n not in parts] + sorted(parts, key=lambda n: named.index(Path(n).name))


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


def test_a_seed_names_the_same_damage_however_the_thread_was_written(jsonl_thread: Written, tmp_path: Path) -> None:
    # written again: other times and ids, so other part names and lengths
    again = write_thread(tmp_path, f"jsonl:{tmp_path / 'store'}")

    def shape(written: Written) -> list[tuple[str, int, bytes]]:
        """Each damaged file's label, its number of records, and (a part) the entries it holds."""
        base = Path(written.url.removeprefix("jsonl:"))
        files = thread_files(written, snapshots=False) + thread_files(written, snapshots=True)
        return [(label, len(records_of((base / name).read_bytes(), name)),
                 (base / name).read_bytes().partition(b'"kinds"')[0] if "/parts/" in name else b"")
                for name, label in zip(files, labels(files), strict=True)]

    def role(label: str) -> str:  # a snapshot's file without its seq: where snapshots fall is the disk's speed's
        return re.sub(r"snapshot-\d+", "snapshot-N", label)

    first, second = shape(jsonl_thread), shape(again)
    if [label for label, _, _ in first] == [label for label, _, _ in second]:  # (snapshots at the same seqs)
        assert second == first
    else:  # a snapshot skipped while another was written: the same files by role, the same log
        assert [(role(label), n) for label, n, _ in second if "/parts/" not in label and "snapshot-" not in label] == [
            (role(label), n) for label, n, _ in first if "/parts/" not in label and "snapshot-" not in label]
        assert sorted({role(label) for label, _, _ in second}) == sorted({role(label) for label, _, _ in first})
    assert len({entries for _, _, entries in second}) > 2, "the parts are not told apart"

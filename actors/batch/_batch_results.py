"""A batch's results file (``--out``, default ``BATCH.results.jsonl``): one JSON line per task.

A line is appended, flushed, as each task ends, so a crash keeps the lines of the tasks that
ended. A re-run appends the new line of each task it runs again (a failed task resumed, a
stopped one continued); the file is then rewritten with one line per task id, the latest
(:meth:`ResultsFile.keep_latest`, written beside the file and renamed over it, so the file is
whole at every moment): the lines of tasks that did not run again are kept as they were, in
their order. The same rewrite when the file is opened drops a line cut short by a crash, which
the next line appended would otherwise be glued to.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, TextIO

from livecontext.runtime import UsageError


class Result(Protocol):
    """What a results file is given as a task ends (a :class:`~livecontext.actors.batch.TaskResult`)."""

    @property
    def id(self) -> str: ...
    @property
    def skipped(self) -> bool: ...
    def json(self) -> dict[str, Any]: ...


def read_results(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The result lines already in a results file, by task id, the latest line of each (a
    torn line is ignored).

    Raises:
        UsageError: the file cannot be read (its folder is a file, it is a folder, ...).
    """
    return {task_id: json.loads(raw) for task_id, raw in _latest_lines(Path(path)).items()}


def _latest_lines(path: Path) -> dict[str, str]:
    """The latest line of each task id, in the order the ids first appear."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--out {path}: {_why(path, exc)}") from None
    found: dict[str, str] = {}
    for raw in lines:
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            continue  # (a line cut short by a crash: its task is looked up in the log)
        if isinstance(obj, dict) and isinstance(obj.get("id"), str):
            found[obj["id"]] = raw  # (a later line of the same task replaces it, in its place)
    return found


def _why(path: Path, exc: BaseException) -> str:
    """What is wrong with ``path`` as a results file, and what to do."""
    folder = path.parent
    if isinstance(exc, UnicodeDecodeError):
        return "it is not a results file (not UTF-8 text); name a new file or a results file of a batch"
    if isinstance(exc, NotADirectoryError) or (folder.exists() and not folder.is_dir()):
        return (f"{_first_file(folder)} is a file, not a folder; write the results elsewhere "
                "(or move that file away)")
    if isinstance(exc, IsADirectoryError) or path.is_dir():
        return "it is a folder; name a file in it (such as its results.jsonl)"
    if not folder.exists():
        return (f"the folder {folder} does not exist; make it first (mkdir -p {folder}) or write the "
                "results elsewhere")
    said = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return (f"cannot write it ({said}); check that you may write to the folder {folder} and the free disk "
            "space, or write the results elsewhere")


def _first_file(folder: Path) -> Path:
    """The part of ``folder`` that is a file (``a`` of ``a/b/c`` when ``a`` is a file)."""
    for part in reversed((folder, *folder.parents)):
        if part.exists() and not part.is_dir():
            return part
    return folder


class ResultsFile:
    """A batch's results file, opened for a run: see the module docstring.

    Use :meth:`open` (before any task runs: it says in one line why the file cannot be
    written), :meth:`write` as tasks end, then :meth:`close`, which keeps the latest line of
    each task.
    """

    def __init__(self, path: Path, sink: TextIO, written: Mapping[str, Mapping[str, Any]]) -> None:
        self.path = path
        self._sink = sink
        self._written = written

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> ResultsFile:
        """The results file at ``path`` (created if missing), rewritten with one line per task.

        Raises:
            UsageError: it cannot be read or written (the message names the file, what is
                wrong and what to do).
        """
        out = Path(path)
        written = read_results(out)
        try:
            if out.exists():
                _rewrite(out, _latest_lines(out))
            sink = out.open("a", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--out {out}: {_why(out, exc)}") from None
        return cls(out, sink, written)

    def write(self, result: Result) -> None:
        """Append ``result``'s line (unless it is a skipped task's line already there)."""
        line = result.json()
        if result.skipped and self._written.get(result.id) == line:
            return
        self._sink.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._sink.flush()

    def close(self) -> None:
        """Close it and keep one line per task id, the latest (a rewrite that fails keeps the
        file as it is: every line is in it, the latest of a task last)."""
        self._sink.close()
        try:
            _rewrite(self.path, _latest_lines(self.path))
        except (OSError, UsageError):
            pass

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _rewrite(path: Path, lines: Mapping[str, str]) -> None:
    """Write ``lines`` to a file beside ``path`` and rename it over ``path`` (whole at every
    moment); nothing is written if ``path`` holds them already."""
    text = "".join(line + "\n" for line in lines.values())
    if path.read_text(encoding="utf-8") == text:
        return
    temporary = path.with_name(f".{path.name}.rewrite")
    try:
        with temporary.open("w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)

"""Shell outputs of running a fictional repository's code: tracebacks and pytest logs.

Every frame points at a real line of the :class:`~fake_repo.Repo` (its number and its text),
so a transcript's tracebacks agree with the files the agent views.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from attrs import frozen

from .fake_repo import Repo

ROOT = "/repo"


@frozen
class Frame:
    """One traceback frame: a line of a file, in a function."""

    path: str
    line: int
    function: str


@frozen
class Failure:
    """A failing test: where it fails and the error it ends with."""

    test_path: str
    test_name: str
    frames: tuple[Frame, ...]
    """From the test's own line down to the raising line."""
    error: str
    """The exception line, e.g. ``KeyError: 'timeout'``."""


def traceback(repo: Repo, frames: Sequence[Frame], error: str, script: tuple[str, int, str] | None = None) -> str:
    """A Python traceback through ``frames`` (a script's ``<module>`` frame first, if given)."""
    out = ["Traceback (most recent call last):"]
    if script is not None:
        name, line, text = script
        out += [f'  File "{ROOT}/{name}", line {line}, in <module>', f"    {text.strip()}"]
    for f in frames:
        out += [f'  File "{ROOT}/{f.path}", line {f.line}, in {f.function}',
                f"    {repo.files[f.path][f.line - 1].strip()}"]
    out.append(error)
    return "\n".join(out)


def _failure_section(repo: Repo, failure: Failure) -> list[str]:
    """pytest's long report of one failure: the test's source up to the failing line, then each
    frame's, with ``>`` and ``E`` markers."""
    title = f" {failure.test_name} "
    out = [title.center(80, "_"), ""]
    for k, frame in enumerate(failure.frames):
        lines = repo.files[frame.path]
        start = frame.line
        while start > 1 and not lines[start - 1].lstrip().startswith("def "):
            start -= 1
        if k:
            out += ["_ " * 39 + "_", ""]
        for i in range(start, frame.line + 1):
            mark = ">" if i == frame.line else " "
            out.append(f"{mark}   {lines[i - 1]}" if lines[i - 1] else "")
        last = k == len(failure.frames) - 1
        if last:
            out.append(f"E       {failure.error}")
        out += ["", f"{frame.path}:{frame.line}: {failure.error.split(':')[0] if last else ''}".rstrip()]
    return out


def pytest_log(repo: Repo, rng: random.Random, paths: Sequence[str], failures: Sequence[Failure], *,
               verbose: bool = False, extra_tests: dict[str, list[str]] | None = None) -> str:
    """The log of ``pytest [-v] paths`` where ``failures`` fail and every other test passes."""
    tests = dict(repo.tests)
    tests.update(extra_tests or {})
    chosen = [p for p in paths if p in tests]
    failing = {(f.test_path, f.test_name) for f in failures}
    total = sum(len(tests[p]) for p in chosen)
    out = ["=" * 29 + " test session starts " + "=" * 30,
           "platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0" + (" -- /usr/bin/python3" if verbose else ""),
           f"rootdir: {ROOT}", "configfile: pyproject.toml", "plugins: cov-5.0.0, xdist-3.6.1",
           f"collected {total} item{'s' if total != 1 else ''}", ""]
    done = 0
    for path in chosen:
        names = tests[path]
        if verbose:
            for name in names:
                done += 1
                verdict = "FAILED" if (path, name) in failing else "PASSED"
                out.append(f"{path}::{name} {verdict}".ljust(72) + f"[{100 * done // total:3d}%]")
        else:
            done += len(names)
            marks = "".join("F" if (path, n) in failing else "." for n in names)
            out.append(f"{path} {marks}".ljust(74) + f"[{100 * done // total:3d}%]")
    seconds = f"{rng.uniform(0.4, 0.02 * total + 1):.2f}s"
    if failures:
        out += ["", "=" * 35 + " FAILURES " + "=" * 35]
        for failure in failures:
            out += _failure_section(repo, failure)
        out.append("=" * 27 + " short test summary info " + "=" * 28)
        out += [f"FAILED {f.test_path}::{f.test_name} - {f.error}" for f in failures]
        summary = f" {len(failures)} failed, {total - len(failures)} passed in {seconds} "
    else:
        summary = f" {total} passed in {seconds} "
    out.append(summary.center(80, "="))
    return "\n".join(out)


def import_error_log(repo: Repo, test_path: str, error: str) -> str:
    """pytest's report of a test module that cannot be imported."""
    return "\n".join([
        "=" * 29 + " test session starts " + "=" * 30,
        "platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0", f"rootdir: {ROOT}",
        "configfile: pyproject.toml", "plugins: cov-5.0.0, xdist-3.6.1", "collected 0 items / 1 error", "",
        "=" * 34 + " ERRORS " + "=" * 38, f" ERROR collecting {test_path} ".center(80, "_"),
        f"ImportError while importing test module '{ROOT}/{test_path}'.",
        "Hint: make sure your test modules/packages have valid Python names.", "Traceback:",
        "/usr/lib/python3.11/importlib/__init__.py:126: in import_module",
        "    return _bootstrap._gcd_import(name[level:], package, level)",
        f"{test_path}:3: in <module>", f"    {repo.files[test_path][2]}", f"E   {error}",
        "=" * 27 + " short test summary info " + "=" * 28, f"ERROR {test_path}",
        "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!",
        " 1 error in 0.31s ".center(80, "="),
    ])

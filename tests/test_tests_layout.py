"""The tests mirror the source tree (tests/README.md): each test file's folder is a source
package's path, or one of the folders of whole-system suites; and no test reaches through an
actor ref's private cell (``livecontext.runtime.testing.actor_instance`` is the public way)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SOURCES = ("protocol", "runtime", "actors", "livecontext")
"""The source folders, each a package at the repository's root."""
WHOLE_SYSTEM = ("durability", "benchmarks", "docs")
"""The folders of suites that test the system as a whole rather than one module."""
NOT_TESTS = ("support", "fixtures")
"""Helpers and data: no test file lives in them."""


def _python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def _folder_problem(folder: tuple[str, ...]) -> str | None:
    """Why a test file may not live in ``tests/<folder>``, or ``None``."""
    if not folder or folder in {(name,) for name in WHOLE_SYSTEM}:
        return None
    if folder[0] in SOURCES and (ROOT.joinpath(*folder) / "__init__.py").is_file():
        return None
    return (f"tests/{'/'.join(folder)} mirrors no source package; move the file to the folder of the "
            f"module it tests, or to one of {', '.join(WHOLE_SYSTEM)} (see tests/README.md)")


def test_every_test_file_lives_in_a_mirror_of_a_source_package_or_a_whole_system_folder() -> None:
    misplaced = {}
    for path in _python_files():
        if not path.name.startswith("test_"):
            continue
        folder = path.relative_to(TESTS).parent.parts
        problem = _folder_problem(folder)
        if problem is not None:
            misplaced[path.relative_to(ROOT).as_posix()] = problem
    assert misplaced == {}


def test_the_layout_rule_refuses_a_folder_that_mirrors_nothing_and_takes_the_named_ones() -> None:
    assert _folder_problem(("context",)) is not None  # once the recap's and analyzers' tests
    assert _folder_problem(("actors", "nowhere")) is not None
    assert _folder_problem(("support",)) is not None
    for fine in [(), ("durability",), ("docs",), ("runtime", "persistence"), ("actors", "recap")]:
        assert _folder_problem(fine) is None, fine


def test_no_test_file_sits_among_the_helpers_or_the_fixtures() -> None:
    assert [p for p in _python_files() if p.name.startswith("test_") and
            p.relative_to(TESTS).parts[0] in NOT_TESTS] == []


def test_no_test_reaches_into_an_actor_refs_private_cell() -> None:
    reach_in = re.compile(r"\.\s*_cell\b")
    found = [f"{path.relative_to(ROOT).as_posix()}:{n}"
             for path in _python_files() if path != Path(__file__).resolve()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if reach_in.search(line)]
    assert found == [], "use livecontext.runtime.testing.actor_instance(ref), or ask the actor"

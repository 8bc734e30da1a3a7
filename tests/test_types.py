"""The package type-checks under ``mypy --strict`` (STYLE.md: strict typing, checked in CI).

The three source folders are installed as ``livecontext.protocol``, ``.runtime`` and
``.actors``, below the front door ``livecontext/__init__.py`` (see pyproject.toml), a layout
mypy cannot follow from the repository root, so the check runs on a tree of links laid out as
the installed package.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from tests.support.installed import ROOT, lay_out_installed_package


def test_the_package_type_checks_under_mypy_strict(tmp_path: Path) -> None:
    assert importlib.util.find_spec("mypy") is not None, (
        "mypy is not installed in this environment: run pip install -e '.[test]'")
    lay_out_installed_package(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "mypy-cache"), "-p", "livecontext"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 0, f"mypy --strict found problems:\n{result.stdout}{result.stderr}"

"""The package's imports keep its layers, and no folder's modules import each other in a circle.

Both checks read the installed layout (``livecontext.protocol``, ...): see
:mod:`tests.support.installed`. The layers are the ``[tool.importlinter]`` contracts in
pyproject.toml, checked by ``lint-imports``; the circles are found here from the import graph
grimp builds (the graph import-linter checks); tools/import_graph.py draws the graph between
packages (docs/structure.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.support.installed import ROOT, lay_out_installed_package
from tools.import_graph import strongly_connected

KNOWN_CIRCLES: Mapping[str, list[frozenset[str]]] = {}
"""The circles there are today, by folder: a circle that is not listed fails the test, and so
does a listed one that is gone (take it off the list)."""

_PRINT_IMPORTS = """
import json, grimp
graph = grimp.build_graph("livecontext", cache_dir=None)
print(json.dumps({module: sorted(graph.find_modules_directly_imported_by(module))
                  for module in sorted(graph.modules)}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return lay_out_installed_package(tmp_path_factory.mktemp("installed"))


def _run_on(installed: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """Run ``python command...`` where ``import livecontext`` finds the laid-out tree."""
    environment = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run([sys.executable, *command], cwd=installed, env=environment,
                          capture_output=True, text=True, timeout=300, check=False)


def test_imports_keep_the_layers_of_the_import_linter_contracts(installed: Path) -> None:
    result = _run_on(installed, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
                     str(ROOT / "pyproject.toml"), "--no-cache")
    assert result.returncode == 0, f"lint-imports found imports across the layers:\n{result.stdout}{result.stderr}"
    assert "0 broken" in result.stdout


def circles_by_folder(imports: Mapping[str, list[str]]) -> dict[str, list[frozenset[str]]]:
    """The import circles among the entries of each package folder, by package.

    An entry is a module of the folder, a subpackage (with all it holds) or ``__init__`` (the
    package itself). Every import counts, including those made inside functions or only for type
    checkers: each is a dependency between concepts, whether or not it runs at import time.
    """
    packages = {module.rpartition(".")[0] for module in imports} & set(imports)
    found: dict[str, list[frozenset[str]]] = {}
    for package in sorted(packages):
        edges: dict[str, set[str]] = {}
        for importer, imported in imports.items():
            source = _entry(package, importer)
            if source is None:
                continue
            for module in imported:
                target = _entry(package, module)
                if target is not None and target != source:
                    edges.setdefault(source, set()).add(target)
        circles = strongly_connected(edges)
        if circles:
            found[package] = sorted(circles, key=sorted)
    return found


def _entry(package: str, module: str) -> str | None:
    if module == package:
        return "__init__"
    if not module.startswith(package + "."):
        return None
    return module[len(package) + 1:].split(".")[0]


def test_circles_are_found_through_subpackages_and_the_package_itself() -> None:
    imports = {
        "p": ["p._a"],
        "p._a": ["p.sub._x"],
        "p._b": [],
        "p.sub": [],
        "p.sub._x": ["p"],
    }
    assert circles_by_folder(imports) == {"p": [frozenset({"__init__", "_a", "sub"})]}


def test_no_folder_has_an_import_circle_but_the_known_ones(installed: Path) -> None:
    result = _run_on(installed, "-c", _PRINT_IMPORTS)
    assert result.returncode == 0, result.stderr
    imports: dict[str, list[str]] = json.loads(result.stdout)
    assert len(imports) > 100, f"grimp found only {sorted(imports)}: is the tree laid out as installed?"
    found = circles_by_folder(imports)
    problems = []
    for package in sorted(set(found) | set(KNOWN_CIRCLES)):
        for circle in found.get(package, []):
            if circle not in KNOWN_CIRCLES.get(package, []):
                lines = [f"    {importer} -> {module}" for importer, modules in imports.items()
                         for module in modules
                         if _entry(package, importer) in circle and _entry(package, module) in circle
                         and _entry(package, importer) != _entry(package, module)]
                problems.append(f"new circle in {package}: {sorted(circle)}\n" + "\n".join(sorted(lines)))
        for circle in KNOWN_CIRCLES.get(package, []):
            if circle not in found.get(package, []):
                problems.append(f"the circle {sorted(circle)} in {package} is gone or has changed: "
                                "update KNOWN_CIRCLES")
    assert not problems, "\n".join(problems)


def test_no_module_imports_a_private_name_of_another_package() -> None:
    # (each package is used through its __init__, a subpackage's parent too; tools/private_imports.py
    # lists them)
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "private_imports.py"), "--list"],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    crossing = [line for line in result.stdout.splitlines() if line.startswith("livecontext")]
    assert crossing == [], "private names imported across packages:\n" + "\n".join(crossing)
    assert result.stdout.startswith("0 private names imported across packages"), result.stdout

"""Count the private names imported across packages: ``from livecontext.actors._format import
apps_json`` in a module outside ``livecontext.actors`` itself (the CLI, a sibling package), or a
``_name`` taken from another package.

A module may import the private modules and names of its own package (its siblings); any other
import of a private name (a ``_``-prefixed module or name on the way) crosses a package's wall.
grimp (import-linter's graph) gives the modules and the imports between them; the names come
from each importing line.

    python tools/private_imports.py [--list]

It reads the installed layout (see tests/support/installed.py), so it runs from anywhere.
"""

from __future__ import annotations

import ast
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import grimp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.installed import lay_out_installed_package  # noqa: E402


def _is_package(graph_modules: set[str], module: str) -> bool:
    return any(other.startswith(module + ".") for other in graph_modules)


def crossing(importer: str, importer_is_package: bool, target: str, packages: set[str]) -> bool:
    """Whether importing ``target`` (a dotted path, a name at its end) from ``importer`` takes a
    private part of another package (``packages``: the graph's packages)."""
    home = importer if importer_is_package else importer.rpartition(".")[0]
    parts = target.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            owner = ".".join(parts[:index])
            while owner and owner not in packages:  # a name of a module: its package's
                owner = owner.rpartition(".")[0]
            inside = ".".join(parts[: index + 1])
            if home != owner and not (home + ".").startswith(inside + "."):
                return True
    return False


def private_imports(root: Path, graph: grimp.ImportGraph | None = None) -> list[tuple[str, str]]:
    """(importer, imported dotted name) for each private name imported across packages.

    ``root`` is a tree laid out as installed; ``graph``, grimp's graph of it if already built.
    """
    if graph is None:
        import grimp

        sys.path.insert(0, str(root))
        graph = grimp.build_graph("livecontext", cache_dir=None)
    modules = set(graph.modules)
    packages = {module for module in modules if _is_package(modules, module)} | {"livecontext"}
    found: list[tuple[str, str]] = []
    for importer in sorted(modules):
        is_package = _is_package(modules, importer)
        path = root.joinpath(*importer.split("."))
        source = path / "__init__.py" if is_package else path.with_suffix(".py")
        tree = ast.parse(source.read_text())
        home = importer if is_package else importer.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = home.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                if not module.startswith("livecontext"):
                    continue
                for alias in node.names:
                    target = f"{module}.{alias.name}"
                    if crossing(importer, is_package, target, packages):
                        found.append((importer, target))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("livecontext") and crossing(importer, is_package, alias.name, packages):
                        found.append((importer, alias.name))
    return found


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        found = private_imports(lay_out_installed_package(Path(folder) / "tree"))
    if "--list" in sys.argv:
        for importer, target in found:
            print(f"{importer}: {target}")
    by_package = Counter(importer.rsplit(".", 1)[0] if importer.rsplit(".", 1)[-1].startswith("_") else importer
                         for importer, _ in found)
    print(f"{len(found)} private names imported across packages "
          f"({len({target for _, target in found})} distinct)")
    for package, count in by_package.most_common():
        print(f"  {count:4d}  by {package}")


if __name__ == "__main__":
    main()

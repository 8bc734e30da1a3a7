"""The package-level import graph of a revision: its figures, and a picture of it.

For the working tree or any git revision (checked out with ``git archive`` into a temporary
folder, removed afterwards), grimp (import-linter's graph) gives the modules and the imports
between them, every import counted (inside functions and for type checkers too: each is a
dependency between concepts). From them:

- modules, and packages (a module belongs to the deepest package that holds it; a package's
  ``__init__`` is one of its modules);
- arrows between packages, each with the number of module imports it stands for;
- import cycles between packages and between modules (strongly connected groups of two or more);
- private names imported across packages (``tools/private_imports.py``'s count).

Print the figures of the working tree or of one revision::

    python tools/import_graph.py [--rev REV] [--json] [--list]

Draw two revisions side by side into docs/ (an SVG each with Graphviz's ``dot``, and the figures
in docs/structure.md between its ``figures`` markers)::

    python tools/import_graph.py --before f014eca --after HEAD --out docs/

In a picture the packages are grouped by the layers of pyproject.toml's import-linter contracts
(that revision's), an arrow's label is its number of imports, and the arrows of a cycle are red.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.installed import lay_out_installed_package  # noqa: E402
from tools.private_imports import private_imports  # noqa: E402

WORKTREE = "worktree"
"""The revision name that means the files as they are now, committed or not."""

BEGIN, END = "<!-- figures: begin -->", "<!-- figures: end -->"
"""The markers in docs/structure.md between which ``--out`` writes the pictures and figures."""

Imports = Mapping[str, Sequence[str]]
"""Each module of ours to the modules of ours it imports directly."""


class GraphError(Exception):
    """Something the tool was asked cannot be done; its message says what to do instead."""


@attrs.frozen
class Figures:
    """What the import graph of one revision shows."""

    label: str
    """What was read: a revision (its short hash and subject) or the working tree."""
    modules: int
    packages: tuple[str, ...]
    module_counts: Mapping[str, int]
    """Each package to the number of its modules (``__init__`` included, subpackages not)."""
    arrows: Mapping[tuple[str, str], int]
    """(importing package, imported package) to the number of module imports between them."""
    package_cycles: tuple[frozenset[str], ...]
    module_cycles: tuple[frozenset[str], ...]
    private: tuple[tuple[str, str], ...]
    """(importing module, private dotted name) for each private name imported across packages."""
    contracts: tuple[tuple[str, tuple[str, ...]], ...]
    """pyproject.toml's layers contracts: (container, its layers from top to bottom)."""

    def summary(self) -> dict[str, int]:
        return {"modules": self.modules, "packages": len(self.packages), "arrows": len(self.arrows),
                "imports across packages": sum(self.arrows.values()),
                "cycles between packages": len(self.package_cycles),
                "cycles between modules": len(self.module_cycles),
                "private names imported across packages": len(self.private)}


# ---------------------------------------------------------------------------------------- graph

def package_of(module: str, packages: set[str]) -> str:
    """The deepest package that holds ``module`` (the module itself if it is a package)."""
    while module not in packages:
        module = module.rpartition(".")[0]
    return module


def strongly_connected(edges: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of two or more nodes (Tarjan's, without recursion)."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[frozenset[str]] = []
    nodes = sorted(set(edges) | {target for targets in edges.values() for target in targets})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = lowest[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = lowest[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges.get(successor, ())))))
                    break
                if successor in on_stack:
                    lowest[node] = min(lowest[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    lowest[parent] = min(lowest[parent], lowest[node])
                if lowest[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(frozenset(group))
    return sorted(groups, key=sorted)


def figures_of(label: str, imports: Imports, packages: Iterable[str], private: Sequence[tuple[str, str]] = (),
               contracts: Sequence[tuple[str, tuple[str, ...]]] = ()) -> Figures:
    """The figures of a graph of module imports (``packages``: which of its modules are packages).

    Pure: the tests give it small graphs."""
    modules = set(imports) | {module for imported in imports.values() for module in imported}
    packages = set(packages)
    arrows: Counter[tuple[str, str]] = Counter()
    module_edges: dict[str, set[str]] = {}
    for importer, imported in imports.items():
        for module in imported:
            if module == importer:
                continue
            module_edges.setdefault(importer, set()).add(module)
            pair = (package_of(importer, packages), package_of(module, packages))
            if pair[0] != pair[1]:
                arrows[pair] += 1
    package_edges: dict[str, set[str]] = {}
    for source, target in arrows:
        package_edges.setdefault(source, set()).add(target)
    return Figures(label=label, modules=len(modules), packages=tuple(sorted(packages)),
                   module_counts=dict(Counter(package_of(module, packages) for module in modules)),
                   arrows=dict(sorted(arrows.items())),
                   package_cycles=tuple(strongly_connected(package_edges)),
                   module_cycles=tuple(strongly_connected(module_edges)),
                   private=tuple(private), contracts=tuple(contracts))


# ------------------------------------------------------------------------------- reading a tree

def layer_contracts(source: Path) -> list[tuple[str, tuple[str, ...]]]:
    """The layers contracts of the tree's pyproject.toml: (container, layers top to bottom)."""
    settings = tomllib.loads((source / "pyproject.toml").read_text())
    found = []
    for contract in settings.get("tool", {}).get("importlinter", {}).get("contracts", []):
        if contract.get("type") == "layers":
            for container in contract.get("containers", []):
                found.append((container, tuple(contract["layers"])))
    return found


def analyse(source: Path, label: str) -> Figures:
    """The figures of the repository files at ``source`` (a checkout: pyproject.toml and the
    package folders it maps)."""
    if not (source / "pyproject.toml").is_file():
        raise GraphError(f"{source} has no pyproject.toml: give the root of a livecontext checkout")
    with tempfile.TemporaryDirectory(prefix="import-graph-") as folder:
        try:
            tree = lay_out_installed_package(Path(folder) / "tree", root=source)
        except KeyError as error:
            raise GraphError(f"{label}: its pyproject.toml maps no packages ([tool.setuptools] "
                             f"package-dir has no {error}): the tool reads revisions laid out that way") from None
        # grimp finds the package by its name: a fresh interpreter, where `livecontext` is the
        # laid-out tree (not this checkout's editable install, nor an earlier tree)
        done = subprocess.run([sys.executable, __file__, "--dump", str(tree)], cwd=tree,
                              capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise GraphError(f"{label}: grimp could not read its imports: {last}")
    read = json.loads(done.stdout)
    return figures_of(label, read["imports"], read["packages"], [tuple(pair) for pair in read["private"]],
                      layer_contracts(source))


def _dump(tree: Path) -> None:
    """(In the child process.) Print the imports and private crossings of the laid-out tree."""
    import grimp

    sys.path.insert(0, str(tree))
    graph = grimp.build_graph("livecontext", cache_dir=None)
    imports = {module: sorted(graph.find_modules_directly_imported_by(module)) for module in sorted(graph.modules)}
    packages = [module for module in sorted(graph.modules) if tree.joinpath(*module.split(".")).is_dir()]
    print(json.dumps({"imports": imports, "packages": packages, "private": private_imports(tree, graph)}))


@contextmanager
def checked_out(revision: str) -> Iterator[tuple[Path, str]]:
    """The files of ``revision`` in a temporary folder, and a label for them."""
    if revision == WORKTREE:
        yield ROOT, "the working tree"
        return
    described = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %cs", revision, "--"],
                               capture_output=True, text=True, check=False)
    if described.returncode != 0:
        reason = (described.stderr.strip().splitlines() or [""])[0]
        raise GraphError(f"unknown revision {revision!r} ({reason}): give a commit, branch or tag "
                         f"of this repository, or {WORKTREE!r} for the files as they are")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", revision],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        raise GraphError(f"git archive {revision} failed: {archive.stderr.decode(errors='replace').strip()}")
    with tempfile.TemporaryDirectory(prefix="import-graph-rev-") as folder:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(folder, filter="data")
        yield Path(folder), ", ".join(described.stdout.split())


def figures_at(revision: str) -> Figures:
    with checked_out(revision) as (source, label):
        return analyse(source, label)


# ------------------------------------------------------------------------------------ drawing

def _short(package: str) -> str:
    return package.removeprefix("livecontext.") if package != "livecontext" else "livecontext"


def _top(package: str, root: str) -> str:
    """The top layer a package is in (``livecontext.actors`` for ``livecontext.actors.cli``)."""
    return ".".join(package.split(".")[: len(root.split(".")) + 1])


def _layer_places(figures: Figures) -> dict[str, tuple[str, int]]:
    """Each package that is a layer of a contract: (its container, the layer's index)."""
    places = {}
    for container, layers in figures.contracts:
        for index, layer in enumerate(layers):
            for name in re.split(r"[|:]", layer):
                places[f"{container}.{name.strip()}"] = (container, index)
    return places


_FILLS = ("#fdf1d6", "#dcebf7", "#e2f0d9", "#f3e1f5", "#eeeeee")
"""The fill of each top layer's packages, top to bottom (the front door, actors, runtime, protocol)."""


def _wrap(text: str, width: int = 40) -> str:
    """``text`` in lines of about ``width`` characters (a Graphviz label's line breaks)."""
    lines = [""]
    for word in text.split(" "):
        if lines[-1] and len(lines[-1]) + len(word) > width:
            lines.append("")
        lines[-1] += ("" if not lines[-1] else " ") + word
    return "\\n".join(lines)


def _rows(figures: Figures) -> list[tuple[str, list[str]]]:
    """The picture's rows, top to bottom: (what the row is, its packages).

    A package whose container's contract names it goes in its layer's row; the rest of a
    container (its own modules, its unnamed subpackages) under it in rows of their own, by
    depth, so that a lower layer is always lower in the picture."""
    places = _layer_places(figures)
    root = min(figures.packages, key=len)
    layers_of = dict(figures.contracts)
    rows: list[tuple[str, list[str]]] = []

    def children(package: str) -> list[str]:
        return [other for other in figures.packages if other.rpartition(".")[0] == package]

    def walk(package: str) -> None:
        inner = children(package)
        layers = layers_of.get(package, ())
        unnamed = [other for other in inner if places.get(other, ("",))[0] != package]
        own = [(f"{_short(package)}/: its own modules", [package])] if package != root and inner else []
        # its own modules go above its subpackages if they import them (an __init__ that
        # re-exports), else below (the modules its subpackages build on)
        above = any(source == package and target in inner for source, target in figures.arrows)
        if above:
            rows.extend(own)
        for index, layer in enumerate(layers):
            in_layer = [other for other in inner if places.get(other) == (package, index)]
            nested = [other for other in in_layer if children(other)]
            flat = [other for other in in_layer if not children(other)]
            if flat:
                named = [part.strip() for part in re.split(r"[|:]", layer)]
                modules = [part for part in named if f"{package}.{part}" not in figures.packages]
                what = (", ".join(_short(other) + "/" for other in flat) if package == root
                        else f"{_short(package)}/ layer {index + 1}: {_wrap(' : '.join(other.rpartition('.')[2] for other in flat))}")
                if modules:
                    what += f"\\n(and {len(modules)} modules of {_short(package)}/)"
                rows.append((what, flat))
            for other in nested:
                walk(other)
        leaves = [other for other in unnamed if not children(other)]
        if leaves:
            rows.append((f"{_short(package)}/: its subpackages", leaves))
        for other in unnamed:
            if children(other):
                walk(other)
        if not above:
            rows.extend(own)

    rows.append(("the front door, the command", [root]))
    walk(root)
    return rows


def to_dot(figures: Figures, title: str = "") -> str:
    """The Graphviz source of the package graph: a row per layer of the import-linter contracts
    (its name on the left), a colour per top layer, an arrow per importing pair of packages (its
    thickness and label: the imports it stands for), the packages and arrows of a cycle in red.

    The arrows from one top layer down to another (actors to runtime, runtime to protocol, as the
    contract says) are light and unlabelled, so that the arrows within a layer can be read."""
    root = min(figures.packages, key=len)
    tops = [root] + [package for package in figures.packages if package.count(".") == root.count(".") + 1]
    tops.sort(key=lambda top: next((index for index, layer in enumerate(dict(figures.contracts).get(root, ()))
                                    if top.rpartition(".")[2] in re.split(r"\s*[|:]\s*", layer)), -1))
    in_cycle = {package for group in figures.package_cycles for package in group}
    same_cycle = {(source, target) for source, target in figures.arrows
                  if any(source in group and target in group for group in figures.package_cycles)}
    summary = figures.summary()
    figures_line = (f"{summary['modules']} modules, {summary['packages']} packages, {summary['arrows']} arrows "
                    f"({summary['imports across packages']} imports); cycles: {summary['cycles between packages']} "
                    f"between packages, {summary['cycles between modules']} between modules; "
                    f"private names imported across packages: {summary['private names imported across packages']}")
    lines = ["digraph imports {",
             '  graph [rankdir=TB, newrank=true, fontname="Helvetica", fontsize=18, labelloc=t, nodesep=0.25,',
             f'         ranksep=0.45, label="{title or figures.label}\\n{figures_line}\\n "];',
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=13];',
             '  edge [fontname="Helvetica", fontsize=10, fontcolor="#555555", color="#555555", arrowsize=0.6];']
    rows = _rows(figures)
    for index, (what, packages) in enumerate(rows):
        lines.append(f'  {{ rank=same; "row {index}" [shape=plaintext, style="", fontsize=11, fontcolor="#777777", '
                     f'label="{what}"];')
        for package in packages:
            count = figures.module_counts.get(package, 0)
            name = _short(package)
            if package == root:
                name = f"{root}/ (front door, command)"
            elif any(other.startswith(package + ".") for other in figures.packages):
                name = f"{name} (its own)"
            top = _top(package, root) if package != root else root
            fill = _FILLS[min(tops.index(top), len(_FILLS) - 1)] if top in tops else _FILLS[-1]
            colour = ", color=red, fontcolor=red, penwidth=2.5" if package in in_cycle else ""
            lines.append(f'    "{package}" [label="{name}\\n{count} module{"s" if count != 1 else ""}", '
                         f'fillcolor="{fill}"{colour}];')
        lines.append("  }")
    for index in range(len(rows) - 1):
        lines.append(f'  "row {index}" -> "row {index + 1}" [style=invis];')
    widest = max(figures.arrows.values(), default=1)
    for (source, target), count in figures.arrows.items():
        width = 0.6 + 3.4 * math.log(count) / math.log(widest) if widest > 1 else 1.0
        if (source, target) in same_cycle:
            style = f'label="{count}", color=red, fontcolor=red'
        elif source == root:  # the front door's re-exports
            style = 'color="#bbbbbb", style=dashed'
        elif _top(source, root) != _top(target, root):
            style = 'color="#c8c8c8"'
        else:
            style = f'label="{count}"'
        lines.append(f'  "{source}" -> "{target}" [{style}, penwidth={width:.2f}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def find_dot() -> str:
    """Graphviz's ``dot``, which draws the pictures."""
    dot = shutil.which("dot")
    if dot is None:
        raise GraphError("Graphviz's dot is not installed (apt-get install graphviz): it draws the "
                         "pictures; the figures print without it (leave out --before, --after and --out)")
    return dot


def render_svg(dot_source: str, path: Path) -> None:
    done = subprocess.run([find_dot(), "-Tsvg"], input=dot_source, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GraphError(f"dot could not draw {path.name}: {done.stderr.strip()}")
    # dot writes its version in a comment: keep the file the same whoever draws it
    path.write_text(re.sub(r"<!-- Generated by graphviz version [^>]*-->\n", "", done.stdout))


# ---------------------------------------------------------------------------------- reporting

def figures_table(before: Figures, after: Figures) -> str:
    rows = ["| | before | after |", "|---|---:|---:|"]
    for (name, old), new in zip(before.summary().items(), after.summary().values(), strict=True):
        rows.append(f"| {name} | {old} | {new} |")
    return "\n".join(rows)


def _cycles_text(figures: Figures) -> list[str]:
    lines = []
    for group in figures.package_cycles:
        inside = [f"{_short(s)} -> {_short(t)} ({n})" for (s, t), n in figures.arrows.items()
                  if s in group and t in group]
        lines.append(f"- packages {', '.join(_short(p) for p in sorted(group))}: {'; '.join(inside)}")
    for group in figures.module_cycles:
        lines.append(f"- modules {', '.join(_short(m) for m in sorted(group))}")
    return lines


def page_section(before: Figures, after: Figures, before_svg: str, after_svg: str) -> str:
    parts = [BEGIN,
             f"| before: {before.label} | after: {after.label} |", "|---|---|",
             f'| <a href="{before_svg}"><img src="{before_svg}" alt="The package import graph before"></a> '
             f'| <a href="{after_svg}"><img src="{after_svg}" alt="The package import graph after"></a> |',
             "", figures_table(before, after), ""]
    for name, figures in (("before", before), ("after", after)):
        cycles = _cycles_text(figures)
        parts += [f"Cycles {name}: none.", ""] if not cycles else [f"Cycles {name}:", "", *cycles, ""]
    parts.append(END)
    return "\n".join(parts)


def write_page(page: Path, section: str) -> None:
    text = page.read_text() if page.exists() else ""
    if BEGIN not in text or END not in text:
        raise GraphError(f"{page} has no {BEGIN} ... {END} markers: add them where the pictures and "
                         "figures go")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    page.write_text(head + section + tail)


def print_figures(figures: Figures, listing: bool) -> None:
    print(figures.label)
    for name, value in figures.summary().items():
        print(f"  {value:5d}  {name}")
    print("  arrows between packages (imports):")
    for (source, target), count in figures.arrows.items():
        print(f"    {_short(source)} -> {_short(target)}  {count}")
    for line in _cycles_text(figures):
        print("  cycle: " + line[2:])
    if listing:
        for importer, name in figures.private:
            print(f"  private: {importer}: {name}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="import_graph.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default=WORKTREE, help=f"a git revision, or {WORKTREE!r} (the default)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--list", action="store_true", help="also list the private names imported across packages")
    parser.add_argument("--before", help="draw this revision ...")
    parser.add_argument("--after", help=f"... beside this one (or {WORKTREE!r})")
    parser.add_argument("--out", type=Path, help="the folder for the two SVGs and structure.md (docs/)")
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.dump:
        _dump(options.dump)
        return 0
    try:
        if options.before or options.after or options.out:
            if not (options.before and options.after and options.out):
                raise GraphError("--before, --after and --out go together: "
                                 "python tools/import_graph.py --before f014eca --after HEAD --out docs/")
            if not options.out.is_dir():
                raise GraphError(f"--out {options.out}: no such folder")
            find_dot()  # before the minutes of reading two revisions
            before, after = figures_at(options.before), figures_at(options.after)
            for name, figures in (("before", before), ("after", after)):
                render_svg(to_dot(figures, f"{name}: {figures.label}"), options.out / f"import-graph-{name}.svg")
            write_page(options.out / "structure.md",
                       page_section(before, after, "import-graph-before.svg", "import-graph-after.svg"))
            print(figures_table(before, after))
            return 0
        figures = figures_at(options.rev)
    except GraphError as error:
        print(f"import_graph.py: {error}", file=sys.stderr)
        return 2
    if options.json:
        print(json.dumps({"label": figures.label, **figures.summary(),
                          "packages": list(figures.packages),
                          "arrows": [[s, t, n] for (s, t), n in figures.arrows.items()],
                          "cycles between packages": [sorted(g) for g in figures.package_cycles],
                          "cycles between modules": [sorted(g) for g in figures.module_cycles],
                          "private names imported across packages": [list(p) for p in figures.private]},
                         indent=2))
    else:
        print_figures(figures, options.list)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""tools/import_graph.py: the package-level import graph's figures, and what it draws.

The pictures in docs/ are drawn by Graphviz; these tests need no Graphviz: they check the
figures (on the working tree: no cycle between packages or modules) and the drawing's source.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.installed import ROOT
from tools.import_graph import BEGIN, END, GraphError, figures_of, main, strongly_connected, to_dot, write_page

TOOL = ROOT / "tools" / "import_graph.py"
CONTRACTS = (("p", ("x", "low")), ("p.x", ("cli", "a | b")))
PACKAGES = ("p", "p.x", "p.x.a", "p.x.b", "p.x.cli", "p.low")
"""A package ``p`` of two layers: ``x`` (the CLI over two packages) above ``low``."""


def test_the_working_tree_has_no_import_cycle_between_packages_or_between_modules() -> None:
    done = subprocess.run([sys.executable, str(TOOL), "--json"], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["modules"] > 100, f"grimp found only {figures['packages']}: is the tree laid out as installed?"
    assert {"livecontext", "livecontext.actors.agent", "livecontext.runtime", "livecontext.protocol"} <= set(
        figures["packages"])
    assert figures["cycles between packages"] == []
    assert figures["cycles between modules"] == []


def test_two_packages_that_import_each_other_are_a_cycle_between_packages_not_between_modules() -> None:
    imports = {"p": [], "p.x": [], "p.x.a": [], "p.x.a._x": ["p.x.b._y"], "p.x.a._z": [],
               "p.x.b": [], "p.x.b._y": ["p.x.a._z"], "p.x.cli": ["p.x.a"], "p.low": []}
    figures = figures_of("test", imports, PACKAGES, contracts=CONTRACTS)
    assert figures.package_cycles == (frozenset({"p.x.a", "p.x.b"}),)
    assert figures.module_cycles == ()


def test_two_modules_of_one_package_that_import_each_other_are_a_cycle_between_modules_only() -> None:
    imports = {"p": [], "p.x": [], "p.x._x": ["p.x._y"], "p.x._y": ["p.x._x"], "p.low": [], "p.low._z": []}
    figures = figures_of("test", imports, PACKAGES, contracts=CONTRACTS)
    assert figures.module_cycles == (frozenset({"p.x._x", "p.x._y"}),)
    assert figures.package_cycles == ()


def test_an_arrow_between_packages_counts_the_module_imports_it_stands_for() -> None:
    imports = {"p": [], "p.x": [], "p.x.a": ["p.low"], "p.x.a._x": ["p.low._z", "p.low"], "p.x.a._w": ["p.x.a._x"],
               "p.low": [], "p.low._z": []}
    figures = figures_of("test", imports, PACKAGES, [("p.x.a._x", "p.low._z.thing")], CONTRACTS)
    assert figures.arrows == {("p.x.a", "p.low"): 3}
    assert figures.module_counts == {"p": 1, "p.x": 1, "p.x.a": 3, "p.low": 2}
    assert figures.summary()["private names imported across packages"] == 1


def test_the_drawing_puts_the_arrows_of_a_cycle_in_red_and_no_other() -> None:
    imports = {"p": [], "p.x": [], "p.x.a": ["p.x.b"], "p.x.b": ["p.x.a"], "p.x.cli": ["p.x.a"], "p.low": []}
    dot = to_dot(figures_of("test", imports, PACKAGES, contracts=CONTRACTS))
    red = sorted(line.strip().split(" [")[0] for line in dot.splitlines() if "->" in line and "color=red" in line)
    assert red == ['"p.x.a" -> "p.x.b"', '"p.x.b" -> "p.x.a"']
    assert '"p.x.cli" -> "p.x.a" [label="1"' in dot


def test_the_drawing_has_a_row_per_layer_of_the_contract_top_to_bottom() -> None:
    imports = {"p": ["p.x"], "p.x": ["p.x.cli"], "p.x.cli": ["p.x.a"], "p.x.a": ["p.low"], "p.x.b": [], "p.low": []}
    dot = to_dot(figures_of("test", imports, PACKAGES, contracts=CONTRACTS))
    placed = [line.strip().split('"')[1] for line in dot.splitlines() if line.startswith('    "p')]
    assert placed == ["p", "p.x", "p.x.cli", "p.x.a", "p.x.b", "p.low"]
    rows = [line.split('label="')[1].split('"')[0] for line in dot.splitlines() if "rank=same" in line]
    assert rows == ["the front door, the command", "p.x/: its own modules", "p.x/ layer 1: cli",
                    "p.x/ layer 2: a : b", "p.low/"]
    # an arrow down to another of the top layers is light and unlabelled
    assert '"p.x.a" -> "p.low" [color="#c8c8c8"' in dot


def test_a_long_chain_is_one_strongly_connected_group_without_running_out_of_stack() -> None:
    nodes = [f"m{index}" for index in range(5000)]
    edges = {node: {nodes[(index + 1) % len(nodes)]} for index, node in enumerate(nodes)}
    assert strongly_connected(edges) == [frozenset(nodes)]


def test_an_unknown_revision_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--rev", "no-such-revision"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "unknown revision 'no-such-revision'" in err and "give a commit, branch or tag" in err


def test_drawing_without_all_of_before_after_and_out_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--before", "HEAD"]) == 2
    assert "--before, --after and --out go together" in capsys.readouterr().err


def test_drawing_without_graphviz_is_refused_in_one_line_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert main(["--before", "HEAD", "--after", "HEAD", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Graphviz's dot is not installed" in err
    assert list(tmp_path.iterdir()) == []


def test_the_page_is_rewritten_between_its_markers_only(tmp_path: Path) -> None:
    page = tmp_path / "structure.md"
    page.write_text(f"# Title\n\n{BEGIN}\nold figures\n{END}\n\nThe command.\n")
    write_page(page, f"{BEGIN}\nnew figures\n{END}")
    assert page.read_text() == f"# Title\n\n{BEGIN}\nnew figures\n{END}\n\nThe command.\n"


def test_a_page_without_markers_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    page = tmp_path / "structure.md"
    page.write_text("# Title\n\nHand-written.\n")
    with pytest.raises(GraphError, match="no <!-- figures: begin --> ... <!-- figures: end --> markers"):
        write_page(page, f"{BEGIN}\nnew figures\n{END}")
    assert page.read_text() == "# Title\n\nHand-written.\n"

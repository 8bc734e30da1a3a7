"""``livecontext explore``: the planted ordering bug's seed, its replay command and its trace page."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from livecontext.actors.cli import main

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "explore"
CHECK = ["--check", "checks:every_question_answered"]


@pytest.fixture
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The example copied to a folder that is the current one (the check is imported from there)."""
    folder = tmp_path / "desk"
    shutil.copytree(EXAMPLE, folder)
    monkeypatch.chdir(folder)
    path = list(sys.path)
    try:
        yield folder
    finally:
        sys.path[:] = path


def explore(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["explore", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_explore_prints_the_failing_seed_its_replay_command_and_its_trace_page(desk: Path) -> None:
    code, out, _ = explore("desk.toml", "--seeds", "4", *CHECK, "--out", "pages", "--json")

    report = json.loads(out)
    assert code == 1
    [failure] = report["failures"]
    assert "never taken by the oracle" in failure["reason"]
    assert failure["replay"] == f"livecontext explore desk.toml --replay {failure['seed']} {' '.join(CHECK)}"
    assert failure["replayed_same"] is True
    page = Path(failure["trace"])
    assert page.parent == Path("pages") and "<html" in page.read_text(encoding="utf-8").lower()
    assert sum(o["count"] for o in report["outcomes"]) == 4


def test_the_printed_replay_command_fails_the_same_way(desk: Path) -> None:
    _, out, _ = explore("desk.toml", "--seeds", "4", *CHECK, "--out", "pages", "--json")
    failure = json.loads(out)["failures"][0]

    code, again, _ = explore(*failure["replay"].split()[2:], "--out", "pages", "--json")

    assert code == 1 and json.loads(again)["failure"] == failure["reason"]


def test_explore_of_a_correct_system_exits_0(desk: Path) -> None:
    code, out, _ = explore("desk-fixed.toml", "--seeds", "3", *CHECK, "--out", "pages")

    assert code == 0
    assert "3 seeds, 3 distinct delivery orders, 1 distinct outcome" in out


@pytest.mark.parametrize(("args", "said"), [
    (["--faults", "disk"], "unknown fault 'disk'"),
    (["--check", "nowhere"], "give MODULE:FN"),
    (["--inputs", "missing.json"], "cannot read it"),
])
def test_bad_input_is_one_line_and_exit_2(desk: Path, args: list[str], said: str) -> None:
    code, _, err = explore("desk.toml", "--seeds", "1", *args)

    assert code == 2
    assert said in err and len(err.strip().splitlines()) == 1


def test_inputs_naming_an_agent_the_system_lacks_are_refused(desk: Path) -> None:
    Path("inputs.json").write_text('{"carol": ["hi"]}', encoding="utf-8")

    code, _, err = explore("desk.toml", "--inputs", "inputs.json")

    assert code == 2 and "agent 'carol'" in err

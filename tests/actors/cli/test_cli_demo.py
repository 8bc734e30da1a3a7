"""``livecontext demo`` keeps to its own thread and says when it failed (issue 16, finding 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from livecontext.actors.cli import _demo, main


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env={"LIVECONTEXT_STORE": None, "COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_demo_refuses_to_write_into_an_existing_thread(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'x.db'}"
    assert _invoke("run", "--store", url, "--thread", "mine", "--input", "my notes")[0] == 0
    before = _invoke("audit", "--store", url, "--thread", "mine")[1]
    code, out, err = _invoke("demo", "--store", url, "--thread", "mine")
    assert code == 1 and out == ""
    assert err.splitlines() == [
        f"livecontext: error: thread 'mine' already exists in {url}: the demo writes its own conversation "
        "into a new thread; give another --thread, or leave it out"]
    assert _invoke("audit", "--store", url, "--thread", "mine")[1] == before


def test_a_demo_whose_model_call_failed_exits_non_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_demo, "DEMO_TURNS", _demo.DEMO_TURNS[:2])
    code, _, err = _invoke("demo", "--store", "memory:", "--thread", "short")
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("livecontext: error: failed: scripted model has no turn 2"), err

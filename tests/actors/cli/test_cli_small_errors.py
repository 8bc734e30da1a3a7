"""The small things a careful new user trips on: an empty ``--store``, a store in folders that
do not exist yet, a base URL that is no URL, a model spec that is no spec, a scripted model
that ran out of turns, options without help (issue 16, finding 9).

Each runs ``main`` in this process through click's runner.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from livecontext.actors.cli import main
from livecontext.runtime import UsageError
from livecontext.runtime.models import make_model_client

ROOT = Path(__file__).resolve().parents[3]


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env={"LIVECONTEXT_STORE": None, "COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _one_error(code: int, err: str) -> str:
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("livecontext: error: "), err
    return lines[0]


def test_an_empty_store_url_is_an_error_and_touches_no_default_store(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for command in (["run", "--input", "hi"], ["history", "--thread", "main"], ["threads"]):
        code, out, err = _invoke(*command, "--store", "")
        line = _one_error(code, err)
        assert "--store is empty" in line and "sqlite:PATH" in line
        assert out == ""
    assert list(tmp_path.iterdir()) == []  # no .livecontext/ made


def test_a_store_in_missing_folders_creates_them_and_says_so(tmp_path: Path) -> None:
    for url, made in ((f"sqlite:{tmp_path}/a/b/x.db", tmp_path / "a"), (f"jsonl:{tmp_path}/c/d", tmp_path / "c")):
        code, _, err = _invoke("run", "--store", url, "--input", "hi")
        assert code == 0, err
        assert f"livecontext: note: created the folder {made} for the store {url}" in err.splitlines()
    code, _, err = _invoke("run", "--store", f"sqlite:{tmp_path}/a/b/x.db", "--input", "again")
    assert code == 0 and "created the folder" not in err  # said once, when made


def test_a_base_url_that_is_no_url_fails_at_once_without_retries() -> None:
    with pytest.raises(UsageError, match=r"^the base URL 'notaurl' is not an http:// or https:// URL"):
        make_model_client("openai:gpt-4o-mini", base_url="notaurl", api_key="k")
    code, out, err = _invoke("run", "--store", "memory:", "--model", "openai:gpt-4o-mini", "--base-url", "notaurl",
                             "--api-key", "k", "--input", "hi")
    line = _one_error(code, err)
    assert "notaurl" in line and "attempts" not in line and "--base-url" in line
    assert out == ""


def test_the_unknown_model_error_suggests_no_file_that_does_not_exist() -> None:
    code, _, err = _invoke("run", "--store", "memory:", "--model", "nosuch", "--input", "hi")
    line = _one_error(code, err)
    assert "unknown model spec 'nosuch'" in line
    for path in re.findall(r"scripted:(\S+?\.json)", line):
        assert (ROOT / path).is_file(), f"the error suggests {path}, which does not exist"


def test_budget_options_say_what_they_are(tmp_path: Path) -> None:
    for command in ("chat", "render"):
        code, out, _ = _invoke(command, "--help")
        assert code == 0
        help_text = " ".join(out.split())
        assert re.search(r"--budget INTEGER RANGE Token budget", help_text), help_text


def test_a_script_that_runs_out_says_why_without_blaming_max_steps(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "one"}]}))
    url = f"sqlite:{tmp_path / 'x.db'}"
    code, _, err = _invoke("run", "--store", url, "--model", f"scripted:{script}", "--input", "a", "--input", "b")
    last = err.strip().splitlines()[-1]
    assert code == 1 and "has no turn 1" in last and "add turns to the script" in last
    assert "max-steps" not in last
    # a resumed thread goes on from its next turn: the error says the turns were used before
    code, _, err = _invoke("run", "--store", url, "--input", "c")
    last = err.strip().splitlines()[-1]
    assert code == 1 and "max-steps" not in last
    assert "thread main used turns 0-0 before this run" in last and "--thread" in last


def test_running_the_offline_blueprint_twice_on_the_default_store_explains_the_second_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    examples = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", examples)
    monkeypatch.chdir(tmp_path)
    code, _, err = _invoke("run", "examples/offline.toml")
    assert code == 0, err
    code, out, err = _invoke("run", "examples/offline.toml")
    last = err.strip().splitlines()[-1]
    assert code == 1
    assert "thread lake-trip used turns 0-8 before this run" in last, last
    assert "max-steps" not in last


def test_a_store_whose_schema_sql_is_damaged_is_one_error_line(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "store.db"
    assert CliRunner().invoke(main, ["run", "--store", f"sqlite:{db}", "--input", "hi"]).exit_code == 0
    with sqlite3.connect(db) as conn:  # the records table's SQL, as a flipped byte leaves it
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'records'",  # (an opening quote: the
                     ("CREATE TABLE records (\n    seq INTEGER NOT NULL,\n    'ayload TEXT,\n"  # token SQLite
                      "    PRIMARY KEY (seq)\n)",))  # quotes in its error runs to the end, newlines and all)
    result = CliRunner().invoke(main, ["threads", "--store", f"sqlite:{db}"])
    assert result.exit_code == 1
    assert result.stderr.startswith("livecontext: error: sqlite: malformed database schema")
    assert result.stderr.count("\n") == 1, result.stderr

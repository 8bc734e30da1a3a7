"""Tools and apps by import path on the command line, and a thread resumed as it was
(issue 15, point 3)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trio
from click.testing import CliRunner

from livecontext.actors.agent._session import recorded_config
from livecontext.actors.cli import main

TOOLS = '''
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''
SCRIPT = {"turns": [{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}, {"text": "it is 5"},
                    {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]}, {"text": "it is 2"}]}


def run(*args: str) -> tuple[int, dict[str, object] | None, str]:
    result = CliRunner().invoke(main, ["run", *args])
    out = json.loads(result.stdout) if result.exit_code == 0 and "--json" in args else None
    return result.exit_code, out, result.stderr


def results(summary: dict[str, object] | None) -> list[str]:
    assert summary is not None
    entries = summary["entries"]
    assert isinstance(entries, list)
    return [r["content"] for e in entries if e["kind"] == "tool_results" for r in e["results"]]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cli_tools_here.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT), encoding="utf-8")
    return tmp_path


def test_a_tool_given_by_import_path_is_called_and_the_thread_resumes_with_it_and_its_model(project: Path) -> None:
    store = f"sqlite:{project / 'lc.db'}"
    code, first, _ = run("--store", store, "--tool", "cli_tools_here:add", "--model", "scripted:script.json",
                         "--input", "add 2 and 3", "--json")
    assert code == 0 and results(first) == ["5"]
    assert first is not None and first["apps"] == {"notebook": "", "tools": ""}
    code, second, err = run("--store", store, "--input", "add 1 and 1", "--json")  # no --model, no --tool
    assert code == 0 and results(second) == ["5", "2"] and err == ""


def test_a_model_other_than_the_recorded_one_is_said_in_one_line(project: Path) -> None:
    store = f"sqlite:{project / 'lc.db'}"
    assert run("--store", store, "--tool", "cli_tools_here:add", "--model", "scripted:script.json",
               "--input", "go", "--json")[0] == 0
    code, _, err = run("--store", store, "--model", "echo", "--input", "hi", "--json")
    script = project / "script.json"
    assert code == 0 and err == f"livecontext: note: thread main ran with model scripted:{script}; it now runs with echo\n"


@pytest.mark.parametrize(("flag", "path", "message"), [
    ("--tool", "nowhere_to_be_found:f", "tool 'nowhere_to_be_found:f': cannot import module 'nowhere_to_be_found'"),
    ("--tool", "cli_tools_here:missing", "tool 'cli_tools_here:missing': module 'cli_tools_here' has no 'missing'"),
    ("--app", "cli_tools_here:add", "app 'cli_tools_here:add' is a function, not an App class"),
    ("--app", "nowhere_to_be_found:App", "app 'nowhere_to_be_found:App': cannot import module"),
])
def test_an_import_path_that_is_not_a_tool_or_an_app_is_one_line_naming_it(
        project: Path, flag: str, path: str, message: str) -> None:
    code, _, err = run("--store", f"sqlite:{project / 'lc.db'}", flag, path, "--input", "x",
                       "--events", str(project / "events.jsonl"))
    assert code == 1 and err.startswith(f"livecontext: error: {message}") and err.count("\n") == 1
    assert not (project / "lc.db").exists()  # nothing was written
    assert not (project / "events.jsonl").exists()  # not even an empty events file


def test_a_thread_resumed_where_its_function_tool_cannot_be_imported_names_the_tool_as_given(
        project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    store = f"sqlite:{project / 'lc.db'}"
    assert run("--store", store, "--tool", "cli_tools_here:add", "--model", "scripted:script.json",
               "--input", "add 2 and 3", "--json")[0] == 0
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    monkeypatch.delitem(sys.modules, "cli_tools_here", raising=False)
    # (earlier tests' folders, put on sys.path by their runs, hold the module too)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not (Path(p) / "cli_tools_here.py").exists()])
    code, _, err = run("--store", store, "--thread", "main", "--input", "add 1 and 1")
    assert code == 1
    assert err == ("livecontext: error: cli_tools_here:add cannot be imported: cannot import module 'cli_tools_here' "
                   "(No module named 'cli_tools_here'); run from the folder that has it, or give --tool\n")


def test_a_chat_on_a_thread_run_with_a_tool_resumes_with_its_tool_and_its_model(project: Path) -> None:
    store = f"sqlite:{project / 'lc.db'}"
    assert run("--store", store, "--tool", "cli_tools_here:add", "--model", "scripted:script.json",
               "--input", "add 2 and 3", "--json")[0] == 0
    chat = CliRunner().invoke(main, ["chat", "--store", store, "--thread", "main"], input="add 1 and 1\n")
    assert chat.exit_code == 0, chat.stderr
    code, summary, _ = run("--store", store, "--json")  # (reads where it stands: nothing left to do)
    assert code == 0 and results(summary) == ["5", "2"]
    assert summary is not None and summary["apps"] == {"notebook": "", "tools": ""}


def test_a_tool_flag_adds_to_a_blueprints_tools_in_its_one_tools_app(project: Path) -> None:
    (project / "more_tools_here.py").write_text(TOOLS.replace("def add", "def plus"), encoding="utf-8")
    (project / "bp.toml").write_text('model = "scripted:script.json"\ninputs = ["add 2 and 3"]\n'
                                     '[[tools]]\nuse = "cli_tools_here:add"\n', encoding="utf-8")
    code, summary, err = run(str(project / "bp.toml"), "--store", f"sqlite:{project / 'lc.db'}",
                             "--tool", "more_tools_here:plus", "--json")
    assert code == 0, err
    assert results(summary) == ["5"] and summary is not None and summary["apps"] == {"notebook": "", "tools": ""}
    config = trio.run(recorded_config, f"sqlite:{project / 'lc.db'}", "main")
    assert config is not None and {"add", "plus"} <= {t.name for t in config.tools}

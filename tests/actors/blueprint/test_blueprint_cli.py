"""``livecontext run BLUEPRINT.toml``: the examples run, and flags win.

The command runs in this process (what a process adds, its signals and its exit, is
tests/actors/cli's), from the folder a user would run it in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from livecontext.actors.cli import main

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def livecontext(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[bytes]:
    """``livecontext ARGS`` run in ``cwd``, as a process would end (an exception that escapes
    the command fails the test with its traceback)."""
    here = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, list(args), env={"LIVECONTEXT_STORE": None})
    finally:
        os.chdir(here)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout_bytes, result.stderr_bytes)


def run_json(*args: str, cwd: Path = ROOT) -> dict[str, Any]:
    done = livecontext("run", *args, "--json", cwd=cwd)
    assert done.returncode == 0, done.stderr.decode()
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def copy_offline(tmp_path: Path, **top: str) -> Path:
    """The offline example in ``tmp_path``, with top-level keys set (``key="key = value"``)."""
    shutil.copy(EXAMPLES / "offline_script.json", tmp_path / "offline_script.json")
    lines = (EXAMPLES / "offline.toml").read_text(encoding="utf-8").splitlines()
    out = [line for line in lines if line.split("=")[0].strip() not in top or not line[:1].isalpha()]
    path = tmp_path / "offline.toml"
    path.write_text("\n".join([*top.values(), *out]) + "\n", encoding="utf-8")
    return path


def last_answer(data: dict[str, Any]) -> str:
    answers = [e["levels"]["live"] for e in data["entries"] if e["kind"] == "model_output"]
    return str(answers[-1])


def test_the_offline_example_runs_to_the_end_and_the_recap_folds_during_the_run() -> None:
    data = run_json(str(EXAMPLES / "offline.toml"), "--store", "memory:")
    assert data["thread"] == "lake-trip"
    assert data["state"] == "WaitingInput"
    kinds = [e["kind"] for e in data["entries"]]
    assert "recap" in kinds
    assert any(e["folded"] for e in data["entries"] if e["kind"] != "recap")
    unfolded = [e for e in data["entries"] if not e["folded"]]
    assert len(unfolded) <= 8  # [limits] max_entries
    assert last_answer(data).startswith("The plan: day 1 drive up")
    assert "food for two days" in data["apps"]["notebook"]
    senders = {n["sender"] for e in data["entries"] for n in e.get("notifications", [])}
    assert "analyzer/lake-trip.failures" in senders


def test_without_flags_the_blueprints_thread_inputs_steps_and_store_apply(tmp_path: Path) -> None:
    path = copy_offline(tmp_path, store='store = "jsonl:data/store"', max_steps="max_steps = 3")
    data = run_json(str(path), cwd=tmp_path / "..")
    assert data["thread"] == "lake-trip"
    assert data["state"] == "ToolResultsReady"  # stopped by max_steps = 3
    assert data["entries"][0]["levels"]["live"] == "Plan a weekend trip to the lake; keep the plan in your notebook."
    assert (tmp_path / "data" / "store").is_dir()  # the store, taken from the blueprint's folder


def test_flags_given_on_the_command_line_override_the_blueprint(tmp_path: Path) -> None:
    path = copy_offline(tmp_path, store='store = "jsonl:data/store"')
    data = run_json(
        str(path), "--store", "memory:", "--thread", "other", "--input", "Start a plan",
        "--model", f"scripted:{EXAMPLES / 'notebook_script.json'}", "--max-steps", "40")
    assert data["thread"] == "other"
    assert data["state"] == "WaitingInput"
    assert [e["levels"]["live"] for e in data["entries"] if e["kind"] == "model_input"] == ["Start a plan"]
    assert last_answer(data).startswith("The plan is in my notebook: requirements")
    assert not (tmp_path / "data").exists()  # --store memory: won over the blueprint's store


def test_max_steps_given_on_the_command_line_wins() -> None:
    data = run_json(str(EXAMPLES / "offline.toml"), "--store", "memory:", "--max-steps", "3")
    assert data["state"] == "ToolResultsReady"
    assert len(data["entries"]) == 2


def test_system_given_on_the_command_line_replaces_the_blueprints_prompt(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 's.db'}"
    run_json(str(EXAMPLES / "offline.toml"), "--store", store, "--max-steps", "3", "--system", "Be brief.")
    done = livecontext("render", "--thread", "lake-trip", "--store", store)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["messages"][0] == {"role": "system", "content": "Be brief."}


def test_budget_comes_from_the_blueprint_unless_given_on_the_command_line(tmp_path: Path) -> None:
    path = copy_offline(tmp_path, budget="budget = 850")

    def rendered_tokens(*flags: str) -> list[int]:
        events = tmp_path / f"events{len(flags)}.jsonl"
        run_json(str(path), "--store", "memory:", "--events", str(events), *flags)
        lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
        return [e["tokens"] for e in lines if e["type"] == "BeforeModelCall"]

    assert max(rendered_tokens()) <= 850
    assert max(rendered_tokens("--budget", "100000")) > 850


def test_the_blueprints_side_models_reach_the_recap_and_the_model_analyzer(tmp_path: Path) -> None:
    path = copy_offline(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace(
        'strategy = "simple_extract"   # no model needed',
        'strategy = "model_summary"\nmodel = "echo"',
    ) + '\n[[analyzers]]\nname = "critic"\nkind = "model"\nmodel = "echo"\nprompt = "Any loops?"\n',
        encoding="utf-8")
    data = run_json(str(path), "--store", "memory:")
    recaps = [e["levels"]["live"] for e in data["entries"] if e["kind"] == "recap"]
    assert recaps and recaps[0].startswith("echo: Steps:")  # written by the recap's own model
    notes = [n for e in data["entries"] for n in e.get("notifications", [])]
    assert any(n["sender"] == "analyzer/lake-trip.critic" and n["text"].startswith("echo: ") for n in notes)


def test_a_bad_blueprint_exits_non_zero_with_one_line_naming_the_file_and_the_line(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('thread = "t"\n[recap]\nstrategy = "fancy"\n', encoding="utf-8")
    done = livecontext("run", "bad.toml", "--store", "memory:", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == b""
    assert done.stderr.decode() == (
        "livecontext: error: bad.toml:3: [recap] strategy must be one of simple_extract, "
        "model_summary, structured, got 'fancy'\n")


def test_a_missing_blueprint_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    done = livecontext("run", "nope.toml", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.decode() == "livecontext: error: nope.toml: no such blueprint file; check the path\n"


def test_the_readmes_next_input_resumes_the_notebook_example_where_it_stopped(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'r.db'}"
    run_json("--model", "scripted:examples/notebook_script.json", "--input", "Start a plan", "--store", store)
    data = run_json("--thread", "main", "--input", "next", "--store", store)  # its model, resumed
    assert data["state"] == "WaitingInput"
    assert "- gather the requirements (in progress)" in data["apps"]["notebook"]
    assert last_answer(data) == "I have started gathering the requirements; the notebook says so."


def test_run_without_a_blueprint_still_runs_the_readme_example() -> None:
    data = run_json("--model", "scripted:examples/notebook_script.json", "--input", "Start a plan",
                          "--store", "memory:")
    assert data["state"] == "WaitingInput"
    assert "review it with the team" in data["apps"]["notebook"]

"""``livecontext batch``: one agent per task of a tasks file, in this process (issue 19, point 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from click.testing import CliRunner, Result

from livecontext.actors.cli import main
from livecontext.protocol import ModelInputEntry, make_converter
from livecontext.actors.history import load_state
from livecontext.runtime.persistence import open_store

SCRIPT = {"turns": [{"text": "first answer"}, {"text": "second answer"}]}
BLUEPRINT = '''
system_prompt = "You help with {topic}."
model = "scripted:script.json"
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT), encoding="utf-8")
    (tmp_path / "agent.toml").write_text(BLUEPRINT, encoding="utf-8")
    return tmp_path


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    return path


def batch(*args: str) -> Result:
    return CliRunner().invoke(main, ["batch", "agent.toml", "--store", "sqlite:b.db", *args])


def results(path: Path) -> dict[str, dict[str, Any]]:
    return {obj["id"]: obj for obj in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def inputs_of(thread: str) -> list[str]:
    async def go() -> list[str]:
        async with await open_store("sqlite:b.db") as store:
            reader = await store.open_reader(thread)
            async with reader:
                state = await load_state(reader, make_converter(), thread)
        return [e.content.live.text for e in state.entries if isinstance(e, ModelInputEntry)]
    return trio.run(go)


FIVE = [{"id": f"t{i}", "inputs": ["Tell me about {topic}."], "vars": {"topic": f"topic {i}"}} for i in range(5)]


def test_five_tasks_run_in_process_and_each_gets_a_result_line(project: Path) -> None:
    tasks = write_tasks(project / "five.jsonl", FIVE)
    ran = batch("--tasks", str(tasks))
    assert ran.exit_code == 0, ran.stderr
    got = results(project / "five.results.jsonl")
    assert sorted(got) == [f"t{i}" for i in range(5)]
    for i in range(5):
        line = got[f"t{i}"]
        assert line == {"id": f"t{i}", "thread": f"five:t{i}", "status": "answered", "result": "first answer",
                        "steps": 1, "tokens": 0, "error": None}
        assert inputs_of(f"five:t{i}") == [f"Tell me about topic {i}."]  # (the task's vars were put in)
    assert "5 answered" in ran.stdout


def test_a_rerun_skips_the_tasks_the_log_says_are_finished(project: Path) -> None:
    tasks = write_tasks(project / "five.jsonl", FIVE)
    assert batch("--tasks", str(tasks)).exit_code == 0
    (project / "five.results.jsonl").unlink()  # (skipping is read from the store, not from this file)
    again = batch("--tasks", str(tasks), "--batch", "five")
    assert again.exit_code == 0, again.stderr
    assert "(5 finished before)" in again.stdout
    assert len(results(project / "five.results.jsonl")) == 5
    assert inputs_of("five:t0") == ["Tell me about topic 0."]  # (not fed again)
    third = batch("--tasks", str(tasks))
    assert len((project / "five.results.jsonl").read_text().splitlines()) == 5  # (no line written twice)
    assert third.exit_code == 0


def test_an_unfinished_task_resumes_from_its_log_without_its_input_fed_again(project: Path) -> None:
    (project / "script.json").write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "note"}}]},
        {"text": "done"}, {"text": "done again"}]}), encoding="utf-8")
    (project / "agent.toml").write_text(BLUEPRINT + "max_steps = 1\n", encoding="utf-8")
    tasks = write_tasks(project / "one.jsonl", [{"id": "a", "inputs": ["write a note", "and another"],
                                                           "vars": {"topic": "notes"}}])
    statuses = []
    for _ in range(12):  # (one engine step per run: input, model call, tool, results, model call, input...)
        ran = batch("--tasks", str(tasks))
        assert ran.exit_code == 0, ran.stderr
        statuses.append(json.loads((project / "one.results.jsonl").read_text().splitlines()[-1])["status"])
        if statuses[-1] == "answered":
            break
    assert statuses[0] == "stopped" and statuses[-1] == "answered"
    assert inputs_of("one:a") == ["write a note", "and another"]  # (each fed once, in order)


def test_a_failing_model_fails_only_its_task(project: Path) -> None:
    tasks = write_tasks(project / "mixed.jsonl", [
        {"id": "ok", "inputs": ["one"], "vars": {"topic": "x"}},
        {"id": "too-long", "inputs": ["one", "two", "three"], "vars": {"topic": "x"}},  # (the script has 2 turns)
        {"id": "ok2", "inputs": ["one", "two"], "vars": {"topic": "x"}}])
    ran = batch("--tasks", str(tasks))
    assert ran.exit_code == 1
    got = results(project / "mixed.results.jsonl")
    assert got["ok"]["status"] == "answered" and got["ok2"]["result"] == "second answer"
    assert got["too-long"]["status"] == "failed"
    assert "scripted model has no turn 2" in got["too-long"]["error"]


@pytest.mark.parametrize(("lines", "said"), [
    (['{"id": "a", "inputs": ["x"]}', '{"id": "b", "inputs": ["x"'], "bad.jsonl:2: not JSON"),
    (['{"id": "a", "inputs": ["x"]}', "", '{"id": "a", "inputs": ["y"]}'],
     "bad.jsonl:3: task id 'a' is already the id of line 1"),
    (['{"id": "a", "inputs": ["x"], "prompt": "y"}'], "bad.jsonl:1: unknown key(s) 'prompt'"),
    (['{"id": "a", "inputs": "x"}'], 'bad.jsonl:1: "inputs" must be a non-empty list of strings'),
    (['{"id": "a/b", "inputs": ["x"]}'], "task 'a/b' of batch 'bad' makes thread id 'bad:a/b'"),
])
def test_a_bad_tasks_file_is_one_line_naming_the_line(project: Path, lines: list[str], said: str) -> None:
    (project / "bad.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ran = batch("--tasks", "bad.jsonl")
    assert ran.exit_code == 1
    assert ran.stderr.count("\n") == 1 and said in ran.stderr, ran.stderr

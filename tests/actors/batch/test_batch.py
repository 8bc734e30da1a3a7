"""``livecontext batch``: one agent (or one system of agents) per task of a tasks file, in this process
(issue 19, point 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from click.testing import CliRunner, Result

from livecontext.actors.cli import main
from livecontext.protocol.history import ModelInputEntry, UsageTotals
from livecontext.protocol.wire import make_converter
from livecontext.actors.history import HistoryState, load_state
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


def batch(*args: str, blueprint: str = "agent.toml") -> Result:
    return CliRunner().invoke(main, ["batch", blueprint, "--store", "sqlite:b.db", *args])


def results(path: Path) -> dict[str, dict[str, Any]]:
    return {obj["id"]: obj for obj in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def state_of(thread: str) -> HistoryState:
    async def go() -> HistoryState:
        async with await open_store("sqlite:b.db") as store:
            reader = await store.open_reader(thread)
            async with reader:
                return await load_state(reader, make_converter(), thread)
    return trio.run(go)


def usage_line(*threads: str) -> dict[str, Any]:
    """The ``tokens`` and ``usage`` a result line should carry: the threads' logged usage, summed."""
    total = sum((state_of(thread).usage for thread in threads), UsageTotals())
    return {"tokens": total.input_tokens + total.output_tokens,
            "usage": {"input_tokens": total.input_tokens, "cached_input_tokens": total.cached_input_tokens,
                      "output_tokens": total.output_tokens, "model_calls": total.model_calls}}


def inputs_of(thread: str) -> list[str]:
    return [e.content.live.text for e in state_of(thread).entries if isinstance(e, ModelInputEntry)]


def run_until_answered(tasks: Path, out: Path, blueprint: str = "agent.toml") -> list[str]:
    """Run a one-task batch again and again (at most 12 times) until it answers; its statuses."""
    statuses: list[str] = []
    for _ in range(12):
        ran = batch("--tasks", str(tasks), blueprint=blueprint)
        assert ran.exit_code == 0, ran.stderr
        statuses.append(json.loads(out.read_text().splitlines()[-1])["status"])
        if statuses[-1] == "answered":
            break
    return statuses


FIVE = [{"id": f"t{i}", "inputs": ["Tell me about {topic}."], "vars": {"topic": f"topic {i}"}} for i in range(5)]


def test_five_tasks_run_in_process_and_each_gets_a_result_line(project: Path) -> None:
    tasks = write_tasks(project / "five.jsonl", FIVE)
    ran = batch("--tasks", str(tasks))
    assert ran.exit_code == 0, ran.stderr
    got = results(project / "five.results.jsonl")
    assert sorted(got) == [f"t{i}" for i in range(5)]
    for i in range(5):
        line = got[f"t{i}"]
        assert line == {"id": f"t{i}", "thread": f"five/t{i}", "status": "answered", "result": "first answer",
                        "steps": 1, **usage_line(f"five/t{i}"), "error": None}
        # (the scripted model reports no usage: the rendered counts are recorded, never 0)
        assert line["usage"]["model_calls"] == 1 and line["usage"]["input_tokens"] > 0
        assert line["usage"]["output_tokens"] > 0 and line["usage"]["cached_input_tokens"] == 0
        assert inputs_of(f"five/t{i}") == [f"Tell me about topic {i}."]  # (the task's vars were put in)
    assert "5 answered" in ran.stdout


def test_a_rerun_skips_the_tasks_the_log_says_are_finished(project: Path) -> None:
    tasks = write_tasks(project / "five.jsonl", FIVE)
    assert batch("--tasks", str(tasks)).exit_code == 0
    (project / "five.results.jsonl").unlink()  # (skipping is read from the store, not from this file)
    again = batch("--tasks", str(tasks), "--batch", "five")
    assert again.exit_code == 0, again.stderr
    assert "(5 finished before)" in again.stdout
    assert len(results(project / "five.results.jsonl")) == 5
    assert inputs_of("five/t0") == ["Tell me about topic 0."]  # (not fed again)
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
    # (one engine step per run: input, model call, tool, results, model call, input...)
    statuses = run_until_answered(tasks, project / "one.results.jsonl")
    assert statuses[0] == "stopped" and statuses[-1] == "answered"
    assert inputs_of("one/a") == ["write a note", "and another"]  # (each fed once, in order)


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
    (['{"id": "a/b", "inputs": ["x"]}'], "task 'a/b' of batch 'bad' makes thread id 'bad/a/b'"),
    (['{"id": "a", "inputs": {"lead": ["x"]}}'], "task 'a' (line 1) gives inputs by agent, but agent.toml is one agent"),
])
def test_a_bad_tasks_file_is_one_line_naming_the_line(project: Path, lines: list[str], said: str) -> None:
    (project / "bad.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ran = batch("--tasks", "bad.jsonl")
    assert ran.exit_code == 1
    assert ran.stderr.count("\n") == 1 and said in ran.stderr, ran.stderr


def test_a_placeholder_a_task_gives_no_var_for_is_said_in_one_line_and_left_as_written(project: Path) -> None:
    write_tasks(project / "vars.jsonl", [{"id": "t0", "inputs": ["Tell me about {topic}."], "vars": {"topic": "owls"}},
                                         {"id": "t1", "inputs": ["Tell me about {topic}."]},
                                         {"id": "t2", "inputs": ['Answer in JSON: {"a": 1}'], "vars": {"topic": "x"}}])
    ran = batch("--tasks", "vars.jsonl")
    assert ran.exit_code == 0, ran.stderr
    notes = [line for line in ran.stderr.splitlines() if line.startswith("livecontext: note: {")]
    assert notes == ['livecontext: note: {topic} is given by no var of 1 task(s) (t1): it stays as written in what '
                     'their agents read; give "topic" in their "vars" (or ignore this if the braces are meant)']
    assert inputs_of("vars/t1") == ["Tell me about {topic}."] and inputs_of("vars/t0") == ["Tell me about owls."]


def test_results_into_a_missing_folder_are_one_line_before_any_task_runs(project: Path) -> None:
    write_tasks(project / "five.jsonl", [{"id": "t0", "inputs": ["x"], "vars": {"topic": "owls"}}])
    ran = batch("--tasks", "five.jsonl", "--out", str(project / "no" / "r.jsonl"))
    assert ran.exit_code == 1
    assert ran.stderr == (f"livecontext: error: --out {project / 'no' / 'r.jsonl'}: the folder {project / 'no'} "
                          f"does not exist; make it first (mkdir -p {project / 'no'}) or write the results elsewhere\n")
    assert not (project / "b.db").exists()  # (no task ran)



def test_results_where_a_file_stands_in_place_of_the_folder_are_one_line_before_any_task_runs(project: Path) -> None:
    # (a file where the folder should be stops root as well as anyone: a read-only folder would not)
    (project / "taken").write_text("not a folder", encoding="utf-8")
    write_tasks(project / "five.jsonl", [{"id": "t0", "inputs": ["x"], "vars": {"topic": "owls"}}])
    ran = batch("--tasks", "five.jsonl", "--out", str(project / "taken" / "r.jsonl"))
    assert ran.exit_code == 1
    assert ran.stderr == (f"livecontext: error: --out {project / 'taken' / 'r.jsonl'}: {project / 'taken'} is a "
                          "file, not a folder; write the results elsewhere (or move that file away)\n")
    assert not (project / "b.db").exists()  # (no task ran)
    assert (project / "taken").read_text(encoding="utf-8") == "not a folder"


def test_results_into_a_folder_name_are_one_line_before_any_task_runs(project: Path) -> None:
    (project / "out").mkdir()
    write_tasks(project / "five.jsonl", [{"id": "t0", "inputs": ["x"], "vars": {"topic": "owls"}}])
    ran = batch("--tasks", "five.jsonl", "--out", "out")
    assert (ran.exit_code, ran.stderr) == (1, "livecontext: error: --out out: it is a folder; name a file in it "
                                              "(such as its results.jsonl)\n")
    assert not (project / "b.db").exists()


def test_a_rerun_of_a_failed_task_keeps_one_line_per_task_the_latest(project: Path) -> None:
    tasks = write_tasks(project / "mixed.jsonl", [
        {"id": "ok", "inputs": ["one"], "vars": {"topic": "x"}},
        {"id": "too-long", "inputs": ["one", "two", "three"], "vars": {"topic": "x"}},  # (the script has 2 turns)
        {"id": "ok2", "inputs": ["one", "two"], "vars": {"topic": "x"}}])
    out = project / "mixed.results.jsonl"
    assert batch("--tasks", str(tasks)).exit_code == 1
    first = out.read_text(encoding="utf-8").splitlines()
    with out.open("a", encoding="utf-8") as f:  # (a line of a task of another tasks file, and one cut short)
        f.write('{"id": "elsewhere", "status": "answered"}\n{"id": "torn", "sta')
    (project / "script.json").write_text(json.dumps({"turns": [*SCRIPT["turns"], {"text": "third answer"}]}),
                                         encoding="utf-8")
    again = batch("--tasks", str(tasks))
    assert again.exit_code == 0, again.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    order = [json.loads(line)["id"] for line in first]
    assert [line["id"] for line in lines] == [*order, "elsewhere"]  # (one line each, in the order they came)
    got = {line["id"]: line for line in lines}
    assert got["too-long"]["status"] == "answered" and got["too-long"]["result"] == "third answer"  # (the latest)
    for raw in first:  # (the tasks that did not run again: their lines as they were)
        if json.loads(raw)["id"] != "too-long":
            assert raw in out.read_text(encoding="utf-8").splitlines()
    assert got["elsewhere"] == {"id": "elsewhere", "status": "answered"}
    assert not list(project.glob(".mixed.results.jsonl*"))  # (no file left over from the rewrite)


# -- a system of agents per task ------------------------------------------------------------------

SYSTEM = '''
system = "team"

[[agents]]
name = "lead"
model = "scripted:lead.json"
system_prompt = "You lead the work on {topic}."

[[agents]]
name = "helper"
model = "scripted:helper.json"
system_prompt = "You know {topic}."
'''
ASK = {"tool_calls": [{"name": "ask_agent", "arguments": {"to": "helper", "question": "What do you know?"}}]}
THREE = [{"id": f"t{i}", "inputs": ["Tell me about {topic}."], "vars": {"topic": f"topic {i}"}} for i in range(3)]


@pytest.fixture
def team(project: Path) -> Path:
    (project / "lead.json").write_text(json.dumps({"turns": [ASK, {"text": "lead answer"}]}), encoding="utf-8")
    (project / "helper.json").write_text(json.dumps({"turns": [{"text": "helper facts"}]}), encoding="utf-8")
    (project / "team.toml").write_text(SYSTEM, encoding="utf-8")
    return project


def test_a_system_blueprint_runs_one_system_per_task_named_batch_slash_task(team: Path) -> None:
    ran = batch("--tasks", str(write_tasks(team / "trio.jsonl", THREE)), blueprint="team.toml")
    assert ran.exit_code == 0, ran.stderr
    got = results(team / "trio.results.jsonl")
    for i in range(3):
        # (status and result are the lead's, who got the input; steps count both agents' model calls)
        assert got[f"t{i}"] == {"id": f"t{i}", "thread": f"trio/t{i}.lead", "status": "answered",
                                "result": "lead answer", "steps": 3,
                                **usage_line(f"trio/t{i}.lead", f"trio/t{i}.helper"), "error": None}
        assert got[f"t{i}"]["usage"]["model_calls"] == 3  # (both agents' calls)
        assert inputs_of(f"trio/t{i}.lead") == [f"Tell me about topic {i}."]
        assert state_of(f"trio/t{i}.lead").system_prompt.startswith(f"You lead the work on topic {i}.")
        assert state_of(f"trio/t{i}.helper").system_prompt.startswith(f"You know topic {i}.")
        assert state_of(f"trio/t{i}.helper").model_outputs == 1  # (it answered the lead's question)
    assert "3 answered" in ran.stdout


def test_a_rerun_skips_the_systems_whose_logs_say_they_are_finished(team: Path) -> None:
    tasks = write_tasks(team / "trio.jsonl", THREE)
    assert batch("--tasks", str(tasks), blueprint="team.toml").exit_code == 0
    first = results(team / "trio.results.jsonl")
    (team / "trio.results.jsonl").unlink()  # (skipping is read from the store, not from this file)
    again = batch("--tasks", str(tasks), blueprint="team.toml")
    assert again.exit_code == 0, again.stderr
    assert "(3 finished before)" in again.stdout
    assert results(team / "trio.results.jsonl") == first
    assert inputs_of("trio/t0.lead") == ["Tell me about topic 0."]  # (not fed again)
    assert state_of("trio/t0.helper").model_outputs == 1  # (not asked again)


def test_an_unfinished_system_resumes_from_its_logs_each_input_fed_once(team: Path) -> None:
    (team / "team.toml").write_text(SYSTEM.replace('name = "lead"\n', 'name = "lead"\nmax_steps = 1\n'),
                                    encoding="utf-8")
    tasks = write_tasks(team / "one.jsonl", [{"id": "a", "inputs": ["first", "second"], "vars": {"topic": "x"}}])
    (team / "lead.json").write_text(json.dumps({"turns": [ASK, {"text": "got it"}, {"text": "lead answer"}]}),
                                    encoding="utf-8")
    statuses = run_until_answered(tasks, team / "one.results.jsonl", blueprint="team.toml")  # (a lead step a run)
    assert statuses[0] == "stopped" and statuses[-1] == "answered"
    assert inputs_of("one/a.lead") == ["first", "second"]  # (each fed once, in order)
    assert results(team / "one.results.jsonl")["a"]["result"] == "lead answer"


def test_a_task_may_give_its_inputs_to_the_agents_it_names(team: Path) -> None:
    tasks = write_tasks(team / "to.jsonl", [{"id": "h", "inputs": {"helper": ["Hi, {topic}."]}, "vars": {"topic": "y"}}])
    ran = batch("--tasks", str(tasks), blueprint="team.toml")
    assert ran.exit_code == 0, ran.stderr
    assert results(team / "to.results.jsonl")["h"] == {  # (the helper got the input: its status is the task's)
        "id": "h", "thread": "to/h.helper", "status": "answered", "result": "helper facts", "steps": 1,
        **usage_line("to/h.helper", "to/h.lead"), "error": None}
    assert inputs_of("to/h.helper") == ["Hi, y."] and inputs_of("to/h.lead") == []


@pytest.mark.parametrize(("task", "args", "said"), [
    ({"id": "a", "inputs": {"nobody": ["x"]}}, (), "task 'a' (line 1): no agent named 'nobody' in system 'team'"),
    ({"id": "a:b", "inputs": ["x"]}, (), "task 'a:b' (line 1): invalid system name 'bad/a:b'"),
])
def test_a_system_task_that_cannot_run_is_one_line_before_anything_runs(
        team: Path, task: dict[str, Any], args: tuple[str, ...], said: str) -> None:
    ran = batch("--tasks", str(write_tasks(team / "bad.jsonl", [task])), *args, blueprint="team.toml")
    assert ran.exit_code == 1
    assert ran.stderr.count("\n") == 1 and said in ran.stderr, ran.stderr
    assert not (team / "b.db").exists()


def test_a_system_task_whose_agent_thread_would_be_too_long_is_refused_naming_the_agent(team: Path) -> None:
    (team / "team.toml").write_text(SYSTEM.replace('name = "helper"', f'name = "{"h" * 64}"'), encoding="utf-8")
    ran = batch("--tasks", str(write_tasks(team / "bad.jsonl", [{"id": "x" * 64, "inputs": ["x"]}])),
                blueprint="team.toml")
    assert ran.exit_code == 1
    assert f"task '{'x' * 64}' (line 1), for agent {'h' * 64}, makes thread id 'bad/{'x' * 64}.{'h' * 64}': use 1-128" \
        in ran.stderr, ran.stderr


@pytest.mark.parametrize(("call", "status", "result"), [
    ({"name": "task_complete", "arguments": {"result": "3 files renamed"}}, "completed", "3 files renamed"),
    ({"name": "wait_user_response", "arguments": {"question": "Which folder?"}}, "waiting", "Which folder?"),
    ({"name": "task_abandon", "arguments": {"reason": "No such folder."}}, "abandoned", "No such folder."),
])
def test_a_task_ended_by_a_control_tool_gets_its_line_and_a_rerun_reads_the_same_line_from_its_log(
        project: Path, call: dict[str, Any], status: str, result: str) -> None:
    (project / "script.json").write_text(json.dumps({"turns": [{"text": "", "tool_calls": [call]}]}),
                                         encoding="utf-8")
    tasks = write_tasks(project / "ctl.jsonl", [{"id": "c", "inputs": ["Rename them."], "vars": {"topic": "files"}}])
    ran = batch("--tasks", str(tasks))
    assert ran.exit_code == 0, ran.stderr
    lines = (project / "ctl.results.jsonl").read_text(encoding="utf-8").splitlines()
    assert [(line["status"], line["result"], line["steps"]) for line in map(json.loads, lines)] == [(status, result, 1)]
    again = batch("--tasks", str(tasks))  # (skipped: its line made again from its log, the same, not written twice)
    assert again.exit_code == 0, again.stderr
    assert (project / "ctl.results.jsonl").read_text(encoding="utf-8").splitlines() == lines


def test_a_task_that_waits_for_approval_says_so_and_a_run_after_the_decision_carries_it_on(project: Path) -> None:
    (project / "script.json").write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "note"}}]},
        {"text": "noted"}]}), encoding="utf-8")
    (project / "agent.toml").write_text(BLUEPRINT + '[[apps]]\nuse = "notebook"\napproval = ["notebook_replace"]\n',
                                        encoding="utf-8")
    tasks = write_tasks(project / "one.jsonl", [{"id": "a", "inputs": ["write a note"], "vars": {"topic": "notes"}}])
    assert batch("--tasks", str(tasks)).exit_code == 0
    line = json.loads((project / "one.results.jsonl").read_text().splitlines()[-1])
    assert (line["status"], line["result"]) == ("waiting_approval", "approval of notebook_replace call call_0_0")
    decided = CliRunner().invoke(main, ["approve", "--store", "sqlite:b.db", "--thread", "one/a", "call_0_0", "--no-run"])
    assert decided.exit_code == 0, decided.stderr
    assert batch("--tasks", str(tasks)).exit_code == 0
    line = json.loads((project / "one.results.jsonl").read_text().splitlines()[-1])
    assert (line["status"], line["result"]) == ("answered", "noted")

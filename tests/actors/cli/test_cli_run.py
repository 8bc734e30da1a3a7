"""The ``livecontext`` command: ``run``, ``demo`` and ``chat``.

The main paths run the real console script, each in its own process; the processes all start
together (a module fixture) because each spends most of its time importing. The error paths
and a resumed run call the same ``main`` in-process, through click's runner.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from attrs import frozen
from click.testing import CliRunner

from livecontext.actors.cli import main

LIVECONTEXT = Path(sys.executable).with_name("livecontext")

SCRIPT = {"turns": [
    {"text": "Noting it.", "tool_calls": [
        {"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "- milk"}}]},
    {"text": "Noted."},
    {"text": "Still noted."},
    {"text": "Resumed."},
]}


@frozen
class Ran:
    args: tuple[str, ...]
    code: int
    out: str
    err: str


def _commands(tmp: Path) -> dict[str, list[str]]:
    script = tmp / "script.json"
    script.write_text(json.dumps(SCRIPT))
    scripted = f"scripted:{script}"
    memory = ["--store", "memory:"]
    return {
        "json": ["run", "--store", f"sqlite:{tmp / 'store.db'}", "--model", scripted, "--input", "buy milk",
                 "--input", "and?", "--json", "--events", str(tmp / "events.jsonl"), "--system", "Be brief."],
        "text": ["run", *memory, "--model", scripted, "--input", "buy milk", "--max-steps", "2"],
        "demo": ["demo", *memory, "--thread", "demo-test"],
        "chat": ["chat", *memory],
    }


STDIN = {"chat": "first words\nsecond words\n"}
"""What is typed into a command (piped, so it all arrives at once)."""


def _start(args: list[str], tmp: Path, env: dict[str, str], stdin: str = "") -> subprocess.Popen[str]:
    typed = tmp / f"stdin-{len(list(tmp.glob('stdin-*')))}.txt"
    typed.write_text(stdin)
    with typed.open() as source:
        return subprocess.Popen([str(LIVECONTEXT), *args], stdin=source, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, cwd=tmp)


def _wait(proc: subprocess.Popen[str]) -> Ran:
    out, err = proc.communicate(timeout=60)
    return Ran(tuple(str(a) for a in proc.args), proc.returncode, out, err)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Ran]]:
    tmp = tmp_path_factory.mktemp("cli")
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("LIVECONTEXT_STORE", None)
    procs = {name: _start(args, tmp, env, STDIN.get(name, "")) for name, args in _commands(tmp).items()}
    results = {name: _wait(proc) for name, proc in procs.items()}
    results["events"] = Ran((), 0, (tmp / "events.jsonl").read_text(), "")
    # a second run of the same thread resumes it from the first one's store
    results["resume"] = _invoke(["run", "--store", f"sqlite:{tmp / 'store.db'}", "--model",
                                 f"scripted:{tmp / 'script.json'}", "--input", "more", "--json"])
    yield results


def _invoke(args: list[str]) -> Ran:
    """Run ``livecontext ARGS`` in this process."""
    result = CliRunner().invoke(main, args, env={"LIVECONTEXT_STORE": None, "COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(tuple(args), result.exit_code, result.stdout, result.stderr)


def _json(run: Ran) -> dict[str, object]:
    assert run.code == 0, run.err
    lines = run.out.strip().splitlines()
    assert len(lines) == 1, run.out
    data = json.loads(lines[0])
    assert isinstance(data, dict)
    return data


def test_run_json_prints_the_thread_its_state_its_entries_and_the_notebook(ran: dict[str, Ran]) -> None:
    data = _json(ran["json"])
    assert data["thread"] == "main"
    assert data["state"] == "WaitingInput"
    assert data["apps"] == {"notebook": "- milk"}
    entries = data["entries"]
    assert isinstance(entries, list)
    assert [e["kind"] for e in entries] == ["model_input", "model_output", "tool_results", "model_output",
                                            "model_input", "model_output"]
    assert [e["id"] for e in entries] == ["e1", "e2", "e3", "e4", "e5", "e6"]
    for e in entries:
        assert e["revision"] == 1
        assert e["author"] == "engine/main"
        assert e["created_at"].endswith("+00:00")
        assert set(e["levels"]) == {"live", "recent", "gist"}
    assert entries[0]["levels"]["live"] == "buy milk"
    assert entries[1]["tool_calls"] == [{"id": "call_0_0", "name": "notebook_replace",
                                         "arguments": '{"old_text": "", "new_text": "- milk"}'}]
    (result,) = entries[2]["results"]
    assert result == {"call_id": "call_0_0", "name": "notebook_replace", "status": "ok", "content": "- milk"}
    assert entries[5]["levels"]["live"] == "Still noted."


def test_run_events_writes_one_json_line_per_engine_event(ran: dict[str, Ran]) -> None:
    events = [json.loads(line) for line in ran["events"].out.splitlines()]
    assert all("type" in e for e in events)
    transitions = [(e["from"], e["to"]) for e in events if e["type"] == "StateTransition"]
    assert transitions == [
        ("WaitingInput", "PendingInput"), ("PendingInput", "WaitingToolResults"),
        ("WaitingToolResults", "ToolResultsReady"), ("ToolResultsReady", "PendingToolResults"),
        ("PendingToolResults", "WaitingInput"), ("WaitingInput", "PendingInput"),
        ("PendingInput", "WaitingInput"),
    ]
    types = [e["type"] for e in events]
    for kind in ("WaitingInput", "BeforeModelCall", "AfterModelCall", "BeforeToolExecute", "AfterToolExecute"):
        assert kind in types
    assert types[-1] == "WaitingInput"  # the last pull found no input


def test_run_prints_a_transcript_and_max_steps_stops_early(ran: dict[str, Ran]) -> None:
    run = ran["text"]
    assert run.code == 0, run.err
    assert "engine/main" in run.out and "WaitingInput -> PendingInput" in run.out
    assert "model call #0" in run.out
    assert "runs notebook_replace" not in run.out  # the third step never ran
    assert "thread main is WaitingToolResults after 2 steps (max_steps)" in run.out


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "script.json: no such file; check the path after 'scripted:'"),
        ('{"turns": [{"text": "hi", "fail": {"error": "oops"}}]}',
         "script.json: turns[0].fail.error must be one of rate_limit, server, timeout, got 'oops'"),
        ('{"turns": [', "script.json: not valid JSON: Expecting value at line 1, column 12"),
    ],
    ids=["missing", "malformed", "not-json"],
)
def test_a_missing_or_malformed_script_is_one_line_naming_the_file(tmp_path: Path, content: str | None,
                                                                   problem: str) -> None:
    script = tmp_path / "script.json"
    if content is not None:
        script.write_text(content)
    run = _invoke(["run", "--store", "memory:", "--model", f"scripted:{script}", "--input", "x"])
    assert run.code != 0
    assert run.out == ""
    (line,) = run.err.strip().splitlines()
    assert line == f"livecontext: error: invalid model script {tmp_path}/{problem}"


def test_a_failing_model_step_exits_non_zero_with_the_reason() -> None:
    run = _invoke(["run", "--store", "memory:", "--input", "x", "--budget", "5"])
    assert run.code == 1
    last = run.err.strip().splitlines()[-1]
    assert last.startswith("livecontext: error: failed: ")
    assert "token budget 5 is too small" in last and "raise --budget" in last


def test_a_second_run_resumes_the_thread_from_a_sqlite_store(ran: dict[str, Ran]) -> None:
    resumed = _json(ran["resume"])
    entries = resumed["entries"]
    assert isinstance(entries, list) and len(entries) == 8
    # the scripted model answers by the thread's own count of outputs: turn 3 after a restart
    assert [e["levels"]["live"] for e in entries[6:]] == ["more", "Resumed."]
    assert resumed["apps"] == {"notebook": "- milk"}


def test_demo_runs_offline_and_shows_a_notification_a_fold_and_the_notebook(ran: dict[str, Ran]) -> None:
    run = ran["demo"]
    out = " ".join(run.out.split())  # the console wraps long lines
    assert run.code == 0, run.err
    assert "notifies (n1): the last 3 tool calls failed the same way" in out
    assert "folded old steps into the recap" in out
    assert "notebook (committed state)" in out
    assert "- when: Saturday 12:30, at the lake" in out
    assert "the recap standing for the folded steps" in out
    assert "Thread demo-test is WaitingInput" in out


def test_chat_answers_every_piped_line_before_it_ends(ran: dict[str, Ran]) -> None:
    run = ran["chat"]
    assert run.code == 0, run.err
    assert "model: echo: first words" in run.out
    assert "model: echo: second words" in run.out
    assert run.out.index("first words") < run.out.index("second words")


def test_demo_keeps_every_context_it_sends_under_its_budget(ran: dict[str, Ran]) -> None:
    import re

    out = " ".join(ran["demo"].out.split())
    sent = [int(n) for n in re.findall(r"(\d+) tokens \(budget 1500\)", out)]
    assert len(sent) == 10  # one per scripted turn
    assert max(sent) <= 1500
    largest = re.search(r"largest context sent to the model was (\d+) tokens of the 1500-token budget", out)
    assert largest is not None and int(largest.group(1)) == max(sent)


def test_pins_are_fed_first_as_critical_entries_and_the_task_is_pinned_unless_told_not_to(
        tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "a"}, {"text": "b"}, {"text": "c"}]}))
    base = ["run", "--store", "memory:", "--model", f"scripted:{script}", "--json"]
    pinned = _json(_invoke([*base, "--input", "the task", "--input", "more", "--pin", "never forget this"]))
    inputs = [(e["levels"]["live"], e["retention"]) for e in pinned["entries"] if e["kind"] == "model_input"]  # type: ignore[union-attr, index]
    assert inputs == [("never forget this", "critical"), ("the task", "compressible"), ("more", "compressible")]
    plain = _json(_invoke([*base, "--input", "the task", "--input", "more"]))
    assert [e["retention"] for e in plain["entries"] if e["kind"] == "model_input"] == ["critical", "compressible"]  # type: ignore[union-attr, index]
    unpinned = _json(_invoke([*base, "--input", "the task", "--no-pin-task"]))
    assert [e["retention"] for e in unpinned["entries"]] == ["compressible", "compressible"]  # type: ignore[union-attr, index]


def test_a_blueprint_with_a_recap_and_no_limits_folds_by_limits_derived_from_its_budget(tmp_path: Path) -> None:
    turns = [{"text": f"Step {k}: " + "a long thought about the plan. " * 20} for k in range(30)]
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": turns}))
    blueprint = tmp_path / "bp.toml"
    blueprint.write_text(f'model = "scripted:{script}"\nbudget = 1500\n'
                         f'inputs = {json.dumps([f"question {k}" for k in range(30)])}\n'
                         '[apps]\nnotebook = false\n[recap]\nwindow = 2\nbatch = 2\n')
    data = _json(_invoke(["run", str(blueprint), "--store", "memory:", "--json"]))
    entries = data["entries"]
    assert isinstance(entries, list)
    assert sum(e["kind"] == "recap" for e in entries) >= 1
    assert sum(e["folded"] for e in entries) > 10
    assert entries[0]["retention"] == "critical" and not entries[0]["folded"]


def test_an_input_given_after_a_max_steps_stop_is_fed_once_the_step_in_flight_is_done(tmp_path: Path) -> None:
    store = ["--store", f"sqlite:{tmp_path / 'm.db'}"]
    stopped = _invoke(["run", *store, "--input", "first", "--max-steps", "1"])
    assert stopped.code == 0 and "PendingInput" in stopped.out
    resumed = _invoke(["run", *store, "--input", "second"])
    assert resumed.code == 0 and "not fed" not in resumed.err
    again = _invoke(["run", *store, "--input", "first", "--max-steps", "1"])
    rerun = _invoke(["run", *store, "--input", "first"])  # the command that stopped, run again
    assert again.code == rerun.code == 0
    assert ("after it recorded the input 'first'; it resumes where it stopped, and the inputs given (the same "
            "again) are not fed twice") in " ".join(rerun.err.split())
    history = _json(_invoke(["history", *store, "--thread", "main", "--json"]))
    assert [e["levels"]["live"] for e in history["entries"]] == [  # type: ignore[index, union-attr]
        "first", "echo: first", "second", "echo: second", "first", "echo: first"]


def test_a_reader_that_stops_reading_ends_the_command_quietly_as_sigpipe_does(tmp_path: Path) -> None:
    store = ["--store", f"sqlite:{tmp_path / 'p.db'}"]
    assert _invoke(["run", *store, "--input", "hello"]).code == 0
    for command in (["audit", *store, "--thread", "main"], ["history", *store, "--thread", "main"]):
        proc = subprocess.Popen([str(LIVECONTEXT), *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "LIVECONTEXT_STORE": ""})
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # (as `| head -0` would: every write finds the pipe closed)
        err = proc.stderr.read()
        assert (proc.wait(), err) == (141, ""), command

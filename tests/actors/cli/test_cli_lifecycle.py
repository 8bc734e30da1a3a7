"""The task lifecycle from the command line: the status ``run``, ``state`` and ``threads`` print,
and ``--no-lifecycle`` / ``lifecycle = false``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any



from tests.support.command import in_process, in_process_json

ASK = {"text": "", "tool_calls": [{"name": "wait_user_response", "arguments": {"question": "Which folder?"}}]}
DONE = {"text": "", "tool_calls": [{"name": "task_complete", "arguments": {"result": "Cleaned /tmp."}}]}


lc = in_process
ok_json = in_process_json


def script(tmp_path: Path, *turns: dict[str, Any]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": list(turns)}), encoding="utf-8")
    return f"scripted:{path}"


def test_run_state_and_threads_print_the_status_with_its_question_then_its_result(tmp_path: Path) -> None:
    store = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    model = script(tmp_path, ASK, DONE, {"text": "never said"})
    asked = ok_json("run", *store, "--model", model, "--input", "clean up", "--json")
    assert (asked["state"], asked["status"], asked["question"]) == ("WaitingInput", "waiting_user", "Which folder?")
    state = ok_json("state", *store, "--json")
    assert (state["status"], state["question"]) == ("waiting_user", "Which folder?")
    done = ok_json("run", *store, "--model", model, "--input", "/tmp", "--json")
    assert (done["status"], done["result"]) == ("completed", "Cleaned /tmp.")
    assert "question" not in done
    again = ok_json("run", *store, "--model", model, "--json")  # no new input: no step
    assert again["entries"] == done["entries"] and again["status"] == "completed"
    assert ok_json("state", *store, "--json")["result"] == "Cleaned /tmp."
    (row,) = [json.loads(line) for line in lc("threads", *store[:2], "--json")[1].splitlines()]
    assert (row["thread"], row["status"]) == ("t", "completed")
    audit = [json.loads(line) for line in lc("audit", *store, "--json")[1].splitlines()]
    effects = [r["summary"] for r in audit if r["kind"] == "ToolResultRecorded"]
    assert effects == ["wait_user_response call_0_0 ok: asked the user: Which folder? + effect UserQuestionAsked",
                       "task_complete call_1_0 ok: task complete: Cleaned /tmp. + effect TaskCompleted"]


ABANDON = {"text": "", "tool_calls": [{"name": "task_abandon", "arguments": {"reason": "There is no /nope."}}]}
OUTPUT = {"text": "", "tool_calls": [{"name": "output", "arguments": {"text": "Looked at 2 of 4 folders."}}]}


def test_run_state_threads_and_audit_show_an_abandoned_task_and_its_reason(tmp_path: Path) -> None:
    store = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    model = script(tmp_path, ABANDON, DONE)
    gave_up = ok_json("run", *store, "--model", model, "--input", "clean /nope", "--json")
    assert (gave_up["state"], gave_up["status"], gave_up["reason"]) == ("WaitingInput", "abandoned", "There is no /nope.")
    again = ok_json("run", *store, "--model", model, "--json")  # no new input: no step
    assert again["entries"] == gave_up["entries"] and again["status"] == "abandoned"
    state = ok_json("state", *store, "--json")
    assert (state["status"], state["reason"]) == ("abandoned", "There is no /nope.")
    (row,) = [json.loads(line) for line in lc("threads", *store[:2], "--json")[1].splitlines()]
    assert (row["thread"], row["status"]) == ("t", "abandoned")
    audit = [json.loads(line) for line in lc("audit", *store, "--json")[1].splitlines()]
    effects = [r["summary"] for r in audit if r["kind"] == "ToolResultRecorded"]
    assert effects == ["task_abandon call_0_0 ok: task abandoned: There is no /nope. + effect TaskAbandoned"]
    done = ok_json("run", *store, "--model", model, "--input", "clean /tmp then", "--json")  # a new task
    assert (done["status"], done["result"]) == ("completed", "Cleaned /tmp.")


def test_runs_transcript_shows_an_output_when_it_is_shown_and_the_run_goes_on(tmp_path: Path) -> None:
    store = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    code, out, err = lc("run", *store, "--model", script(tmp_path, OUTPUT, DONE), "--input", "clean up")
    assert code == 0, err
    lines = out.splitlines()
    shown = next(i for i, line in enumerate(lines) if "output: Looked at 2 of 4 folders." in line)
    second_call = [i for i, line in enumerate(lines) if "model call #" in line][1]
    assert shown < second_call
    assert any("task complete: Cleaned /tmp." in line for line in lines[second_call:])


def test_a_failed_run_leaves_status_failed_with_its_error(tmp_path: Path) -> None:
    store = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    code, _, err = lc("run", *store, "--model", "echo", "--budget", "5", "--input", "hello")
    assert code == 1 and "token budget 5 is too small" in err
    state = ok_json("state", *store, "--json")
    assert state["status"] == "failed" and "token budget 5 is too small" in state["error"]
    audit = [json.loads(line) for line in lc("audit", *store, "--json")[1].splitlines()]
    assert audit[-1]["kind"] == "StepFailed" and audit[-1]["summary"] == f"step failed: {state['error']}"


def test_no_lifecycle_offers_no_control_tool_and_a_call_to_one_fails_as_unknown(tmp_path: Path) -> None:
    store = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    model = script(tmp_path, DONE, {"text": "ok, carrying on"})
    data = ok_json("run", *store, "--model", model, "--input", "go", "--no-lifecycle", "--json")
    assert data["status"] == "waiting_user"
    (result,) = data["entries"][2]["results"]
    assert result["status"] == "failed" and result["content"].startswith("unknown tool 'task_complete'")
    tools = [t["name"] for t in ok_json("render", *store)["tools"]]
    assert tools == ["notebook_replace", "notebook_replace_span"]


def test_a_blueprint_turns_the_lifecycle_off_and_the_flag_wins_over_the_file(tmp_path: Path) -> None:
    model = script(tmp_path, DONE, {"text": "ok"})
    off = tmp_path / "off.toml"
    off.write_text(f'model = "{model}"\nlifecycle = false\n', encoding="utf-8")
    on = tmp_path / "on.toml"
    on.write_text(f'model = "{model}"\nlifecycle = true\n', encoding="utf-8")
    store = f"sqlite:{tmp_path / 'db'}"
    from_file = ok_json("run", str(off), "--store", store, "--thread", "a", "--input", "go", "--json")
    assert from_file["status"] == "waiting_user"
    from_flag = ok_json("run", str(on), "--store", store, "--thread", "b", "--input", "go", "--no-lifecycle", "--json")
    assert from_flag["status"] == "waiting_user"
    kept = ok_json("run", str(on), "--store", store, "--thread", "c", "--input", "go", "--json")
    assert (kept["status"], kept["result"]) == ("completed", "Cleaned /tmp.")


def test_a_lifecycle_key_of_the_wrong_type_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('model = "echo"\nlifecycle = "no"\n', encoding="utf-8")
    code, out, err = lc("run", str(bad), "--store", "memory:")
    assert (code, out) == (1, "")
    assert err == f"livecontext: error: {bad}:2: lifecycle must be true or false, got a string 'no'\n"

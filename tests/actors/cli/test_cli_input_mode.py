"""``run --input-mode``: an input that interrupts a thread stopped in the middle of its work,
terminates its task, or is recorded silently; ``audit`` shows who did it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any



from tests.support.command import in_process, in_process_json

TWO_CALLS = {"text": "", "tool_calls": [{"name": "look", "arguments": {}}, {"name": "touch", "arguments": {}}]}


lc = in_process
ok_json = in_process_json


def audit(store: list[str]) -> list[dict[str, Any]]:
    code, out, err = lc("audit", *store, "--json")
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


def script(tmp_path: Path, *turns: dict[str, Any]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": list(turns)}), encoding="utf-8")
    return f"scripted:{path}"


def test_an_interrupting_input_is_taken_before_a_stopped_step_ends(tmp_path: Path) -> None:
    store = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    model = script(tmp_path, TWO_CALLS, {"text": "Changed plans."})
    ok_json("run", *store, "--model", model, "--input", "tidy up", "--max-steps", "3", "--json")
    assert ok_json("state", *store, "--json")["state"] == "WaitingToolResults"  # one call left
    done = ok_json("run", *store, "--model", model, "--input", "stop, list only", "--input-mode", "interrupt", "--json")
    kinds = [(e["kind"], e["levels"]["live"]) for e in done["entries"]]
    assert [k for k, _ in kinds] == ["model_input", "model_output", "tool_results", "model_input", "model_output"]
    results = [(r["name"], r["status"], r["content"]) for r in done["entries"][2]["results"]]
    assert results[1] == ("touch", "skipped", "not run: client/feed-t interrupted the step")
    assert kinds[3][1].startswith("stop, list only") and kinds[4][1] == "Changed plans."


def test_a_terminating_input_ends_the_task_and_audit_shows_who(tmp_path: Path) -> None:
    store = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    model = script(tmp_path, TWO_CALLS, {"text": "Next task done."})
    ok_json("run", *store, "--model", model, "--input", "tidy up", "--max-steps", "2", "--json")
    ended = ok_json("run", *store, "--model", model, "--input", "wrong folder", "--input-mode", "terminate", "--json")
    assert (ended["state"], ended["status"], ended["reason"]) == ("WaitingInput", "terminated", "wrong folder")
    assert ended["by"].startswith("client/")
    assert len(ended["entries"]) == 3  # the calls recorded as not run; no model call after
    again = ok_json("run", *store, "--model", model, "--json")  # no new input: no step
    assert again["status"] == "terminated" and again["entries"] == ended["entries"]
    (record,) = [r for r in audit(store) if r["kind"] == "TaskTerminated"]
    assert record["sender"] == "engine/t"
    assert record["summary"] == f"task terminated by {ended['by']}: wrong folder"
    code, readable, _ = lc("audit", *store)
    assert code == 0 and f"task terminated by {ended['by']}: wrong folder" in readable
    assert ok_json("state", *store, "--json")["status"] == "terminated"
    new = ok_json("run", *store, "--model", model, "--input", "tidy the other one", "--json")  # a new task
    assert (new["status"], new["entries"][-1]["levels"]["live"]) == ("waiting_user", "Next task done.")


def test_a_silent_input_is_recorded_and_takes_no_step(tmp_path: Path) -> None:
    store = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    model = script(tmp_path, {"text": "Hello."}, {"text": "Noted."})
    first = ok_json("run", *store, "--model", model, "--input", "hi", "--json")
    quiet = ok_json("run", *store, "--model", model, "--input", "the build is green", "--input-mode", "silent", "--json")
    assert quiet["entries"] == first["entries"] and quiet["usage"]["model_calls"] == 1
    (note,) = [r for r in audit(store) if r["kind"] == "NotificationPosted"]
    assert note["sender"] == "input/t" and "silent input from client/" in note["summary"]
    assert note["summary"].endswith("the build is green")
    later = ok_json("run", *store, "--model", model, "--input", "news?", "--json")
    assert "the build is green" in later["entries"][-2]["levels"]["live"]  # it rode on the next input


def test_input_mode_is_one_of_the_four(tmp_path: Path) -> None:
    code, _, err = lc("run", "--input", "x", "--input-mode", "loud")
    assert code == 2 and "'loud' is not one of 'queue', 'interrupt', 'terminate', 'silent'" in err

"""Approvals from the command line: ``run`` stops for approval and says how to decide,
``state`` lists the calls waiting, ``approve`` (with ``--arguments``) and ``deny`` (with
``--reason``) decide and carry the thread on, ``audit`` shows who decided, ``chat`` asks per
call; and each mistake is one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import approval_tools as at
from tests.support.command import LIVECONTEXT, cli_env, in_process

TOOL = ["--tool", "tests.support.approval_tools:pay", "--tool", "tests.support.approval_tools:look"]


def lc(*args: str) -> tuple[int, str, str]:
    """Run ``livecontext ARGS`` in this process: exit code, stdout, stderr."""
    return in_process(*args, columns=250, USER="ada")


def ok_json(*args: str) -> Any:
    code, out, err = lc(*args)
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def script(tmp_path: Path, *turns: dict[str, Any]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": list(turns)}), encoding="utf-8")
    return f"scripted:{path}"


def pays(*amounts: int) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": "pay", "arguments": {"amount": a}} for a in amounts]}


@pytest.fixture(autouse=True)
def _no_runs() -> None:
    at.RUNS.clear()


@pytest.fixture
def waiting(tmp_path: Path) -> list[str]:
    """A thread stopped waiting for approval of pay(5) (call_0_0); its store and thread flags."""
    where = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    model = script(tmp_path, pays(5), {"text": "all done"})
    code, out, err = lc("run", *where, "--model", model, *TOOL, "--input", "pay 5")
    assert code == 0, err  # a stop for approval is no failure, as a stop for input is none
    assert "thread t is WaitingToolResults after" in out and "waiting_approval: approval of pay call call_0_0" in out
    assert (f"pay({{\"amount\": 5}}) call call_0_0 waits for approval: livecontext approve --thread t --store "
            f"sqlite:{tmp_path / 'db'} call_0_0") in " ".join(out.split())
    assert at.RUNS == []
    return where


def test_state_lists_the_calls_waiting_with_their_ids_and_the_command_to_decide(waiting: list[str]) -> None:
    (state,) = ok_json("state", *waiting, "--json")
    assert state["status"] == "waiting_approval"
    assert state["waiting_on"] == "approval of pay call call_0_0"
    assert state["approvals"] == [{"id": "call_0_0", "name": "pay", "arguments": '{"amount": 5}'}]
    code, out, _ = lc("state", *waiting)
    assert code == 0 and "waits for approval: pay" in out and "livecontext approve --thread t call_0_0" in out


def test_approve_records_who_decided_and_carries_the_thread_on(waiting: list[str]) -> None:
    code, out, err = lc("approve", *waiting, "call_0_0", "--by", "grace")
    assert code == 0, err
    assert "thread t: call call_0_0 approved by grace" in out and "all done" in out
    assert at.RUNS == [("pay", {"amount": 5})]
    (state,) = ok_json("state", *waiting, "--json")
    assert state["status"] == "waiting_user"
    audit = ok_json("audit", *waiting, "--json")
    decided = [line for line in audit if line["kind"] == "ApprovalDecided"]
    assert [(d["summary"], d["sender"]) for d in decided] == [("call_0_0 approved by grace", "client/approval")]
    assert [line["summary"] for line in audit if line["kind"] == "ApprovalRequested"] == [
        'approval requested: pay call_0_0 {"amount": 5}']


def test_approve_with_edited_arguments_runs_them_and_by_defaults_to_the_user(waiting: list[str]) -> None:
    lines = ok_json("approve", *waiting, "call_0_0", "--arguments", '{"amount": 2}', "--json")
    assert lines[0] == {"thread": "t", "call_id": "call_0_0", "approved": True, "by": "ada",
                        "arguments": '{"amount":2}', "pending": []}
    results = [r for e in lines[1]["entries"] for r in e.get("results", ())]
    assert results[0]["content"].startswith('(ada approved this call with edited arguments: {"amount":2})')
    assert at.RUNS == [("pay", {"amount": 2})]


def test_deny_with_a_reason_never_runs_the_tool_and_the_model_reads_it(waiting: list[str]) -> None:
    lines = ok_json("deny", *waiting, "call_0_0", "--reason", "not this month", "--json")
    assert lines[0]["approved"] is False and lines[0]["reason"] == "not this month"
    (result,) = [r for e in lines[1]["entries"] for r in e.get("results", ())]
    assert result["status"] == "failed" and "ada did not approve" in result["content"]
    assert "not this month" in result["content"]
    assert at.RUNS == []
    audit = ok_json("audit", *waiting, "--json")
    assert [d["summary"] for d in audit if d["kind"] == "ApprovalDecided"] == ["call_0_0 denied by ada: not this month"]


def test_no_run_records_the_decision_and_leaves_the_thread_where_it_is(waiting: list[str]) -> None:
    code, out, err = lc("approve", *waiting, "call_0_0", "--no-run")
    assert code == 0, err
    assert out.strip() == "thread t: call call_0_0 approved by ada"
    assert at.RUNS == []
    (state,) = ok_json("state", *waiting, "--json")
    assert state["status"] == "active" and "approvals" not in state


def test_deciding_an_unknown_call_twice_or_with_bad_arguments_is_one_line(waiting: list[str]) -> None:
    code, out, err = lc("approve", *waiting, "c9")
    assert code == 1 and err.count("\n") == 1
    assert "has no pending approval for call id 'c9': the calls waiting are call_0_0" in err
    code, _, err = lc("approve", *waiting, "call_0_0", "--arguments", "{amount: 2}")
    assert code == 1 and err.count("\n") == 1 and "edited arguments are not JSON" in err
    code, _, err = lc("approve", *waiting, "call_0_0", "--arguments", "[2]")
    assert code == 1 and err.count("\n") == 1 and "must be a JSON object" in err
    assert lc("deny", *waiting, "call_0_0", "--no-run")[0] == 0
    code, _, err = lc("approve", *waiting, "call_0_0")
    assert code == 1 and err.count("\n") == 1 and "call_0_0 of thread t is already denied (by ada)" in err
    assert at.RUNS == []


def test_a_missing_thread_flag_or_thread_is_refused(tmp_path: Path, waiting: list[str]) -> None:
    code, _, err = lc("approve", "--store", f"sqlite:{tmp_path / 'db'}", "call_0_0")
    assert code == 2 and "Missing option '--thread'" in err
    code, _, err = lc("deny", "--store", f"sqlite:{tmp_path / 'db'}", "--thread", "nope", "call_0_0")
    assert code == 1 and err.count("\n") == 1 and "thread 'nope' does not exist" in err


def test_chat_asks_per_call_re_asks_bad_json_and_runs_the_turn_on(tmp_path: Path) -> None:
    log = tmp_path / "runs"
    where = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    model = script(tmp_path, pays(1, 2, 3), {"text": "paid what I may"})
    assert lc("run", *where, "--model", model, *TOOL, "--input", "pay")[0] == 0  # (chat takes no --tool)
    lines = "y\ne\n{not json\n{\"amount\": 20}\nn\ntoo much\n"
    done = subprocess.run([*LIVECONTEXT, "chat", *where],
                          input=lines, capture_output=True, text=True, timeout=60,
                          env={**cli_env(), "APPROVAL_LOG": str(log), "USER": "ada", "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert 'approve pay({"amount": 1})? [y]es / [n]o / [e]dit:' in out
    assert 'approve pay({"amount": 3})? [y]es / [n]o / [e]dit:' in out
    assert out.count("arguments of pay (a JSON object):") == 2 and "type them again" in out
    assert "paid what I may" in out
    assert at.runs_in(str(log)) == ['pay {"amount": 1}', 'pay {"amount": 20}']
    audit = ok_json("audit", *where, "--json")
    assert [d["summary"] for d in audit if d["kind"] == "ApprovalDecided"] == [
        "call_0_0 approved by ada", 'call_0_1 approved by ada with arguments {"amount":20}',
        "call_0_2 denied by ada: too much"]


def test_a_system_agents_call_is_not_decided_from_the_command_line_but_said_where_to(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'db'}"
    script = tmp_path / "boss.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "send_message", "arguments": {"to": "aide", "text": "hi"}}]}]}), encoding="utf-8")
    (tmp_path / "team.toml").write_text(
        f'system = "team"\n\n[[agents]]\nname = "boss"\nmodel = "scripted:{script}"\napproval = ["send_message"]\n'
        'inputs = ["greet the aide"]\n\n[[agents]]\nname = "aide"\n', encoding="utf-8")
    code, _, err = lc("run", str(tmp_path / "team.toml"), "--store", store)
    assert code == 0, err
    code, _, err = lc("approve", "--store", store, "--thread", "team.boss", "call_0_0")
    assert code == 1 and err.count("\n") == 1
    assert "thread team.boss is an agent of a system" in err and "System.approve" in err

"""An approval survives a crash: a thread waiting for a person's approval, its process killed
with SIGKILL while it waits, is still waiting after the restart (and through a snapshot), and
the call approved then runs once."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from livecontext.actors.history import load_state, write_snapshot
from livecontext.protocol.history import TaskStatus, ToolCall
from livecontext.protocol.wire import make_converter
from livecontext.runtime.persistence import open_store
from tests.support.approval_tools import runs_in
from tests.support.command import LIVECONTEXT, read_thread, run_cli, run_or_kill, write_script

PAY = {"text": "", "tool_calls": [{"name": "pay", "arguments": {"amount": 5}}]}
TOOL = ["--tool", "tests.support.approval_tools:pay"]


async def _snapshot_at_the_end(url: str) -> None:
    """Write a snapshot of the thread's whole state, so that reopening replays nothing."""
    converter = make_converter()
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="tests") as log:
            await write_snapshot(log, converter, await load_state(log, converter, "t"))


async def test_an_approval_survives_a_kill_while_waiting_and_is_decided_after_the_restart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "runs"
    store = f"sqlite:{tmp_path / 'db'}"
    script = write_script(tmp_path / "script.json", [PAY, {"text": "paid"}])
    where = ["--store", store, "--thread", "t"]
    monkeypatch.setenv("APPROVAL_LOG", str(log))  # (where the tool writes each run of it)

    ran = await run_cli("run", *where, "--model", f"scripted:{script}", *TOOL, "--input", "pay 5", "--json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["status"] == "waiting_approval"

    # a chat holds the thread, at the approval prompt, and is killed there

    async def at_the_prompt() -> bool:
        return b"approve pay(" in (tmp_path / "out").read_bytes()

    assert await run_or_kill([*LIVECONTEXT, "chat", *where], tmp_path, at_the_prompt, stdin=subprocess.PIPE) is None

    state = await read_thread(store, "t")
    assert state.status.status is TaskStatus.WAITING_APPROVAL
    assert state.status.approvals == (ToolCall("call_0_0", "pay", '{"amount": 5}'),)
    assert runs_in(str(log)) == []

    # run again (no decision yet): it stays waiting, and nothing is run
    again = await run_cli("run", *where, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "waiting_approval"

    approved = await run_cli("approve", *where, "call_0_0", "--by", "ada", "--json")
    assert approved.returncode == 0, approved.stderr
    decided, summary = [json.loads(line) for line in approved.stdout.splitlines()]
    assert decided["approved"] and decided["by"] == "ada"
    assert summary["status"] == "waiting_user"
    assert runs_in(str(log)) == ['pay {"amount": 5}']


async def test_a_request_and_its_decision_survive_snapshots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "runs"
    store = f"sqlite:{tmp_path / 'db'}"
    script = write_script(tmp_path / "script.json", [PAY, {"text": "paid"}])
    where = ["--store", store, "--thread", "t"]
    monkeypatch.setenv("APPROVAL_LOG", str(log))
    assert (await run_cli("run", *where, "--model", f"scripted:{script}", *TOOL, "--input", "pay 5")).returncode == 0
    await _snapshot_at_the_end(store)
    assert (await read_thread(store, "t")).status.status is TaskStatus.WAITING_APPROVAL
    decided = await run_cli("approve", *where, "call_0_0", "--arguments", '{"amount": 3}', "--no-run")
    assert decided.returncode == 0, decided.stderr
    await _snapshot_at_the_end(store)
    (approval,) = (await read_thread(store, "t")).task.approvals
    assert approval.decided is not None and approval.decided.arguments == '{"amount":3}'
    done = await run_cli("run", *where, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "waiting_user"
    assert runs_in(str(log)) == ['pay {"amount": 3}']

"""A trace shows a thread's approvals: the engine's request and each person's decision, as asks
to the history store from their senders."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from livecontext.actors.cli import main


def lc(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), env={"LIVECONTEXT_STORE": None, "USER": "ada"})
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_the_request_and_the_decisions_are_messages_of_the_trace(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "pay", "arguments": {"amount": 1}}, {"name": "pay", "arguments": {"amount": 2}}]},
        {"text": "done"}]}))
    where = ["--store", f"sqlite:{tmp_path / 'db'}", "--thread", "t"]
    lc("run", *where, "--model", f"scripted:{script}", "--tool", "tests.support.approval_tools:pay", "--input", "pay")
    lc("approve", *where, "call_0_0", "--no-run")
    lc("deny", *where, "call_0_1", "--reason", "once is enough")
    lc("trace", *where, "--format", "json", "-o", str(tmp_path / "trace.json"))
    text = (tmp_path / "trace.json").read_text()
    said = json.dumps(json.loads(text))
    assert '"RecordApprovalRequest"' in said and "approval of pay call_0_0, pay call_0_1" in said
    assert said.count('"DecideApproval"') == 2
    assert "call_0_0 approved by ada" in said and "call_0_1 denied by ada: once is enough" in said

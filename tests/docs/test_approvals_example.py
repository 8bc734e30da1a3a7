"""examples/approvals.toml does what its opening comment says, run command by command as a
user would (from the repository's root, each a process of its own)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

from livecontext import idempotency_key

from tests.support.command import LIVECONTEXT, cli_env

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "approvals.toml"


def commands() -> list[list[str]]:
    """The commands the example's opening comment gives, each as its words."""
    return [shlex.split(m.group(1)) for m in re.finditer(r"^#\s+livecontext (.+)$", EXAMPLE.read_text(), re.MULTILINE)]


def livecontext(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LIVECONTEXT, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_approvals_example_pays_once_what_a_person_approved_and_tells_the_model_what_was_denied(
        tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'pay.db'}"
    ledger = tmp_path / "ledger.jsonl"
    env = {**cli_env(), "PAYMENTS_LEDGER": str(ledger), "OPENAI_API_KEY": "", "COLUMNS": "200"}
    run, deny, approve = [[store if word == "sqlite:/tmp/pay.db" else word for word in c] for c in commands()]
    assert [run[0], deny[0], approve[0]] == ["run", "deny", "approve"]

    stopped = livecontext(run, env)
    assert stopped.returncode == 0, stopped.stderr
    assert "waiting_approval" in stopped.stdout
    assert "waits for a person's approval: pay_invoice call call_1_0, pay_invoice call call_1_1" in stopped.stdout
    assert "call_1_0 waits for approval" in stopped.stdout and "call_1_1 waits for approval" in stopped.stdout
    assert not ledger.exists()  # nothing paid before a person decided

    denied = livecontext(deny, env)
    assert denied.returncode == 0, denied.stderr
    assert not ledger.exists()  # the first call still waits: the run stops there again

    approved = livecontext(approve, env)
    assert approved.returncode == 0, approved.stderr
    paid = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert [(p["invoice"], p["amount"]) for p in paid] == [("A-17", 100)]  # once, with the edited amount

    state = json.loads(livecontext(["state", "--store", store, "--thread", "invoices", "--json"], env).stdout)
    assert state["status"] == "completed"
    history = json.loads(livecontext(["history", "--store", store, "--thread", "invoices", "--json"], env).stdout)
    results = {r["call_id"]: r for e in history["entries"] if e["kind"] == "tool_results" for r in e["results"]}
    assert results["call_1_1"]["status"] == "failed" and "B-4 is disputed" in results["call_1_1"]["content"]
    assert results["call_1_0"]["content"].startswith("(user approved this call with edited arguments")
    assert paid[0]["key"] == idempotency_key("invoices", "e4", "call_1_0")  # the call's key, for its check
